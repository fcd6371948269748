"""Building each prompt under the token budget.

Layout, in this order: one system message holding the system prompt, the pinned facts, the
profile of the person speaking and the rolling summary (durable facts first, against "lost in
the middle"); then, when recall is on and finds something, a second system message with
earlier messages that may be relevant (:mod:`bot.recall`); then as many recent turns as fit,
oldest first; the current message last. Whole turns are kept or evicted, never half of one.
When turns must be left out, important ones (:mod:`bot.importance`, or marked with 📌) are
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from bot.config import MemoryConfig, Strategy
from bot.models import FactSource, Person, Pin, ProfileFact, Role, StoredMessage, Summary
from bot.recall import NOTHING, Recaller
from bot.store.base import Store
from bot.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, ChatTokenizer

PINS_HEADING = "Facts the people in this channel asked you to keep (pinned; numbered by pin id):"
SUMMARY_HEADING = "Summary of the earlier conversation in this channel:"
_FIRST_BATCH, _MAX_BATCH = 64, 1024
_QUERY_LOOKBACK = 50  # /stats: the newest user message among this many is recall's query
_WINDOW_STARTS = 10_000  # conversations whose per-conversation figures are remembered
PROFILE_SHARE = 0.1
"""A speaker's profile may take at most this share of the budget (and memory.profile_tokens)."""
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
    turns: set[int]
    """The turns kept in the prompt."""
    tokens: int
    left_out: bool
    costs: dict[int, int] = field(default_factory=dict)
    """The cost of each kept turn."""
    boundary: int | None = None
    """The newest turn left out for lack of room (or past the window, or recalled): it and
    older turns were not read."""
    next_cost: int | None = None
    """The cost of the turn the fit stopped at for lack of room (None: it did not)."""
    members: tuple[tuple[int, int], ...] = ()
    """``(id, turn)`` of the kept turns' messages, oldest first."""
    important: frozenset[int] = frozenset()
    """The kept turns that hold an important message."""


def render_pins(pins: Sequence[Pin]) -> str:
    lines = [PINS_HEADING]
    lines.extend(f"#{pin.id} ({pin.author_name}): {pin.text}" for pin in pins)
    return "\n".join(lines)


def render_profile(name: str, facts: Sequence[ProfileFact]) -> str:
    lines = []
    own = [fact for fact in facts if fact.source is FactSource.USER]
    inferred = [fact for fact in facts if fact.source is FactSource.SUMMARY]
    if own:
        lines.append(f"What {name} (who is speaking now) asked you to remember about them:")
        lines.extend(f"- {fact.text}" for fact in own)
    if inferred:
        lines.append(f"Noted about {name} from earlier conversations (may be out of date):")
        lines.extend(f"- {fact.text}" for fact in inferred)
    return "\n".join(lines)


def render_summary(summary: Summary) -> str:
    return f"{SUMMARY_HEADING}\n{summary.content}"


