"""Building each prompt under the token budget.

Layout, in this order: one system message holding the system prompt, the pinned facts and
the rolling summary (durable facts first, against "lost in the middle"); then as many recent
turns as fit, oldest first; the current message last. Whole turns are kept or evicted, never
half of one. Stored messages are never deleted here: the prompt is a view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bot.config import MemoryConfig, Strategy
from bot.models import Pin, StoredMessage, Summary
from bot.store.base import Store
from bot.tokens import MESSAGE_OVERHEAD, REPLY_PRIMING, ChatTokenizer

PINS_HEADING = "Facts the people in this channel asked you to keep (pinned; numbered by pin id):"
SUMMARY_HEADING = "Summary of the earlier conversation in this channel:"
_READ_BATCH = 256


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


@dataclass
class _Turn:
    turn_id: int
    rows: list[StoredMessage] = field(default_factory=list)

    @property
    def cost(self) -> int:
        return sum(row.tokens + MESSAGE_OVERHEAD for row in self.rows)


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
        window: list[_Turn] = []
        left_out = False
        if through_id is not None:
            window, left_out = await self._fit_turns(
                conversation_key=conversation_key,
                through_id=through_id,
                after_turn=summary.covers_through_turn if summary else 0,
                available=budget - fixed,
                current_id=current_id,
            )
        rows = sorted((row for turn in window for row in turn.rows), key=lambda r: r.id)
        recent = sum(turn.cost for turn in window)
        messages = [{"role": "system", "content": self.head_text(pins, summary)}]
        messages.extend({"role": row.role.value, "content": row.rendered} for row in rows)
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
    ) -> tuple[list[_Turn], bool]:
        """Newest turns first, while they fit; returns the kept turns and whether any
        older unsummarized turn was left out."""
        max_turns = self._memory.window_turns if self._memory.strategy is Strategy.WINDOW else None
        kept: list[_Turn] = []
        pending: dict[int, _Turn] = {}
        remaining = available
        upper = through_id
        skipped = False
        while True:
            rows = await self._store.recent_messages(
                conversation_key=conversation_key,
                through_id=upper,
                after_turn=after_turn,
                limit=_READ_BATCH,
            )
            for row in rows:
                pending.setdefault(row.turn_id, _Turn(row.turn_id)).rows.append(row)
            exhausted = len(rows) < _READ_BATCH
            if rows:
                upper = rows[-1].id - 1
            # A turn is complete once its first message (id == turn id) has been read.
            ready = sorted((t for t in pending if exhausted or t > upper), reverse=True)
            for turn_id in ready:
                turn = pending.pop(turn_id)
                if current_id is not None and turn_id == current_id:
                    if turn.cost > remaining:
                        raise PromptTooLarge(
                            f"Your message is {turn.cost - MESSAGE_OVERHEAD:,} tokens; with "
                            f"the system prompt and pins only {remaining:,} fit in the "
                            "budget. It is saved, but too long to send: please send a "
                            "shorter excerpt."
                        )
                elif max_turns is not None and len(kept) >= max_turns:
                    return kept, True
                elif turn.cost > remaining:
                    if turn.cost > available:
                        skipped = True  # can never fit: skip it rather than lose all before
                        continue
                    return kept, True
                kept.append(turn)
                remaining -= turn.cost
            if exhausted:
                return kept, skipped
