"""Folding the oldest turns into a rolling summary, with the summary model.

Incremental: the previous summary plus the newly folded turns. Every
``memory.summary_rebuild_every`` compactions the summary is rebuilt from the raw messages it
covers, so facts don't drift away through summaries of summaries. A summary is stored only
when the call succeeded, in one row that records which turns it covers; a failure changes
nothing and is retried later.

Important messages (:mod:`.importance`, 📌) are listed to the model as must-keep; when its
summary lacks the numbers and dates of one (or most of its words, for one without), the
message is appended verbatim under "Kept verbatim:", within the summary's size cap (15% of
the budget), and carried forward by later compactions the same way; the model's own text is
cut to make room for those lines, its narrative first.

The summary model may also propose durable facts about the people who spoke, as
``PROFILE <name>: <fact>`` lines. They are taken out of the summary and stored in that person's
profile as inferred; a line that doesn't parse or names nobody in the folded messages is
ignored. Someone who deleted from their profile gets inferred facts again only from messages
they write afterwards.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.config import Strategy
from bot.core.cost import Meter
from bot.core.memory.calibration import Calibrator, Gauge
from bot.core.memory.digest import write_digest
from bot.core.memory.kept import keep_verbatim, transcript_line
from bot.core.memory.proposals import authors, split_profiles
from bot.core.memory.tokens import MESSAGE_OVERHEAD, ChatTokenizer
from bot.core.models import (
    Conversation,
    FactSource,
    Person,
    StoredMessage,
    Summary,
    indent_headings,
)
from bot.core.ports.llm import ChatModel, ChatModels, Failure, LLMError
from bot.core.ports.store import NewSummary, Store
from bot.core.settings import Settings

log = logging.getLogger(__name__)

SUMMARY_INSTRUCTIONS = """\
You maintain the long-term memory of a group chat. Several people talk in it; each line \
starts with who wrote it. Update the summary with the new messages.

Write two sections:
Facts:
- one line per durable fact: names and who is who, numbers, dates, amounts, decisions, \
preferences, commitments and open tasks (with who owns them). Copy every fact from the \
previous summary forward verbatim unless a new message changes or cancels it; copy numbers, \
names and identifiers exactly as written.
Narrative:
A few sentences on what was discussed, in order, attributing points to people.

Messages listed under "Important messages" must be kept: copy their facts (numbers, dates, \
names, decisions) into Facts exactly as written.

Optionally, a last section:
Profiles:
PROFILE <name exactly as written before the colon in the messages>: one durable fact about \
that person (role, time zone, preferences, how to address them) that they stated or that \
was clearly stated about them. One line per fact; leave the section out when there is \
nothing new.

Write in the language the conversation mostly uses. Do not invent anything. Do not answer \
questions from the chat; only summarize."""
_MAX_FACTS_PER_PERSON = 5
"""Inferred facts taken per person from one compaction."""

_FETCH = 1000
_CONTEXT_RETRIES = 3
"""Smaller tries after the summary model's context overflowed, within one compaction."""
_SMALLEST_INPUT = 128
"""Below this many tokens of input a call is not worth making: the model's context cannot
hold a summary at all."""
SUMMARY_SHARE = 0.15
"""A summary may take at most this share of the prompt budget (and llm.summary_max_tokens):
recalled messages hold more of what is asked for per token than a summary's gist."""
_PREVIOUS = "Previous summary:"
_NEW = "New messages:"
_IMPORTANT = "Important messages (keep their facts exactly):"
_SECTIONS = re.compile(
    "|".join(
        [*(re.escape(h) for h in (_PREVIOUS, _NEW, _IMPORTANT)), r"\[\d{4}-\d\d-\d\d \d\d:\d\d\] "]
    )
)
"""The lines that open a section of the transcript, or speak in it."""


@dataclass(frozen=True)
class _Fold:
    rows: list[StoredMessage]
    through_turn: int


@dataclass(frozen=True)
class _Limits:
    """The sizes one compaction works within."""

    summary: int
    """The most tokens the summary may take."""
    input_tokens: int
    """The most tokens of messages one call to the summary model reads."""