def _remember(per_conversation: dict[str, int], conversation_key: str, value: int) -> None:
    """Set a per-conversation figure, forgetting them all once too many are held."""
    if len(per_conversation) >= _WINDOW_STARTS and conversation_key not in per_conversation:
        per_conversation.clear()
    per_conversation[conversation_key] = value


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
        self._rows_read: dict[str, int] = {}
        """Per conversation, how many index rows the last fit read: the next one reads about
        as many, in one batch rather than several."""
        self._system_prompt = system_prompt
        self._count = _CountCache(tokenizer)
        self.system_tokens = self._count(system_prompt)

    @property
    def uses_summary(self) -> bool:
        return self._memory.strategy in (Strategy.SUMMARY, Strategy.HYBRID)

    def head_text(
        self, pins: Sequence[Pin], summary: Summary | None, profile: str | None = None
    ) -> str:
        parts = [self._system_prompt]
        if pins:
            parts.append(render_pins(pins))
        if profile:
            parts.append(profile)
        if summary is not None:
            parts.append(render_summary(summary))
        return "\n\n".join(parts)

    def head_tokens(
        self, pins: Sequence[Pin], summary: Summary | None, profile: str | None = None
    ) -> int:
        return self._count(self.head_text(pins, summary, profile)) + MESSAGE_OVERHEAD

    def profile_cap(self, budget: int) -> int:
        return min(self._memory.profile_tokens, int(budget * PROFILE_SHARE))

    def fit_profile(
        self, name: str, facts: Sequence[ProfileFact], budget: int
    ) -> tuple[str, list[ProfileFact]]:
        """The speaker's profile block within its cap: their own facts in the order they set
        them, then inferred ones newest first, as many as fit."""
        cap = self.profile_cap(budget)
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
        return text, shown

    def pins_tokens(self, pins: Sequence[Pin]) -> int:
        return self._count(render_pins(pins)) if pins else 0

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
        profile_text, profile = "", list[ProfileFact]()
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
        head = self.head_tokens(pins, summary, profile_text)
        fixed = head + REPLY_PRIMING
        if fixed > budget:
            pins_part = self.pins_tokens(pins)
            raise PromptTooLarge(
                f"The system prompt and the {len(pins)} pinned facts take {fixed:,} tokens "
                f"(pins: {pins_part:,}), more than the {budget:,}-token budget. "
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
                start = fit.members[0][0] if fit.members else through_id + 1
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
        messages = [{"role": "system", "content": self.head_text(pins, summary, profile_text)}]
        if recalled.messages:
            messages.append(recalled.prompt_message())
        messages.extend(row.prompt_message() for row in rows)
        pins_part = self.pins_tokens(pins)
        profile_part = self._count(profile_text) if profile_text else 0
        summary_part = self._count(render_summary(summary)) if summary else 0
        return Prompt(
            messages=messages,
            tokens=fixed + recalled.tokens + recent,
            budget=budget,
            breakdown=Breakdown(
                {
                    "system": head - pins_part - profile_part - summary_part,
                    "pins": pins_part,
                    "profile": profile_part,
                    "summary": summary_part,
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
        if not fit.members:
            return []
        ids = [message_id for message_id, _ in fit.members]
        return await self._store.window_messages(conversation_key=conversation_key, ids=ids)

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
        """Choose the newest turns that fit, reading only (id, turn, tokens) per message.

        Turns other than the current one leave ``hold`` tokens free (for recall); the fit
        stops before a turn in ``stop_turns``."""
        max_turns = self._max_turns()
        kept: set[int] = set()
        costs_of: dict[int, int] = {}
        pending: dict[int, int] = {}  # turn id -> cost of its messages read so far
        read: list[tuple[int, int, int, int]] = []  # (id, turn, tokens, important), newest first
        remaining = available
        upper = through_id
        skipped = False
        batch = max(_FIRST_BATCH, min(self._rows_read.get(conversation_key, 0) + 8, _MAX_BATCH))

        def done(fit: _Fit) -> _Fit:
            members: list[tuple[int, int]] = []
            important: set[int] = set()
            last = -1
            for index, (message_id, turn_id, _, weighty) in enumerate(read):
                if turn_id in kept:
                    members.append((message_id, turn_id))
                    last = index
                    if weighty:
                        important.add(turn_id)
            members.reverse()
            # The rows down to the oldest kept message, not the whole last batch: the next
            # fit needs about as many (the batch adds a few for the turn that did not fit).
            _remember(self._rows_read, conversation_key, last + 1 if members else len(read))
            return replace(fit, members=tuple(members), important=frozenset(important))

        while True:
            costs = await self._store.message_costs(
                conversation_key=conversation_key,
                through_id=upper,
                after_turn=after_turn,
                limit=batch,
            )
            read.extend(costs)
            for _, turn_id, tokens, _ in costs:
                pending[turn_id] = pending.get(turn_id, 0) + tokens + MESSAGE_OVERHEAD
            exhausted = len(costs) < batch
            batch = min(batch * 2, _MAX_BATCH)
            if costs:
                upper = costs[-1][0] - 1
            # A turn is complete once its first message (id == turn id) has been read.
            ready = sorted((t for t in pending if exhausted or t > upper), reverse=True)
            for turn_id in ready:
                cost = pending.pop(turn_id)
                if current_id is not None and turn_id == current_id:
                    if cost > remaining:
                        raise PromptTooLarge(
                            f"Your message is {cost - MESSAGE_OVERHEAD:,} tokens; with "
                            f"the system prompt and pins only {remaining:,} fit in the "
                            "budget. It is saved, but too long to send: please send a "
                            "shorter excerpt."
                        )
                elif max_turns is not None and len(kept) >= max_turns:
                    return done(_Fit(kept, available - remaining, True, costs_of, turn_id))
                elif cost > remaining - hold:
                    if cost > available:
                        skipped = True  # can never fit: skip it rather than lose all before
                        continue
                    return done(
                        _Fit(kept, available - remaining, True, costs_of, turn_id, next_cost=cost)
                    )
                elif turn_id in stop_turns:
                    return done(_Fit(kept, available - remaining, True, costs_of, turn_id))
                kept.add(turn_id)
                costs_of[turn_id] = cost
                remaining -= cost
            if exhausted:
                return done(_Fit(kept, available - remaining, skipped, costs_of))

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
        current one); then put back what still fits of what was exchanged. Decided from the
        messages' costs alone; returns the new fit."""
        assert fit.boundary is not None
        older: dict[int, list[int]] = {}  # turn -> its message ids
        costs = dict(fit.costs)
        for message_id, turn_id, tokens in await self._store.important_turn_costs(
            conversation_key=conversation_key,
            through_id=through_id,
            after_turn=max(after_turn, after),
            through_turn=fit.boundary,
            turns=IMPORTANT_LOOKBACK,
        ):
            if turn_id in fit.turns:
                continue
            older.setdefault(turn_id, []).append(message_id)
            costs[turn_id] = costs.get(turn_id, 0) + tokens + MESSAGE_OVERHEAD
        candidates = sorted(older, reverse=True)
        if not candidates:
            return fit
        newest_first = sorted(fit.turns, reverse=True)
        protected = set(newest_first[: self._memory.keep_recent_turns])
        if current_id is not None:
            protected.add(current_id)
        keep = protected | fit.important
        evictable = [t for t in reversed(newest_first) if t not in keep]
        max_turns = self._max_turns()
        if not evictable and (max_turns is not None and len(fit.turns) >= max_turns):
            return fit
        kept, remaining = set(fit.turns), available - fit.tokens
        promoted: set[int] = set()
        evicted: list[int] = []
        for candidate in candidates:
            cost = costs.get(candidate, available + 1)
            if cost > available:
                continue
            taken, freed = 0, 0
            while (
                freed + remaining < cost
                or (max_turns is not None and len(kept) - taken >= max_turns)
            ) and taken < len(evictable):
                freed += costs[evictable[taken]]
                taken += 1
            if freed + remaining < cost or (
                max_turns is not None and len(kept) - taken >= max_turns
            ):
                continue
            for turn_id in evictable[:taken]:
                kept.discard(turn_id)
                evicted.append(turn_id)
            evictable = evictable[taken:]
            kept.add(candidate)
            promoted.add(candidate)
            remaining += freed - cost
        for turn_id in sorted(evicted, reverse=True):  # newest first, while they fit
            if costs[turn_id] > remaining or (max_turns is not None and len(kept) >= max_turns):
                break
            kept.add(turn_id)
            remaining -= costs[turn_id]
        if not promoted:
            return fit
        # The kept turns' messages with the promoted ones', in id order (a promoted turn's
        # late reply may come after a kept turn's messages).
        shown = [member for member in fit.members if member[1] in kept]
        extra = [(i, turn_id) for turn_id in promoted for i in older[turn_id]]
        return _Fit(
            kept,
            available - remaining,
            True,
            {t: costs[t] for t in kept},
            fit.boundary,
            members=tuple(sorted(shown + extra)),
            important=(fit.important & kept) | frozenset(promoted),
        )
