"""Choosing a prompt's recent turns from their costs alone: pure functions, no I/O.

Whole turns are kept or left out, never half of one, newest first while they fit. When turns
must be left out, important ones are kept longer than small talk: :func:`promote` gives older
important turns the place of the oldest unimportant kept ones, outside the newest
``keep_recent`` turns.

When the turns are dated (:mod:`.dates`), what a turn takes includes the day lines its joining
adds, so that a fit's tokens are exactly what its turns take in the prompt, dates included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate, chain

from bot.core.memory.tokens import MESSAGE_OVERHEAD
from bot.core.ports.store import TurnCost
from bot.core.prompt.dates import Dates

_EXCHANGE_TRIES = 3
"""How many times :func:`promote` tries exchanges that leave more room for day lines before it
keeps the fit it was given."""


class PromptTooLarge(Exception):
    """What must be in the prompt does not fit the budget; the message says what to do."""


@dataclass(frozen=True)
class Fit:
    kept: tuple[TurnCost, ...]
    """The turns kept in the prompt, newest first."""
    tokens: int
    """What the kept turns take in the prompt, with their day lines."""
    left_out: bool
    boundary: int | None = None
    """The newest turn left out for lack of room (or past the window, or recalled): it and
    older turns were not looked at."""
    next_cost: int | None = None
    """The cost of the turn the fit stopped at for lack of room (None: it did not)."""

    @property
    def members(self) -> list[int]:
        """The kept turns' message ids, ascending (turns' messages may interleave)."""
        return sorted(chain.from_iterable(turn.ids for turn in self.kept))


def cost(turn: TurnCost) -> int:
    """What a turn takes in the prompt: its messages and the chat format's overhead for each."""
    return turn.tokens + MESSAGE_OVERHEAD * len(turn.ids)


def too_long(cost: int, room: int) -> PromptTooLarge:
    return PromptTooLarge(
        f"Your message is {cost - MESSAGE_OVERHEAD:,} tokens; with the system prompt and pins "
        f"only {room:,} fit in the budget. It is saved, but too long to send: please send a "
        "shorter excerpt."
    )


def fit_turns(
    turns: Sequence[TurnCost],
    *,
    available: int,
    current_id: int | None,
    hold: int = 0,
    max_turns: int | None = None,
    stop_turns: frozenset[int] = frozenset(),
    dates: Dates | None = None,
) -> Fit:
    """The newest of ``turns`` (newest first) that fit in ``available`` tokens.

    The turn ``current_id`` (the message being answered) is always kept, or
    :class:`PromptTooLarge` raised; other turns leave ``hold`` tokens free (for recall), at
    most ``max_turns`` are kept, and the fit stops before a turn in ``stop_turns``. A turn
    larger than ``available`` can never fit: it is skipped rather than losing all before it.
    A fit that did not stop (``boundary`` None) looked at every turn given. ``dates``: the
    turns show their days (None: they are not dated).
    """
    kept: list[TurnCost] = []
    remaining = available
    skipped = False
    growing = dates.growing() if dates is not None else None

    def stop(boundary: int, next_cost: int | None = None) -> Fit:
        return Fit(tuple(kept), available - remaining, True, boundary, next_cost)

    for turn in turns:
        size = cost(turn) + (growing.extra(turn) if growing is not None else 0)
        if turn.turn == current_id:
            if size > remaining:
                raise too_long(size, remaining)
        elif max_turns is not None and len(kept) >= max_turns:
            return stop(turn.turn)
        elif size > remaining - hold:
            if size > available:
                skipped = True
                continue
            return stop(turn.turn, size)
        elif turn.turn in stop_turns:
            return stop(turn.turn)
        kept.append(turn)
        if growing is not None:
            growing.add(turn)
        remaining -= size
    return Fit(tuple(kept), available - remaining, skipped)


def promote(
    fit: Fit,
    candidates: Sequence[TurnCost],
    *,
    available: int,
    current_id: int | None,
    keep_recent: int,
    max_turns: int | None,
    dates: Dates | None = None,
) -> Fit:
    """Give important ``candidates`` (turns left out, newest first, all older than every kept
    turn) a place, in exchange for the oldest unimportant kept turns outside the newest
    ``keep_recent`` (and the current one), as few as make room; returns the new fit.

    With ``dates``, the exchanges are chosen leaving room for the day lines the kept turns
    show; when the new turns' lines take more, they are chosen again leaving that much (a few
    times, then the fit stays as it was)."""
    assert fit.boundary is not None
    if not candidates:
        return fit
    turns_take = sum(cost(turn) for turn in fit.kept)
    lines = fit.tokens - turns_take  # what the kept turns' day lines take
    for _ in range(_EXCHANGE_TRIES):
        kept = _exchange(
            fit.kept,
            candidates,
            room=available - lines - turns_take,
            current_id=current_id,
            keep_recent=keep_recent,
            max_turns=max_turns,
        )
        if kept is None:
            return fit
        shown = dates.total(kept) if dates is not None else 0
        tokens = sum(cost(turn) for turn in kept) + shown
        if tokens <= available:
            return Fit(kept, tokens, True, fit.boundary)
        lines = shown  # more than was left for them: choose again, leaving what they take
    return fit


def _exchange(
    kept: tuple[TurnCost, ...],
    candidates: Sequence[TurnCost],
    *,
    room: int,
    current_id: int | None,
    keep_recent: int,
    max_turns: int | None,
) -> tuple[TurnCost, ...] | None:
    """:func:`promote`'s choice for ``room`` tokens left beside the ``kept`` turns (None:
    nothing to promote)."""
    older = kept[keep_recent:]
    # Small talk outside the newest turns, oldest first, and what exchanging from the i-th on
    # frees.
    evictable = [t for t in reversed(older) if not t.important and t.turn != current_id]
    frees = [cost(turn) for turn in evictable]
    spare = list(accumulate(reversed(frees), initial=0))[::-1]
    count, remaining = len(kept), room
    promoted: list[TurnCost] = []
    out = 0  # evictable[:out] are exchanged for promoted turns
    for candidate in candidates:
        size = cost(candidate)
        if max_turns is not None and count - (len(evictable) - out) >= max_turns:
            break  # no exchange is left that makes room for one more turn
        if size > remaining + spare[out]:
            continue  # too large for what is left to exchange (a smaller one may fit)
        taken, freed = out, 0
        while freed + remaining < size or (
            max_turns is not None and count - (taken - out) >= max_turns
        ):
            freed += frees[taken]
            taken += 1
        count += 1 - (taken - out)
        out = taken
        promoted.append(candidate)
        remaining += freed - size
    if not promoted:
        return None
    # Each exchange stopped at the first turn that made room: none of them fits back.
    gone = {turn.turn for turn in evictable[:out]}
    # Still newest first: the promoted turns are older than the kept ones.
    return (*(turn for turn in kept if turn.turn not in gone), *promoted)
