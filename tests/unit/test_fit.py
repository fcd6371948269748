"""Choosing a prompt's turns from their costs: whole turns, newest first, important ones kept
longer than small talk."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.memory.tokens import MESSAGE_OVERHEAD
from bot.core.ports.store import TurnCost
from bot.core.prompt.dates import Dates
from bot.core.prompt.fit import PromptTooLarge, cost, fit_turns, promote


def turn(turn_id: int, tokens: int, *, important: bool = False, messages: int = 1) -> TurnCost:
    ids = tuple(range(turn_id, turn_id + messages))
    return TurnCost(turn=turn_id, ids=ids, tokens=tokens, important=important)


def newest_first(*sizes: int) -> list[TurnCost]:
    """Turns 10, 20, ... with these token counts, the newest (highest id) first."""
    return [turn(10 * (len(sizes) - i), size) for i, size in enumerate(sizes)]


def test_the_newest_whole_turns_that_fit_are_kept() -> None:
    turns = newest_first(10, 10, 10, 10)
    fit = fit_turns(turns, available=3 * (10 + MESSAGE_OVERHEAD), current_id=40)
    assert [t.turn for t in fit.kept] == [40, 30, 20]
    assert fit.left_out and fit.boundary == 10 and fit.next_cost == cost(turns[3])
    assert fit.tokens == 3 * (10 + MESSAGE_OVERHEAD)


def test_the_current_turn_is_kept_whatever_is_held_back_or_refused() -> None:
    turns = newest_first(50, 10)
    fit = fit_turns(turns, available=60, current_id=20, hold=1000)
    assert [t.turn for t in fit.kept] == [20] and fit.boundary == 10
    with pytest.raises(PromptTooLarge, match="Your message is 50 tokens"):
        fit_turns(turns, available=40, current_id=20)


def test_a_turn_larger_than_the_budget_is_skipped_rather_than_losing_all_before_it() -> None:
    turns = newest_first(5, 500, 5)
    fit = fit_turns(turns, available=100, current_id=None)
    assert [t.turn for t in fit.kept] == [30, 10]
    assert fit.left_out and fit.boundary is None


def test_the_window_and_stop_turns_end_the_fit() -> None:
    turns = newest_first(1, 1, 1, 1)
    assert [t.turn for t in fit_turns(turns, available=99, current_id=None, max_turns=2).kept] == [
        40,
        30,
    ]
    stopped = fit_turns(turns, available=99, current_id=None, stop_turns=frozenset({20}))
    assert [t.turn for t in stopped.kept] == [40, 30] and stopped.boundary == 20


def test_an_important_turn_takes_the_place_of_the_oldest_small_talk() -> None:
    kept = newest_first(10, 10, 10, 10)  # turns 40..10
    available = 4 * cost(kept[0])
    fit = fit_turns(kept, available=available, current_id=40)
    assert not fit.left_out
    left_out = fit_turns([*kept, turn(5, 10)], available=available, current_id=40)
    promoted = promote(
        left_out,
        [turn(5, 10, important=True)],
        available=available,
        current_id=40,
        keep_recent=2,
        max_turns=None,
    )
    assert [t.turn for t in promoted.kept] == [40, 30, 20, 5]
    assert promoted.tokens <= available and promoted.left_out


@given(st.lists(st.integers(0, 60), min_size=1, max_size=30), st.integers(0, 400))
def test_a_fit_never_passes_its_budget_and_keeps_a_newest_first_subset(
    sizes: list[int], available: int
) -> None:
    turns = newest_first(*sizes)
    fit = fit_turns(turns, available=available, current_id=None)
    assert fit.tokens == sum(cost(t) for t in fit.kept) <= available
    positions = [turns.index(t) for t in fit.kept]
    assert positions == sorted(positions)


DAY = 86_400.0


def count(text: str) -> int:
    """A stand-in tokenizer for the fit's arithmetic: a day line takes 7."""
    return len(text) - 4


DATES = Dates(count)


def on_days(*days: int | None, size: int = 10) -> list[TurnCost]:
    """Turns 10, 20, ... opened on these days (None: by the model), the newest first."""
    return [
        TurnCost(10 * (i + 1), (10 * (i + 1),), size, False, None if d is None else d * DAY)
        for i, d in reversed(list(enumerate(days)))
    ]


