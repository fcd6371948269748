"""Ranking by meaning: the nearest stored vectors, and what counts as a match."""

from __future__ import annotations

import math

from bot.core.memory.vectors import rank, vector_bytes


def at_cosine(cosine: float) -> bytes:
    """A unit vector at ``cosine`` to the query (the first axis)."""
    return vector_bytes([cosine, math.sqrt(1 - cosine * cosine), 0.0, 0.0])


QUERY = vector_bytes([1.0, 0.0, 0.0, 0.0])


def test_a_model_whose_cosines_cluster_matches_only_the_closer_half() -> None:
    # E5-like: every stored message is 0.72 to 0.90 similar, all above an absolute 0.3.
    rows = [(k, at_cosine(0.72 + 0.02 * k)) for k in range(10)]
    assert rank(QUERY, rows, floor=0.3, limit=100) == [9, 8, 7, 6, 5]


def test_the_absolute_floor_still_holds_above_the_median() -> None:
    rows = [(k, at_cosine(0.1 * k)) for k in range(1, 10)]
    assert rank(QUERY, rows, floor=0.75, limit=100) == [9, 8]
    assert rank(QUERY, rows, floor=0.3, limit=2) == [9, 8]


def test_vectors_of_another_model_are_left_out() -> None:
    rows = [(1, at_cosine(0.9)), (2, vector_bytes([1.0, 0.0]))]
    assert rank(QUERY, rows, floor=0.0, limit=10) == [1]
