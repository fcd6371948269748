"""Building each prompt under the token budget.

Layout, in this order: one system message holding the system prompt, the pinned facts, the
profile of the person speaking and the rolling summary (durable facts first, against "lost in
the middle"); then, when recall is on and finds something, a second system message with
earlier messages that may be relevant (:mod:`..memory.recall`); then as many recent turns as fit,
oldest first; the current message last. Whole turns are kept or evicted, never half of one.
When turns must be left out, important ones (:mod:`..memory.importance`, or marked with 📌) are
kept longer than small talk: older important turns take the place of the oldest unimportant
ones, outside the newest ``memory.keep_recent_turns``. Stored messages are never deleted here:
the prompt is a view.

Recall searches first, with the message being answered as the query, and holds back what its
best matches would take (at most ``memory.recall_tokens``) while the recent turns are fitted;
then it shows the matches older than the turns that fitted, so nothing appears twice. When
matches fell inside the window and what recall held back would now fit the turn it kept out,
the turns are fitted again with only what recall used (stopping before a recalled turn).
Important turns are given their place last, in the room recall left, and only those newer
than every recalled message: what recall shows stays older than the whole window.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate, chain

from bot.config import MemoryConfig, Strategy
from bot.core.memory.recall import NOTHING, RECALL_HEADING, Recaller
from bot.core.memory.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, ChatTokenizer
from bot.core.models import (
    FactSource,
    Person,
    Pin,
    ProfileFact,
    Role,
    StoredMessage,
    Summary,
    clean_name,
    indent_headings,
    quote_lines,
)
from bot.core.ports.store import Store, TurnCost
from bot.core.wording import counted

PINS_HEADING = "Facts the people in this channel asked you to keep (pinned; numbered by pin id):"
SUMMARY_HEADING = "Summary of the earlier conversation in this channel:"
_FIRST_PAGE, _MAX_PAGE = 32, 512  # turns asked for at a time
_QUERY_LOOKBACK = 50  # /stats: the newest user message among this many is recall's query
_WINDOW_STARTS = 10_000  # conversations whose per-conversation figures are remembered
PROFILE_SHARE = 0.1
"""A speaker's profile may take at most this share of the budget (and memory.profile_tokens)."""
_PROFILES_HELD = 4096  # fitted profile blocks kept
_HEADS_HELD = 1024  # prompts' first messages kept
_Profile = tuple[str, tuple[ProfileFact, ...]]  # a profile block and the facts it shows
IMPORTANT_LOOKBACK = 32
"""How many important turns older than the window are considered for a place in it."""


class PromptTooLarge(Exception):
    """What must be in the prompt does not fit the budget; the message says what to do."""


@dataclass(frozen=True)
class Speaker:
    """Who wrote the message being answered: whose profile the prompt shows."""

    person: Person
    name: str


LAYERS: tuple[str, ...] = ("system", "pins", "profile", "summary", "recall", "recent")
"""The layers a prompt is made of, in prompt order."""


@dataclass(frozen=True)
class Breakdown:
    """Tokens per layer (a layer absent from ``layers`` takes none); they add up to the
    prompt's tokens but for the reply priming."""

    layers: Mapping[str, int]

    def __getitem__(self, layer: str) -> int:
        return self.layers.get(layer, 0)

    def as_dict(self) -> dict[str, int]:
        return {layer: self[layer] for layer in LAYERS}


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    tokens: int
    """The whole prompt, counted the way the API counts it."""
    budget: int
    """The budget the prompt was fitted to (after calibration)."""
    breakdown: Breakdown
    window: Sequence[StoredMessage]
    summary: Summary | None
    pins: Sequence[Pin]
    turns_left_out: bool
    """Unsummarized turns were left out for lack of room."""
    recalled: Sequence[StoredMessage] = field(default=())
    """Earlier messages found by search, as shown (oldest first)."""
    profile: Sequence[ProfileFact] = ()
    """The speaker's facts shown in the prompt."""

    @property
    def fill(self) -> float:
        return self.tokens / self.budget if self.budget else 1.0

    @property
    def fill_without_recall(self) -> float:
        """The fill that decides on summaries: recall only takes room that is left."""
        return (self.tokens - self.breakdown["recall"]) / self.budget if self.budget else 1.0