def test_turns_within_one_day_show_no_date() -> None:
    assert DATES.marks(on_days(3, 3, 3)) == {}
    assert DATES.marks(on_days(3, None, 3)) == {}


def test_turns_over_days_show_each_days_first_and_the_first_of_all() -> None:
    turns = on_days(1, 1, None, 2, 2, 1)
    assert DATES.marks(turns) == {10: "1970-01-02", 40: "1970-01-03", 60: "1970-01-02"}
    assert DATES.total(turns) == 3 * 7


def test_a_fit_counts_the_day_lines_of_the_turns_it_keeps() -> None:
    turns = on_days(1, 2, 2)  # 14 tokens a turn, and two lines of 7 once turn 10 joins
    fit = fit_turns(turns, available=3 * 14 + 13, current_id=30, dates=DATES)
    assert [t.turn for t in fit.kept] == [30, 20] and fit.next_cost == 14 + 14
    fit = fit_turns(turns, available=3 * 14 + 14, current_id=30, dates=DATES)
    assert [t.turn for t in fit.kept] == [30, 20, 10] and fit.tokens == 3 * 14 + 14


def test_an_important_turn_of_an_earlier_day_makes_room_for_its_day_lines_too() -> None:
    kept = [TurnCost(n, (n,), 10, False, 2 * DAY) for n in (40, 30, 20)]  # 14 tokens each
    older = TurnCost(5, (5,), 10, True, 1 * DAY)
    fit = fit_turns([*kept, older], available=42, current_id=40, dates=DATES)
    assert [t.turn for t in fit.kept] == [40, 30, 20] and fit.tokens == 42
    promoted = promote(
        fit, [older], available=42, current_id=40, keep_recent=1, max_turns=None, dates=DATES
    )
    # Exchanged for turn 20 alone, turn 5 would bring two day lines (14) that do not fit.
    assert [t.turn for t in promoted.kept] == [40, 5] and promoted.tokens == 2 * 14 + 14


turn_days = st.one_of(st.none(), st.integers(0, 3))


@st.composite
def dated_turns(draw: st.DrawFn) -> list[TurnCost]:
    """Turns newest first, opened on mostly ascending days, some important, some of two
    messages."""
    count = draw(st.integers(1, 25))
    days = draw(st.lists(turn_days, min_size=count, max_size=count))
    if draw(st.booleans()):
        days = sorted(days, key=lambda d: -1 if d is None else d)
    turns = []
    for index, day in enumerate(days):
        turn_id = 10 * (index + 1)
        ids = tuple(range(turn_id, turn_id + draw(st.integers(1, 2))))
        opened = None if day is None else day * DAY + draw(st.floats(0, DAY - 1))
        turns.append(TurnCost(turn_id, ids, draw(st.integers(0, 40)), draw(st.booleans()), opened))
    return turns[::-1]


@given(dated_turns(), st.integers(0, 600), st.integers(0, 60), st.booleans())
def test_the_days_growing_windows_show_cost_what_the_window_shows(
    turns: list[TurnCost], available: int, hold: int, answering: bool
) -> None:
    """Dated or not, a fit and the exchanges for important turns stay within the budget, and
    their tokens are exactly what their turns and day lines take."""
    growing, extras = DATES.growing(), 0
    for index, turn in enumerate(turns):
        extras += growing.extra(turn)
        growing.add(turn)
        assert extras == DATES.total(turns[: index + 1])
    current = turns[0].turn if answering else None
    try:
        fit = fit_turns(turns, available=available, current_id=current, hold=hold, dates=DATES)
    except PromptTooLarge:
        assert cost(turns[0]) > available
        return
    assert fit.tokens == sum(cost(t) for t in fit.kept) + DATES.total(fit.kept) <= available
    if fit.boundary is None:
        return
    oldest = min(t.turn for t in fit.kept) if fit.kept else fit.boundary + 1
    candidates = [t for t in turns if t.important and t.turn < oldest]
    promoted = promote(
        fit,
        candidates,
        available=available,
        current_id=current,
        keep_recent=1,
        max_turns=None,
        dates=DATES,
    )
    total = sum(cost(t) for t in promoted.kept) + DATES.total(promoted.kept)
    assert promoted.tokens == total <= available
    assert current is None or promoted.kept[0].turn == current