@dataclass
class _Written:
    """What one summary call produced: the summary, and the profile facts it proposed
    (author id, fact)."""

    content: str
    proposals: list[tuple[str, str]] = field(default_factory=list)


def _group_turns(rows: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    turns: dict[int, list[StoredMessage]] = {}
    for row in rows:
        turns.setdefault(row.turn_id, []).append(row)
    return [turns[key] for key in sorted(turns)]


def _cost(rows: Sequence[StoredMessage]) -> int:
    return sum(row.tokens + MESSAGE_OVERHEAD for row in rows)


def _input_cost(rows: Sequence[StoredMessage]) -> int:
    """What rows take of a summary call's input: important ones are listed twice."""
    return sum((row.tokens + MESSAGE_OVERHEAD) * (2 if row.important else 1) for row in rows)


class Summarizer:
    """Summaries and digests, each asked of the summary model the conversation's settings
    name."""

    def __init__(
        self,
        *,
        store: Store,
        models: ChatModels,
        tokenizer: ChatTokenizer,
        calibrator: Calibrator | None = None,
        meter: Meter | None = None,
    ) -> None:
        """``meter``: records each call with its cost (the engine's)."""
        self._store = store
        self._meter = meter or Meter(ledger=store)
        self._models = models
        self._tokenizer = tokenizer
        self._calibrator = calibrator
        self._context: dict[str, int] = {}
        """Each summary model's context window in the server's tokens, once an error said."""

    def _gauge(self, model: str) -> Gauge | None:
        calibrator = self._calibrator
        return calibrator.gauge(model, self._tokenizer.count) if calibrator else None

    async def compact(
        self,
        conversation: Conversation,
        *,
        settings: Settings,
        budget: int,
        before_turn: int | None = None,
    ) -> Summary | None:
        """Fold the oldest turns that should leave the window under ``settings``; None if
        nothing to fold.

        Turns from ``before_turn`` on are never folded: their messages still await an answer.

        Raises :class:`LLMError` when the summary model fails; nothing is changed then.
        """
        key = conversation.key
        generation = await self._store.generation(conversation_key=key)
        previous = await self._store.latest_summary(conversation_key=key)
        options = settings.summary
        summary_tokens = min(options.max_tokens, max(64, int(budget * SUMMARY_SHARE)))
        compactions = (previous.compactions if previous else 0) + 1
        every = options.rebuild_every
        rebuild = previous is not None and every > 0 and compactions % every == 0
        model = self._models.get(settings.summary_model)
        cap = self._input_cap(model.model, options.max_input_tokens, summary_tokens)
        limits = _Limits(summary_tokens, cap)
        for attempt in range(_CONTEXT_RETRIES + 1):
            fold = await self._select(key, previous, settings, budget, before_turn, limits)
            if fold is None:
                return None
            try:
                if rebuild:
                    written, folded_count, first_id = await self._rebuild(
                        model, key, fold.through_turn, limits
                    )
                else:
                    written = await self._summarize(
                        model, key, previous.content if previous else None, fold.rows, limits
                    )
                    folded_count = (previous.message_count if previous else 0) + len(fold.rows)
                    first_id = previous.first_message_id if previous else fold.rows[0].id
                break
            except LLMError as exc:
                last = attempt == _CONTEXT_RETRIES
                if (smaller := await self._smaller(model.model, exc, limits, last=last)) is None:
                    raise
                log.warning(
                    "%s's summary overflowed %s's context; folding at most %d tokens a call",
                    key,
                    model.model,
                    smaller.input_tokens,
                )
                limits = smaller
        else:  # pragma: no cover - the last attempt either breaks or raises
            raise AssertionError("unreachable")
        last_id = max(row.id for row in fold.rows)
        if previous is not None:
            last_id = max(last_id, previous.last_message_id)
        content = written.content
        saved = await self._store.save_summary(
            summary=NewSummary(
                conversation_key=key,
                content=content,
                tokens=self._tokenizer.count(content),
                covers_through_turn=fold.through_turn,
                message_count=folded_count,
                first_message_id=first_id,
                last_message_id=last_id,
                compactions=compactions,
                rebuilt=rebuild,
                model=model.model,
            ),
            generation=generation,
            previous_id=previous.id if previous else None,
        )
        if saved is None:
            log.info("summary for %s discarded: the conversation changed meanwhile", key)
        elif written.proposals:
            await self._store_proposals(conversation, written.proposals, fold.rows)
        return saved

    async def digest(
        self,
        conversation: Conversation,
        messages: list[StoredMessage],
        *,
        settings: Settings,
        person: str = "",
    ) -> tuple[str, int]:
        """A digest of ``messages`` for ``person`` catching up (``/summarize since``), kept
        nowhere; with how many of the newest it read (those that fit one call)."""
        options = settings.summary
        model = self._models.get(settings.summary_model)
        text, read, completion, counted = await write_digest(
            messages,
            model=model,
            tokenizer=self._tokenizer,
            input_limit=self._input_cap(model.model, options.max_input_tokens, options.max_tokens),
            max_tokens=options.max_tokens,
        )
        await self._meter.record(
            conversation=conversation,
            person=person,
            purpose="digest",
            model=model.model,
            prompt_tokens=completion.prompt_tokens,
            cached_tokens=completion.cached_tokens,
            completion_tokens=completion.completion_tokens,
            counted=(counted, self._tokenizer.count(text)),
        )
        return text, read

    def _input_cap(self, model: str, configured: int, summary_tokens: int) -> int:
        """The most tokens of messages (in the bot's count) one summary call to ``model``
        reads: the configured cap, scaled by what the server counts against the bot (for the
        mix of scripts of the model's latest prompt), and within the model's context once
        known, beside the instructions, a previous summary and the answer. A summary call
        that overflows the context is retried smaller (:meth:`_smaller`)."""
        gauge = self._gauge(model)
        if gauge is None:
            return configured
        cap = gauge.budget(configured)
        if (context := self._context.get(model)) is not None:
            fixed = self._tokenizer.count(SUMMARY_INSTRUCTIONS) + 2 * summary_tokens + 64
            room = gauge.budget(context) - fixed
            cap = min(cap, room)
        return max(cap, _SMALLEST_INPUT)

    async def _smaller(
        self, model: str, exc: LLMError, limits: _Limits, *, last: bool
    ) -> _Limits | None:
        """Limits for another try after the model's context overflowed (learning its size
        when the error says it, and keeping it for ``bot doctor``), or None when there is no
        smaller try to make (``last``: no try is left)."""
        if exc.context is not None:
            self._context[model] = exc.context
            if self._calibrator is not None:
                await self._calibrator.learn_window(model, exc.context)
        if exc.failure is not Failure.CONTEXT_LENGTH or last:
            return None
        learned = self._input_cap(model, limits.input_tokens, limits.summary)
        smaller = learned if learned < limits.input_tokens else limits.input_tokens // 2
        if smaller < _SMALLEST_INPUT:
            return None
        return _Limits(limits.summary, smaller)

    async def _store_proposals(
        self,
        conversation: Conversation,
        proposals: Sequence[tuple[str, str]],
        rows: Sequence[StoredMessage],
    ) -> None:
        """Inferred facts into the profiles of the people they name, without repeats."""
        taken: dict[str, int] = {}
        for author_id, fact in proposals:
            if taken.get(author_id, 0) >= _MAX_FACTS_PER_PERSON:
                continue
            person = Person.of(conversation, author_id)
            forgot_at = await self._store.profile_forgot_at(person=person)
            if forgot_at is not None and not any(
                row.author_id == author_id and row.created_at > forgot_at for row in rows
            ):
                continue  # they deleted from their profile since these messages were written
            known = {f.text.casefold() for f in await self._store.profile_facts(person=person)}
            if fact.casefold() in known:
                continue
            await self._store.add_profile_fact(
                person=person,
                text=fact,
                tokens=self._tokenizer.count(fact),
                source=FactSource.SUMMARY,
            )
            taken[author_id] = taken.get(author_id, 0) + 1

    async def _select(
        self,
        key: str,
        previous: Summary | None,
        settings: Settings,
        budget: int,
        before_turn: int | None,
        limits: _Limits,
    ) -> _Fold | None:
        after = previous.covers_through_turn if previous else 0
        rows = await self._store.messages_after_turn(
            conversation_key=key, after_turn=after, limit=_FETCH
        )
        turns = _group_turns(rows)
        keep = settings.keep_recent_turns
        if len(turns) <= keep:
            return None
        foldable = [
            turn for turn in turns[:-keep] if before_turn is None or turn[0].turn_id < before_turn
        ]
        if not foldable:
            return None
        if settings.strategy is Strategy.HYBRID:
            target = int(budget * settings.summary.target)
            remaining = sum(_cost(turn) for turn in turns)
            chosen: list[list[StoredMessage]] = []
            for turn in foldable:
                if remaining <= target and chosen:
                    break
                chosen.append(turn)
                remaining -= _cost(turn)
            foldable = chosen
        # One call's worth of input at most; the rest is folded on the next compaction.
        limit = limits.input_tokens
        selected: list[list[StoredMessage]] = []
        used = 0
        for turn in foldable:
            cost = min(_input_cost(turn), limit)
            if selected and used + cost > limit:
                break
            selected.append(turn)
            used += cost
        rows_out = sorted((row for turn in selected for row in turn), key=lambda r: r.id)
        return _Fold(rows=rows_out, through_turn=selected[-1][0].turn_id)

    async def _rebuild(
        self, model: ChatModel, key: str, through_turn: int, limits: _Limits
    ) -> tuple[_Written, int, int]:
        """Summarize every message the summary covers from scratch, chunk by chunk."""
        content: str | None = None
        proposals: list[tuple[str, str]] = []
        count = 0
        first_id = 0
        after_id = 0
        chunk: list[StoredMessage] = []
        used = 0
        input_limit = limits.input_tokens
        while True:
            rows = await self._store.messages_through_turn(
                conversation_key=key, through_turn=through_turn, after_id=after_id, limit=_FETCH
            )
            for row in rows:
                first_id = first_id or row.id
                cost = min(_input_cost([row]), input_limit)
                if chunk and used + cost > input_limit:
                    written = await self._summarize(model, key, content, chunk, limits)
                    content = written.content
                    proposals.extend(written.proposals)
                    chunk, used = [], 0
                chunk.append(row)
                used += cost
                count += 1
            if len(rows) < _FETCH:
                break
            after_id = rows[-1].id
        if chunk or content is None:
            written = await self._summarize(model, key, content, chunk, limits)
            content = written.content
            proposals.extend(written.proposals)
        return _Written(content, proposals), count, first_id

    async def _summarize(
        self,
        model: ChatModel,
        key: str,
        previous: str | None,
        rows: Sequence[StoredMessage],
        limits: _Limits,
    ) -> _Written:
        """One call to the summary model; its answer may take at most ``limits.summary``."""
        summary_tokens, input_limit = limits.summary, limits.input_tokens
        lines = [transcript_line(row, input_limit) for row in rows]
        important = [row for row in rows if row.important]
        shown = indent_headings(previous, _SECTIONS) if previous else "(none)"
        parts = [f"{_PREVIOUS}\n{shown}" if previous else f"{_PREVIOUS} {shown}"]
        parts.append(f"{_NEW}\n" + "\n".join(lines))
        if important:
            listed = "\n".join(transcript_line(row, input_limit) for row in important)
            parts.append(f"{_IMPORTANT}\n{listed}")
        messages = [
            {"role": "system", "content": SUMMARY_INSTRUCTIONS},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
        completion = await model.complete(messages, max_tokens=summary_tokens)
        if (gauge := self._gauge(model.model)) is not None:
            ours = self._tokenizer.count_messages(messages)
            await gauge.observe(messages, ours, completion.prompt_tokens)
        await self._meter.record(
            conversation=Conversation.from_key(key),
            person="",
            purpose="summary",
            model=model.model,
            prompt_tokens=completion.prompt_tokens,
            cached_tokens=completion.cached_tokens,
            completion_tokens=completion.completion_tokens,
            counted=(
                self._tokenizer.count_messages(messages),
                self._tokenizer.count(completion.text),
            ),
        )
        text, named = split_profiles(completion.text)
        text = keep_verbatim(
            text, previous, important, limits.summary, limits.input_tokens, self._tokenizer
        )
        return _Written(text, authors(named, rows))