@dataclass(frozen=True)
class _Fit:
    kept: tuple[TurnCost, ...]
    """The turns kept in the prompt, newest first."""
    tokens: int
    left_out: bool
    boundary: int | None = None
    """The newest turn left out for lack of room (or past the window, or recalled): it and
    older turns were not looked at."""
    next_cost: int | None = None
    """The cost of the turn the fit stopped at for lack of room (None: it did not)."""

    @cached_property
    def members(self) -> list[int]:
        """The kept turns' message ids, ascending (turns' messages may interleave)."""
        return sorted(chain.from_iterable(turn.ids for turn in self.kept))


def _cost(turn: TurnCost) -> int:
    """What a turn takes in the prompt: its messages and the chat format's overhead for each."""
    return turn.tokens + MESSAGE_OVERHEAD * len(turn.ids)


def _too_long(cost: int, room: int) -> PromptTooLarge:
    return PromptTooLarge(
        f"Your message is {cost - MESSAGE_OVERHEAD:,} tokens; with the system prompt and pins "
        f"only {room:,} fit in the budget. It is saved, but too long to send: please send a "
        "shorter excerpt."
    )


_OWN_HEADING = "What {name} (who is speaking now) asked you to remember about them:"
_INFERRED_HEADING = "Noted about {name} from earlier conversations (may be out of date):"
_SECTIONS = (PINS_HEADING, SUMMARY_HEADING, RECALL_HEADING, _OWN_HEADING, _INFERRED_HEADING)
_HEADINGS = re.compile("|".join(re.escape(h).replace(re.escape("{name}"), ".*") for h in _SECTIONS))
"""The lines that open a section of the prompt's first message."""


def render_pins(pins: Sequence[Pin]) -> str:
    lines = [PINS_HEADING]
    lines.extend(
        f"#{pin.id} ({clean_name(pin.author_name)}): {quote_lines(pin.text)}" for pin in pins
    )
    return "\n".join(lines)


def render_profile(name: str, facts: Sequence[ProfileFact]) -> str:
    name = clean_name(name)
    lines = []
    own = [fact for fact in facts if fact.source is FactSource.USER]
    inferred = [fact for fact in facts if fact.source is FactSource.SUMMARY]
    if own:
        lines.append(_OWN_HEADING.format(name=name))
        lines.extend(f"- {quote_lines(fact.text)}" for fact in own)
    if inferred:
        lines.append(_INFERRED_HEADING.format(name=name))
        lines.extend(f"- {quote_lines(fact.text)}" for fact in inferred)
    return "\n".join(lines)


def render_summary(summary: Summary) -> str:
    return f"{SUMMARY_HEADING}\n{indent_headings(summary.content, _HEADINGS)}"


def _remember(per_conversation: dict[str, int], conversation_key: str, value: int) -> None:
    """Set a per-conversation figure, forgetting them all once too many are held."""
    if len(per_conversation) >= _WINDOW_STARTS and conversation_key not in per_conversation:
        per_conversation.clear()
    per_conversation[conversation_key] = value


@dataclass(frozen=True)
class _Head:
    """A prompt's first message and what it and its parts take."""

    text: str
    tokens: int
    """The whole message, with the chat format's overhead."""
    pins: int
    profile: int
    summary: int


class _CountCache:
    """Counts of the few texts that repeat turn after turn (head, pins, summary blocks)."""

    def __init__(self, tokenizer: ChatTokenizer, size: int = 2048) -> None:
        self._tokenizer = tokenizer
        self._size = size
        self._counts: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        count = self._counts.get(text)
        if count is None:
            if len(self._counts) >= self._size:
                self._counts.pop(next(iter(self._counts)))
            count = self._counts[text] = self._tokenizer.count(text)
        return count


class _Rendered:
    """Recent messages as the chat completions API takes them, each row rendered once: the
    store hands the same row objects to prompt after prompt (its row cache), and a prompt
    holds a couple of hundred. The dicts are shared by the prompts that hold them: never
    changed (an edited message is a new row)."""

    def __init__(self, size: int = 8192) -> None:
        self._size = size
        self._held: dict[int, tuple[StoredMessage, dict[str, str]]] = {}

    def __call__(self, rows: Sequence[StoredMessage]) -> list[dict[str, str]]:
        held = self._held
        if len(held) + len(rows) > self._size:
            held.clear()
        rendered: list[dict[str, str]] = []
        for row in rows:
            hit = held.get(row.id)
            if hit is None or hit[0] is not row:
                hit = held[row.id] = (row, row.prompt_message())
            rendered.append(hit[1])
        return rendered


