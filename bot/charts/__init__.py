"""The charts port (:class:`bot.core.ports.charts.Charts`) drawn with matplotlib.

Charts are drawn in a process of their own, started on the first chart (most runs draw none)
and kept for the next: drawing holds the interpreter's lock for a tenth of a second or more,
which in the bot's process would stall the event loop and every conversation with it.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bot.core.ports.charts import DayUsage, Image, LayerTokens


def _draw_usage(title: str, days: Sequence[DayUsage]) -> Image:
    from bot.charts.draw import usage_chart

    return usage_chart(title=title, days=days)


def _draw_layers(title: str, layers: Sequence[LayerTokens], budget: int) -> Image:
    from bot.charts.draw import layers_chart

    return layers_chart(title=title, layers=layers, budget=budget)


class MatplotlibCharts:
    """PNG charts of a fixed size, drawn off-screen (Agg) in a drawing process; callable from
    worker threads (the core calls it from one), one chart at a time."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def usage_chart(self, *, title: str, days: Sequence[DayUsage]) -> Image:
        return self._draw(_draw_usage, title, list(days))

    def layers_chart(self, *, title: str, layers: Sequence[LayerTokens], budget: int) -> Image:
        return self._draw(_draw_layers, title, list(layers), budget)

    def _draw(self, draw: Callable[..., Image], *args: Any) -> Image:
        """``draw(*args)`` in the drawing process; a process that died (killed, out of
        memory) is replaced once."""
        for attempt in (1, 2):
            pool = self._process()
            try:
                return pool.submit(draw, *args).result()
            except BrokenProcessPool:
                with self._lock:
                    if self._pool is pool:
                        self._pool = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _process(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                # spawn: a fork of a process running threads and an event loop is not safe.
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
            return self._pool

    def close(self) -> None:
        """Stop the drawing process, if one was started."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
