"""Building each prompt under the token budget.

Layout, in this order: one system message holding the system prompt, the pinned facts and
the rolling summary (durable facts first, against "lost in the middle"); then as many recent
turns as fit, oldest first; the current message last. Whole turns are kept or evicted, never
half of one. Stored messages are never deleted here: the prompt is a view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.config import MemoryConfig, Strategy
from bot.models import Pin, StoredMessage, Summary
from bot.store.base import Store
from bot.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, ChatTokenizer

PINS_HEADING = "Facts the people in this channel asked you to keep (pinned; numbered by pin id):"
SUMMARY_HEADING = "Summary of the earlier conversation in this channel:"
_FIRST_BATCH, _MAX_BATCH = 64, 1024


class PromptTooLarge(Exception):
    """What must be in the prompt does not fit the budget; the message says what to do."""


@dataclass(frozen=True)
class Breakdown:
    system: int
    pins: int
    summary: int
    recent: int

    def as_dict(self) -> dict[str, int]:
        return {
            "system": self.system,
            "pins": self.pins,
            "summary": self.summary,
            "recent": self.recent,
        }


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

    @property
    def fill(self) -> float:
        return self.tokens / self.budget if self.budget else 1.0


@dataclass(frozen=True)
class _Fit:
    turns: set[int]
    """The turns kept in the prompt."""
    tokens: int
    left_out: bool
    ids: list[int]
    """The messages of the kept turns, oldest first."""


def render_pins(pins: Sequence[Pin]) -> str:
    lines = [PINS_HEADING]
    lines.extend(f"#{pin.id} ({pin.author_name}): {pin.text}" for pin in pins)
    return "\n".join(lines)


def render_summary(summary: Summary) -> str:
    return f"{SUMMARY_HEADING}\n{summary.content}"


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
    ) -> None:
        self._store = store
        self._memory = memory
        self._system_prompt = system_prompt
        self._count = _CountCache(tokenizer)
        self.system_tokens = self._count(system_prompt)

    @property
    def uses_summary(self) -> bool:
        return self._memory.strategy in (Strategy.SUMMARY, Strategy.HYBRID)

    def head_text(self, pins: Sequence[Pin], summary: Summary | None) -> str:
        parts = [self._system_prompt]
        if pins:
            parts.append(render_pins(pins))
        if summary is not None:
            parts.append(render_summary(summary))
        return "\n\n".join(parts)

    def head_tokens(self, pins: Sequence[Pin], summary: Summary | None) -> int:
        return self._count(self.head_text(pins, summary)) + MESSAGE_OVERHEAD

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
    ) -> Prompt:
        """Fit a prompt for the conversation up to message ``through_id`` into ``budget``.

        ``current_id`` names the message being answered: it must be in the prompt, last.
        Raises :class:`PromptTooLarge` when the system prompt, pins and that message alone
        exceed the budget.
        """
        pins = await self._store.pins(channel_key=channel_key)
        summary = (
            await self._store.latest_summary(conversation_key=conversation_key)
            if self.uses_summary
            else None
        )
        head = self.head_tokens(pins, summary)
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
        if through_id is not None:
            after_turn = summary.covers_through_turn if summary else 0
            fit = await self._fit_turns(
                conversation_key=conversation_key,
                through_id=through_id,
                after_turn=after_turn,
                available=budget - fixed,
                current_id=current_id,
            )
            recent, left_out = fit.tokens, fit.left_out
            if fit.ids:
                rows = await self._store.window_messages(
                    conversation_key=conversation_key, ids=fit.ids
                )
        messages = [{"role": "system", "content": self.head_text(pins, summary)}]
        messages.extend(row.prompt_message() for row in rows)
        pins_part = self.pins_tokens(pins)
        summary_part = self._count(render_summary(summary)) if summary else 0
        return Prompt(
            messages=messages,
            tokens=fixed + recent,
            budget=budget,
            breakdown=Breakdown(
                system=head - pins_part - summary_part,
                pins=pins_part,
                summary=summary_part,
                recent=recent,
            ),
            window=rows,
            summary=summary,
            pins=pins,
            turns_left_out=left_out,
        )

    async def _fit_turns(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        available: int,
        current_id: int | None,
    ) -> _Fit:
        """Choose the newest turns that fit, reading only (id, turn, tokens) per message."""
        max_turns = self._memory.window_turns if self._memory.strategy is Strategy.WINDOW else None
        kept: set[int] = set()
        pending: dict[int, int] = {}  # turn id -> cost of its messages read so far
        read: list[tuple[int, int, int]] = []  # (id, turn, tokens), newest first

        def fit(tokens: int, left_out: bool) -> _Fit:
            ids = [row[0] for row in reversed(read) if row[1] in kept]
            return _Fit(kept, tokens, left_out, ids)

        remaining = available
        upper = through_id
        skipped = False
        batch = _FIRST_BATCH
        while True:
            costs = await self._store.message_costs(
                conversation_key=conversation_key,
                through_id=upper,
                after_turn=after_turn,
                limit=batch,
            )
            read.extend(costs)
            for _, turn_id, tokens in costs:
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
                    return fit(available - remaining, True)
                elif cost > remaining:
                    if cost > available:
                        skipped = True  # can never fit: skip it rather than lose all before
                        continue
                    return fit(available - remaining, True)
                kept.add(turn_id)
                remaining -= cost
            if exhausted:
                return fit(available - remaining, skipped)
