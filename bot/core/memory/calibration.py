"""Correcting budgets from the server's own count of each prompt.

For a model tiktoken does not know, our count is an estimate. Every reply reports
``usage.prompt_tokens``; the ratio of that to our count, smoothed over replies and kept in the
database, scales later budgets so the prompt the server counts stays within
``memory.max_context_tokens``. For OpenAI models the ratio is recorded (``/stats`` shows it)
but not applied: the count is already exact.

A context-length error that states the model's window is kept too (``bot doctor`` compares the
configured sizes with it). The running bot sizes its retries from each error, not from the kept
window: a server restarted with a larger context is not held to the old one.
"""

from __future__ import annotations

import math
from typing import Protocol

from bot.core.ports.store import Calibration, UsageStore

_SMOOTHING = 0.2
_MARGIN = 1.03  # a little headroom for texts that tokenize unlike the ones seen so far
_MIN_RATIO, _MAX_RATIO = 0.5, 4.0
_WINDOW_KEY = "context_window:"
"""The meta key (then the model's name) of the window a context-length error stated."""


class CalibrationStore(UsageStore, Protocol):
    async def get_meta(self, *, key: str) -> str | None: ...

    async def set_meta(self, *, key: str, value: str) -> None: ...


class Calibrator:
    def __init__(self, store: CalibrationStore, *, exact_models: frozenset[str]) -> None:
        self._store = store
        self._exact = exact_models
        self._ratios: dict[str, Calibration] = {}

    async def load(self) -> None:
        self._ratios = {c.model: c for c in await self._store.calibrations()}

    def get(self, model: str) -> Calibration | None:
        return self._ratios.get(model)

    def budget(self, model: str, limit: int) -> int:
        """The budget, in our own count, that keeps the server's count within ``limit``."""
        if model in self._exact:
            return limit
        calibration = self._ratios.get(model)
        if calibration is None:
            return limit
        return max(1, math.floor(limit / (calibration.ratio * _MARGIN)))

    async def observe(self, model: str, *, estimated: int, reported: int | None) -> None:
        if not reported or estimated <= 0:
            return
        ratio = min(_MAX_RATIO, max(_MIN_RATIO, reported / estimated))
        previous = self._ratios.get(model)
        if previous is None:
            updated = Calibration(model=model, ratio=ratio, samples=1)
        else:
            smoothed = previous.ratio + _SMOOTHING * (ratio - previous.ratio)
            # Rise at once to a higher ratio (staying under budget); fall back slowly.
            updated = Calibration(
                model=model, ratio=max(smoothed, ratio), samples=previous.samples + 1
            )
        self._ratios[model] = updated
        await self._store.save_calibration(calibration=updated)

    async def learned_window(self, model: str) -> int | None:
        """``model``'s context window in the server's tokens, as its last context-length
        error stated it; None when none has."""
        told = await self._store.get_meta(key=_WINDOW_KEY + model)
        return int(told) if told is not None and told.isdigit() else None

    async def learn_window(self, model: str, tokens: int) -> None:
        """Keep the window a context-length error stated for ``model``."""
        if tokens > 0 and await self.learned_window(model) != tokens:
            await self._store.set_meta(key=_WINDOW_KEY + model, value=str(tokens))
