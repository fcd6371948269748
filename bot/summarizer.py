"""Folding the oldest turns into a rolling summary, with the summary model.

Incremental: the previous summary plus the newly folded turns. Every
``memory.summary_rebuild_every`` compactions the summary is rebuilt from the raw messages it
covers, so facts don't drift away through summaries of summaries. A summary is stored only
when the call succeeded, in one row that records which turns it covers; a failure changes
nothing and is retried later.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import MemoryConfig, Strategy
from bot.llm import ChatModel, Failure, LLMError
from bot.models import Conversation, Role, StoredMessage, Summary
from bot.store.base import NewSummary, Store
from bot.tokens import MESSAGE_OVERHEAD, ChatTokenizer

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

Write in the language the conversation mostly uses. Do not invent anything. Do not answer \
questions from the chat; only summarize."""

_FETCH = 1000
SUMMARY_SHARE = 0.25
"""A summary may take at most this share of the prompt budget."""
_OVERSHOOT = 1.2
_TRUNCATE_NOTE = "… [truncated for the summary]"


@dataclass(frozen=True)
class _Fold:
    rows: list[StoredMessage]
    through_turn: int


def _group_turns(rows: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    turns: dict[int, list[StoredMessage]] = {}
    for row in rows:
        turns.setdefault(row.turn_id, []).append(row)
    return [turns[key] for key in sorted(turns)]


def _cost(rows: Sequence[StoredMessage]) -> int:
    return sum(row.tokens + MESSAGE_OVERHEAD for row in rows)


class Summarizer:
    def __init__(
        self,
        *,
        store: Store,
        model: ChatModel,
        tokenizer: ChatTokenizer,
        memory: MemoryConfig,
        max_tokens: int,
    ) -> None:
        self._store = store
        self._model = model
        self._tokenizer = tokenizer
        self._memory = memory
        self._max_tokens = max_tokens

    @property
    def model(self) -> str:
        return self._model.model

    async def compact(
        self, conversation: Conversation, *, budget: int, before_turn: int | None = None
    ) -> Summary | None:
        """Fold the oldest turns that should leave the window; None if nothing to fold.

        Turns from ``before_turn`` on are never folded: their messages still await an answer.

        Raises :class:`bot.llm.LLMError` when the summary model fails; nothing is changed then.
        """
        key = conversation.key
        generation = await self._store.generation(conversation_key=key)
        previous = await self._store.latest_summary(conversation_key=key)
        fold = await self._select(key, previous, budget, before_turn)
        if fold is None:
            return None
        summary_tokens = min(self._max_tokens, max(64, int(budget * SUMMARY_SHARE)))
        compactions = (previous.compactions if previous else 0) + 1
        every = self._memory.summary_rebuild_every
        rebuild = previous is not None and every > 0 and compactions % every == 0
        if rebuild:
            content, folded_count, first_id = await self._rebuild(
                key, fold.through_turn, summary_tokens
            )
        else:
            content = await self._summarize(
                key, previous.content if previous else None, fold.rows, summary_tokens
            )
            folded_count = (previous.message_count if previous else 0) + len(fold.rows)
            first_id = previous.first_message_id if previous else fold.rows[0].id
        last_id = max(row.id for row in fold.rows)
        if previous is not None:
            last_id = max(last_id, previous.last_message_id)
        saved = await self._store.save_summary(
            NewSummary(
                conversation_key=key,
                content=content,
                tokens=self._tokenizer.count(content),
                covers_through_turn=fold.through_turn,
                message_count=folded_count,
                first_message_id=first_id,
                last_message_id=last_id,
                compactions=compactions,
                rebuilt=rebuild,
                model=self._model.model,
            ),
            generation=generation,
            previous_id=previous.id if previous else None,
        )
        if saved is None:
            log.info("summary for %s discarded: the conversation changed meanwhile", key)
        return saved

    async def _select(
        self, key: str, previous: Summary | None, budget: int, before_turn: int | None
    ) -> _Fold | None:
        after = previous.covers_through_turn if previous else 0
        rows = await self._store.messages_after_turn(
            conversation_key=key, after_turn=after, limit=_FETCH
        )
        turns = _group_turns(rows)
        keep = self._memory.keep_recent_turns
        if len(turns) <= keep:
            return None
        foldable = [
            turn for turn in turns[:-keep] if before_turn is None or turn[0].turn_id < before_turn
        ]
        if not foldable:
            return None
        if self._memory.strategy is Strategy.HYBRID:
            target = int(budget * self._memory.summary_target)
            remaining = sum(_cost(turn) for turn in turns)
            chosen: list[list[StoredMessage]] = []
            for turn in foldable:
                if remaining <= target and chosen:
                    break
                chosen.append(turn)
                remaining -= _cost(turn)
            foldable = chosen
        # One call's worth of input at most; the rest is folded on the next compaction.
        limit = self._memory.summary_max_input_tokens
        selected: list[list[StoredMessage]] = []
        used = 0
        for turn in foldable:
            cost = min(_cost(turn), limit)
            if selected and used + cost > limit:
                break
            selected.append(turn)
            used += cost
        rows_out = sorted((row for turn in selected for row in turn), key=lambda r: r.id)
        return _Fold(rows=rows_out, through_turn=selected[-1][0].turn_id)

    async def _rebuild(
        self, key: str, through_turn: int, summary_tokens: int
    ) -> tuple[str, int, int]:
        """Summarize every message the summary covers from scratch, chunk by chunk."""
        content: str | None = None
        count = 0
        first_id = 0
        after_id = 0
        chunk: list[StoredMessage] = []
        used = 0
        input_limit = self._memory.summary_max_input_tokens
        while True:
            rows = await self._store.messages_through_turn(
                conversation_key=key, through_turn=through_turn, after_id=after_id, limit=_FETCH
            )
            for row in rows:
                first_id = first_id or row.id
                cost = min(row.tokens + MESSAGE_OVERHEAD, input_limit)
                if chunk and used + cost > input_limit:
                    content = await self._summarize(key, content, chunk, summary_tokens)
                    chunk, used = [], 0
                chunk.append(row)
                used += cost
                count += 1
            if len(rows) < _FETCH:
                break
            after_id = rows[-1].id
        if chunk or content is None:
            content = await self._summarize(key, content, chunk, summary_tokens)
        return content, count, first_id

    async def _summarize(
        self,
        key: str,
        previous: str | None,
        rows: Sequence[StoredMessage],
        summary_tokens: int,
    ) -> str:
        """One call to the summary model; its answer may take at most ``summary_tokens``."""
        input_limit = self._memory.summary_max_input_tokens
        lines = []
        for row in rows:
            when = time.strftime("%Y-%m-%d %H:%M", time.gmtime(row.created_at))
            who = row.author_name if row.role is Role.USER else "assistant (you)"
            text = row.content
            if row.tokens > input_limit:
                text = text[: input_limit * 2] + _TRUNCATE_NOTE
            lines.append(f"[{when}] {who}: {text}")
        parts = [f"Previous summary:\n{previous}" if previous else "Previous summary: (none)"]
        parts.append("New messages:\n" + "\n".join(lines))
        messages = [
            {"role": "system", "content": SUMMARY_INSTRUCTIONS},
            {"role": "user", "content": "\n\n".join(parts)},
        ]
        completion = await self._model.complete(messages, max_tokens=summary_tokens)
        await self._store.record_usage(
            conversation_key=key,
            model=completion.model,
            purpose="summary",
            prompt_tokens=completion.prompt_tokens or 0,
            completion_tokens=completion.completion_tokens or 0,
        )
        tokens = self._tokenizer.count(completion.text)
        if tokens > summary_tokens * _OVERSHOOT:
            # Storing it would crowd the conversation out of every prompt; keep the old one.
            raise LLMError(
                Failure.BAD_RESPONSE, f"summary of {tokens} tokens exceeds its {summary_tokens}"
            )
        return completion.text
