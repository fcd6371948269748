"""Choosing a prompt's turns from their costs: whole turns, newest first, important ones kept
longer than small talk."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.memory.tokens import MESSAGE_OVERHEAD
from bot.core.ports.store import TurnCost
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