class Assembler:
    """Reads only the rows a prompt needs, however long the history."""

    def __init__(
        self,
        *,
        store: Store,
        tokenizer: ChatTokenizer,
        memory: MemoryConfig,
        system_prompt: str,
        recaller: Recaller | None = None,
    ) -> None:
        self._store = store
        self._memory = memory
        self._recaller = recaller if recaller is not None and recaller.enabled else None
        self._window_starts: dict[str, int] = {}
        """Per conversation, the first message id of the last prompt's recent turns."""
        self._whole: set[str] = set()
        """Conversations whose last prompt held every message (no summary, nothing left out)."""
        self._turns_read: dict[str, int] = {}
        """Per conversation, how many turns the last fit needed: the next one asks for about
        as many at once rather than in several requests."""
        self._system_prompt = system_prompt
        self._count = _CountCache(tokenizer)
        self._render = _Rendered()
        self._profiles: dict[tuple[str, tuple[ProfileFact, ...], int], _Profile] = {}
        """Fitted profile blocks by speaker name, facts and cap."""
        self._heads: dict[tuple[tuple[Pin, ...], str, Summary | None], _Head] = {}
        self.system_tokens = self._count(system_prompt)

    @property
    def uses_summary(self) -> bool:
        return self._memory.strategy in (Strategy.SUMMARY, Strategy.HYBRID)

    def head_text(self, pins: Sequence[Pin], summary: Summary | None, profile: str = "") -> str:
        """The prompt's first message: system prompt, pins, the speaker's profile, summary."""
        return self._head(pins, summary, profile).text

    def _head(self, pins: Sequence[Pin], summary: Summary | None, profile: str) -> _Head:
        # The same pins, profile and summary make the same head: built and counted once, not
        # on every prompt (the store hands out the same summary object while it is current).
        key = (tuple(pins), profile, summary)
        head = self._heads.get(key)
        if head is not None:
            return head
        parts = [self._system_prompt]
        pins_text = render_pins(pins) if pins else ""
        summary_text = render_summary(summary) if summary is not None else ""
        parts.extend(part for part in (pins_text, profile, summary_text) if part)
        text = "\n\n".join(parts)
        if len(self._heads) >= _HEADS_HELD:
            self._heads.clear()
        head = self._heads[key] = _Head(
            text=text,
            tokens=self._count(text) + MESSAGE_OVERHEAD,
            pins=self._count(pins_text) if pins_text else 0,
            profile=self._count(profile) if profile else 0,
            summary=self._count(summary_text) if summary_text else 0,
        )
        return head

    def profile_cap(self, budget: int) -> int:
        return min(self._memory.profile_tokens, int(budget * PROFILE_SHARE))

    def fit_profile(self, name: str, facts: Sequence[ProfileFact], budget: int) -> _Profile:
        """The speaker's profile block within its cap: their own facts in the order they set
        them, then inferred ones newest first, as many as fit."""
        cap = self.profile_cap(budget)
        # The same facts under the same cap fit the same way: fitted once, not every prompt.
        key = (name, tuple(facts), cap)
        fitted = self._profiles.get(key)
        if fitted is None:
            if len(self._profiles) >= _PROFILES_HELD:
                self._profiles.clear()
            fitted = self._profiles[key] = self._fit_profile(name, facts, cap)
        return fitted

    def _fit_profile(self, name: str, facts: Sequence[ProfileFact], cap: int) -> _Profile:
        ordered = [f for f in facts if f.source is FactSource.USER]
        ordered += sorted(
            (f for f in facts if f.source is FactSource.SUMMARY), key=lambda f: f.id, reverse=True
        )
        shown: list[ProfileFact] = []
        text = ""
        for fact in ordered:
            candidate = sorted([*shown, fact], key=lambda f: f.id)
            rendered = render_profile(name, candidate)
            if self._count(rendered) > cap:
                break
            shown, text = candidate, rendered
        return text, tuple(shown)

    async def build(
        self,
        *,
        conversation_key: str,
        channel_key: str,
        through_id: int | None,
        current_id: int | None,
        budget: int,
        query: StoredMessage | None = None,
        speaker: Speaker | None = None,
    ) -> Prompt:
        """Fit a prompt for the conversation up to message ``through_id`` into ``budget``.

        ``current_id`` names the message being answered: it must be in the prompt, last;
        ``query``, that message when the caller has it at hand (recall searches with it);
        ``speaker``, whose profile is shown. Raises :class:`PromptTooLarge` when the system
        prompt, pins, profile and that message alone exceed the budget.
        """
        profile_text, profile = "", tuple[ProfileFact, ...]()
        if speaker is not None and self._memory.profile_tokens:
            pins, facts = await self._store.pins_and_profile(
                channel_key=channel_key, person=speaker.person
            )
            if facts:
                profile_text, profile = self.fit_profile(speaker.name, facts, budget)
        else:
            pins = await self._store.pins(channel_key=channel_key)
        summary = (
            await self._store.latest_summary(conversation_key=conversation_key)
            if self.uses_summary
            else None
        )
        head = self._head(pins, summary, profile_text)
        fixed = head.tokens + REPLY_PRIMING
        if fixed > budget:
            raise PromptTooLarge(
                f"The system prompt and the {counted(len(pins), 'pinned fact')} take {fixed:,} "
                "tokens "
                f"(pins: {head.pins:,}), more than the {budget:,}-token budget. "
                "Nothing was sent to the model; unpin something with /unpin ID (see /pins)."
            )
        rows: Sequence[StoredMessage] = []
        recent = 0
        left_out = False
        recalled = NOTHING
        if through_id is not None:
            after_turn = summary.covers_through_turn if summary else 0
            found: Sequence[StoredMessage] = []
            whole: _Fit | None = None
            if self._recaller is not None and after_turn == 0 and conversation_key in self._whole:
                # The last prompt held the whole conversation, so recall had nothing to show:
                # fit first, and search only when this prompt cannot hold it all either.
                whole = await self._fit_turns(
                    conversation_key=conversation_key,
                    through_id=through_id,
                    after_turn=after_turn,
                    available=budget - fixed,
                    current_id=current_id,
                )
                if whole.left_out:
                    whole = None
            if self._recaller is not None and whole is None:
                found = await self._search(conversation_key, through_id, current_id, query, pins)
            # Matches where the last prompt's recent turns began, or later, are likely in the
            # window again: what the others take is held back.
            expected = self._window_starts.get(conversation_key, through_id + 1)
            likely = [m for m in found if m.id < expected]
            recall_tokens = self._memory.recall_tokens
            planned = self._recaller.fit(likely, recall_tokens) if self._recaller else NOTHING
            hold = planned.tokens
            fit = whole or await self._fit_turns(
                conversation_key=conversation_key,
                through_id=through_id,
                after_turn=after_turn,
                available=budget - fixed,
                current_id=current_id,
                hold=hold,
            )
            if found and self._recaller is not None:
                start = fit.members[0] if fit.members else through_id + 1
                self._remember_start(conversation_key, start)
                left = budget - fixed - fit.tokens
                older = [m for m in found if m.id < start]
                recalled = (
                    planned
                    if older == likely and planned.tokens <= min(recall_tokens, left)
                    else self._recaller.fit(older, min(recall_tokens, left))
                )
                if fit.next_cost is not None and fit.next_cost <= left - recalled.tokens:
                    fit = await self._fit_turns(
                        conversation_key=conversation_key,
                        through_id=through_id,
                        after_turn=after_turn,
                        available=budget - fixed,
                        current_id=current_id,
                        hold=recalled.tokens,
                        stop_turns=frozenset(m.turn_id for m in recalled.messages),
                    )
            if fit.left_out and fit.boundary is not None:
                fit = await self._promote_important(
                    conversation_key=conversation_key,
                    through_id=through_id,
                    after_turn=after_turn,
                    available=budget - fixed - recalled.tokens,
                    current_id=current_id,
                    fit=fit,
                    after=max((m.turn_id for m in recalled.messages), default=0),
                )
            rows = await self._rows(conversation_key, fit)
            recent, left_out = fit.tokens, fit.left_out
            if self._recaller is not None:
                self._remember_whole(conversation_key, after_turn == 0 and not left_out)
        messages = [{"role": "system", "content": head.text}]
        if recalled.messages:
            messages.append(recalled.prompt_message())
        messages.extend(self._render(rows))
        return Prompt(
            messages=messages,
            tokens=fixed + recalled.tokens + recent,
            budget=budget,
            breakdown=Breakdown(
                {
                    "system": head.tokens - head.pins - head.profile - head.summary,
                    "pins": head.pins,
                    "profile": head.profile,
                    "summary": head.summary,
                    "recall": recalled.tokens,
                    "recent": recent,
                }
            ),
            window=rows,
            summary=summary,
            pins=pins,
            turns_left_out=left_out,
            recalled=recalled.messages,
            profile=profile,
        )

    async def _rows(self, conversation_key: str, fit: _Fit) -> Sequence[StoredMessage]:
        """The kept turns' messages in order, read once the turns are chosen; the store has
        most of them in memory from the previous prompt."""
        if not fit.kept:
            return []
        return await self._store.window_messages(conversation_key=conversation_key, ids=fit.members)

    def _remember_whole(self, conversation_key: str, whole: bool) -> None:
        if not whole:
            self._whole.discard(conversation_key)
            return
        if len(self._whole) >= _WINDOW_STARTS:
            self._whole.clear()
        self._whole.add(conversation_key)

    def _remember_start(self, conversation_key: str, start: int) -> None:
        _remember(self._window_starts, conversation_key, start)

    async def _search(
        self,
        conversation_key: str,
        through_id: int,
        current_id: int | None,
        query: StoredMessage | None,
        pins: Sequence[Pin],
    ) -> Sequence[StoredMessage]:
        """Recall's candidates, best first, searched with the message being answered (for
        ``/stats``: the newest user message)."""
        assert self._recaller is not None
        if query is None or query.id != current_id:
            if current_id is not None:
                found = await self._store.messages_by_id(
                    conversation_key=conversation_key, ids=[current_id]
                )
            else:
                found = await self._store.recent_messages(
                    conversation_key=conversation_key,
                    through_id=through_id,
                    after_turn=0,
                    limit=_QUERY_LOOKBACK,
                )
            query = next((m for m in found if m.role is Role.USER), None)
        if query is None:
            return []
        return await self._recaller.search(
            conversation_key=conversation_key, query=query, before_id=query.id, pins=pins
        )

    async def _fit_turns(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        available: int,
        current_id: int | None,
        hold: int = 0,
        stop_turns: frozenset[int] = frozenset(),
    ) -> _Fit:
        """Choose the newest turns that fit, from their costs alone (no message text).

        Turns other than the current one leave ``hold`` tokens free (for recall); the fit
        stops before a turn in ``stop_turns``."""
        max_turns = self._max_turns()
        kept: list[TurnCost] = []
        remaining = available
        before: int | None = None
        skipped = False
        limit = max(_FIRST_PAGE, min(self._turns_read.get(conversation_key, 0) + 4, _MAX_PAGE))

        def done(left_out: bool, boundary: int | None = None, next_cost: int | None = None) -> _Fit:
            # The next fit needs about as many turns (and one more, the one that did not fit).
            _remember(self._turns_read, conversation_key, len(kept) + 1)
            return _Fit(tuple(kept), available - remaining, left_out, boundary, next_cost)

        while True:
            turns = await self._store.turn_costs(
                conversation_key=conversation_key,
                through_id=through_id,
                after_turn=after_turn,
                before_turn=before,
                limit=limit,
            )
            if not turns:
                return done(skipped)
            costs = [turn.tokens + MESSAGE_OVERHEAD * len(turn.ids) for turn in turns]  # _cost
            start = 0
            if turns[0].turn == current_id:  # the newest turn: the message being answered
                if costs[0] > remaining:
                    raise _too_long(costs[0], remaining)
                kept.append(turns[0])
                remaining -= costs[0]
                start = 1
            if (
                max_turns is None
                and not stop_turns
                and max(costs) <= available
                and not (current_id is not None and turns[-1].turn <= current_id < turns[0].turn)
            ):
                # The usual page: the newest turns whose running total leaves hold free.
                totals = list(accumulate(costs[start:]))
                fits = bisect_right(totals, remaining - hold)
                kept.extend(turns[start : start + fits])
                if fits:
                    remaining -= totals[fits - 1]
                if start + fits < len(turns):
                    return done(True, turns[start + fits].turn, costs[start + fits])
            else:
                for index in range(start, len(turns)):
                    turn, cost = turns[index], costs[index]
                    turn_id = turn.turn
                    if turn_id == current_id:
                        if cost > remaining:
                            raise _too_long(cost, remaining)
                    elif max_turns is not None and len(kept) >= max_turns:
                        return done(True, turn_id)
                    elif cost > remaining - hold:
                        if cost > available:
                            skipped = True  # can never fit: skip it rather than lose all before
                            continue
                        return done(True, turn_id, cost)
                    elif turn_id in stop_turns:
                        return done(True, turn_id)
                    kept.append(turn)
                    remaining -= cost
            before = turns[-1].turn
            limit = min(limit * 2, _MAX_PAGE)

    def _max_turns(self) -> int | None:
        return self._memory.window_turns if self._memory.strategy is Strategy.WINDOW else None

    async def _promote_important(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        available: int,
        current_id: int | None,
        fit: _Fit,
        after: int = 0,
    ) -> _Fit:
        """Give important turns left out (newer than turn ``after``) a place, in exchange for
        the oldest unimportant kept turns outside the newest ``keep_recent_turns`` (and the
        current one), as few as make room. Decided from the messages' costs alone; returns
        the new fit."""
        assert fit.boundary is not None
        # Newest first, and all older than every kept turn (the fit kept only newer ones).
        candidates = await self._store.important_turns(
            conversation_key=conversation_key,
            through_id=through_id,
            after_turn=max(after_turn, after),
            through_turn=fit.boundary,
            turns=IMPORTANT_LOOKBACK,
        )
        if not candidates:
            return fit
        # Outside the newest keep_recent_turns and the current one, small talk, oldest first:
        # looked for only as far as exchanges need (older[below:] has been looked through).
        skip = self._memory.keep_recent_turns
        older = fit.kept[skip:]
        below = len(older)
        evictable: list[TurnCost] = []
        frees: list[int] = []
        spare: list[int] | None = None  # once all are found: what exchanging from the i-th frees

        def find() -> bool:
            nonlocal below, spare
            while below:
                below -= 1
                turn = older[below]
                if not turn.important and turn.turn != current_id:
                    evictable.append(turn)
                    frees.append(_cost(turn))
                    return True
            if spare is None:
                spare = list(accumulate(reversed(frees), initial=0))[::-1]
            return False

        max_turns = self._max_turns()
        count, remaining = len(fit.kept), available - fit.tokens
        promoted: list[TurnCost] = []
        out = 0  # evictable[:out] are exchanged for promoted turns
        for candidate in candidates:
            cost = _cost(candidate)
            if spare is not None:  # every evictable turn is known
                if max_turns is not None and count - (len(evictable) - out) >= max_turns:
                    break  # no exchange is left that makes room for one more turn
                if cost > remaining + spare[out]:
                    continue  # too large for what is left to exchange (a smaller one may fit)
            taken, freed = out, 0
            while freed + remaining < cost or (
                max_turns is not None and count - (taken - out) >= max_turns
            ):
                if taken == len(evictable) and not find():
                    break
                freed += frees[taken]
                taken += 1
            else:
                count += 1 - (taken - out)
                out = taken
                promoted.append(candidate)
                remaining += freed - cost
        if not promoted:
            return fit
        # Each exchange stopped at the first turn that made room: none of them fits back.
        gone = {turn.turn for turn in evictable[:out]}
        # Still newest first: the promoted turns are older than the kept ones, and the turns
        # exchanged are among those looked through.
        kept = (
            *fit.kept[: skip + below],
            *(turn for turn in older[below:] if turn.turn not in gone),
            *promoted,
        )
        return _Fit(kept, available - remaining, True, fit.boundary)
