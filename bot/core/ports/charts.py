"""Charts: pictures of what the numbers say, for people who would rather look than read.

The core decides what a chart shows and says it in words (its title and alt text,
:mod:`bot.core.charts`); an implementation outside the core draws it (``bot/charts/``). Drawing
takes a noticeable fraction of a second: the core calls these methods in a worker thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Image:
    """A picture, as PNG bytes, with its size in pixels."""

    png: bytes
    width: int
    height: int


@dataclass(frozen=True)
class DayUsage:
    """One UTC day's model calls, summed: a column of the usage chart."""

    day: str
    """``2026-12-05``."""
    tokens: int
    """Prompt and completion tokens."""
    cost: float


@dataclass(frozen=True)
class LayerTokens:
    """One layer of a prompt (system, pins, profile, summary, recall, recent) and its tokens."""

    layer: str
    tokens: int


class Charts(Protocol):
    def usage_chart(self, *, title: str, days: Sequence[DayUsage]) -> Image:
        """Tokens (above) and cost (below) per day, a bar a day in the order given (days
        without calls are given, as zero: they show as gaps)."""
        ...

    def layers_chart(self, *, title: str, layers: Sequence[LayerTokens], budget: int) -> Image:
        """The layers as one bar, a segment each in the order given, against ``budget``: the
        bar's full length, what is left of it shown empty."""
        ...
