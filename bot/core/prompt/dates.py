"""Dating a prompt's recent turns when they span days.

Recalled lines and the summary's kept lines carry their time; the recent turns need theirs too,
or a question about *when* something was said finds the message but not its day. When the
people's messages among the recent turns were written on more than one UTC day (UTC, as recall
dates its lines), the first of each day opens with the day on a line of its own
(:func:`bot.core.models.day_line`), and so does the first of the window, so that every turn's
day can be read::

    2026-12-04
    [Ana] the release slips to Friday

A window within one day shows no date: nothing to tell apart, no tokens spent.

Why this shape: a day line costs about seven tokens, once a day, where a date on every message
would cost that for each of a busy day's dozens of messages. Only people's messages are dated,
never the model's own answers (an answer belongs to the day of the question before it): models
imitate what opens the messages they are shown, and answers that never start with a date teach
none (:func:`bot.core.models.strip_speaker_tags` still takes an echoed date line off a reply
along with the speaker tag after it).

Which messages are dated depends on which turns the prompt keeps (the window's first, and
whether it spans days at all), so it is decided here, when the prompt is fitted, never stored: a
message's stored count stays the count of its rendering without a date, and the fit adds what
each day line takes (a line break followed by ``[`` starts a new token, so a dated message costs
exactly its stored count plus its line's). As turns join the window oldest-last, only the day
lines at its old start change: :class:`Growing` prices each turn's arrival in constant time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from bot.core.models import day_line, utc_day
from bot.core.ports.store import TurnCost

Count = Callable[[str], int]


def opening_day(turn: TurnCost) -> str | None:
    """The UTC day of the person's message that opens ``turn`` (None: a turn that opens with
    one of the model's own messages, which are never dated)."""
    return utc_day(turn.opened_at) if turn.opened_at is not None else None


class Dates:
    """Where a prompt's recent turns show their day, and what that costs."""

    def __init__(self, count: Count) -> None:
        self._count = count

    def cost(self, day: str) -> int:
        """What the line of ``day`` adds to the message it opens."""
        return self._count(day_line(day))

    def marks(self, turns: Iterable[TurnCost]) -> dict[int, str]:
        """The day shown at the start of each dated turn's opening message, by turn id: the
        first of each day and the first of all, when the turns span days; else none."""
        opened = sorted((turn.turn, day) for turn in turns if (day := opening_day(turn)))
        if len({day for _, day in opened}) < 2:
            return {}
        marks: dict[int, str] = {}
        previous = None
        for turn_id, day in opened:
            if day != previous:
                marks[turn_id] = day
            previous = day
        return marks

    def total(self, turns: Iterable[TurnCost]) -> int:
        """What the day lines of ``turns`` (a prompt's recent turns) take."""
        return sum(self.cost(day) for day in self.marks(turns).values())

    def growing(self) -> Growing:
        return Growing(self)


class Growing:
    """The day lines of a window that grows by older turns: :meth:`extra` prices a turn older
    than every turn kept so far, :meth:`add` keeps it. The sum of the extras of the turns kept
    is what :meth:`Dates.total` says of them."""

    def __init__(self, dates: Dates) -> None:
        self._dates = dates
        self._first: str | None = None
        """The day of the oldest dated turn kept."""
        self._spans = False
        """Whether the dated turns kept span days (then the oldest already shows its day)."""

    def extra(self, turn: TurnCost) -> int:
        day = opening_day(turn)
        if day is None or self._first is None or day == self._first:
            return 0  # undated, the first dated, or the day's line moves to it from the next
        # It shows its day; the next one shows its own too, from now on if not already.
        return self._dates.cost(day) + (0 if self._spans else self._dates.cost(self._first))

    def add(self, turn: TurnCost) -> None:
        day = opening_day(turn)
        if day is None:
            return
        if self._first is not None and day != self._first:
            self._spans = True
        self._first = day
