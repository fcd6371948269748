"""Correcting budgets from the server's own count of each prompt, script by script.

For a model tiktoken does not know, our count is an estimate, and how far off it is depends on
the script: against a real server (SmolLM2 on llama.cpp) whole English prompts counted 0.91 to
1.12 times ours, whole Chinese ones 1.16 to 1.62. One ratio per model, smoothed over replies,
could not hold both: a channel that turned from English to Chinese sent 742 server tokens
against a 700 budget, and 7 of 43 Chinese prompts went over a 2,000 budget. Most of that spread
is the mix (how much of each prompt is the English system prompt and framing, how much Chinese
text), not noise, so a rate per script explains it, where a quantile of the whole-prompt ratio
would only pay for it in every prompt.

So every reply's prompt is kept as a sample: our count split by script (:mod:`.scripts`) and the
server's ``usage.prompt_tokens``. Per model, the newest :data:`WINDOW` samples are fitted by
Bayesian linear regression of each sample's ratio (server / ours) on its shares of Latin, CJK
and other scripts:

- **A prior per script** (:data:`PRIORS`): Latin 1.0 ± 0.125, CJK and other scripts 2.0 ±
  0.5 (what an English-heavy vocabulary, or a byte fallback, spends on Han against tiktoken).
- **The posterior** gives each rate and how sure it is. A budget is for the prompt's mix
  ``m``: the mean rate ``m·r`` plus :data:`Z` standard deviations of what a prompt of that
  mix may count (the rates' uncertainty along ``m`` and the noise per prompt the samples show,
  English prompts alone varying by about 5%), never below the mean times the largest
  server/fitted ratio among the samples, then a 3% margin.
- **Right after a switch of script** the new script's rate is its prior's upper end: an unseen
  CJK is budgeted at 3.0 (above the measured Chinese ratios), an unseen model's Latin at 1.25
  (above the measured English ones), and only for the new script's share of the prompt. A mix
  the samples have not shown (say pure English after prompts always half Chinese) is uncertain
  in the posterior, so budgeted high, instead of inheriting whatever split of the rates fitted
  the old mix. Each sample then narrows it; the bound falls toward the true rate from above.
- **Small prompts**, where a few tokens of chat template unlike ours are much of the prompt,
  do not set the largest ratio (those under :data:`SPREAD_FROM` tokens); their noise is in the
  noise the fit estimates, which keeps budgets on the safe side.

The budget depends on the prompt's mix, known only once it is built: the engine builds with the
budget for the latest sample's mix, predicts the prompt's server count, and builds again
(:func:`bot.core.prompt.budget.build_within`) when it is over, or under with turns left out.
For OpenAI models the count is exact: samples are kept (``/stats`` shows the ratio) but the
budget is the limit. Samples persist in the store, so the fit survives restarts.

A context-length error that states the model's window is kept too (``bot doctor`` compares the
configured sizes with it). The running bot sizes its retries from each error, not from the kept
window: a server restarted with a larger context is not held to the old one.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.core.memory.scripts import NAMES, SCRIPTS, ScriptTokens, split_prompt
from bot.core.ports.store import CalibrationSample, UsageStore

Vector = tuple[float, float, float]
Matrix = tuple[Vector, Vector, Vector]

PRIORS: tuple[tuple[float, float], ...] = ((1.0, 0.125), (2.0, 0.5), (2.0, 0.5))
"""Per script (Latin, CJK, other): the rate assumed before samples, and its standard
deviation."""
Z = 2.0
"""Standard deviations above the mean a budget allows for."""
NOISE, NOISE_WEIGHT = 0.05, 4.0
"""A prompt's ratio varies by this much around its mix's rate before samples say, weighing
as this many samples."""
WINDOW = 64
"""Samples kept and fitted per model: the newest."""
SPREAD_FROM = 100
"""Prompts smaller than this many tokens do not set the largest ratio."""
MARGIN = 1.03
SPLIT_IN_THREAD = 20_000
"""Characters of text outside ASCII past which a prompt is split by script off the event
loop (a prompt of 15,000 Chinese tokens takes about 5 ms)."""
_MIN_RATE, _MAX_RATE = 0.25, 8.0
_LATIN_ONLY = ScriptTokens(latin=1)


@dataclass(frozen=True)
class Fitted:
    """One model's calibration, as fitted from its samples."""

    model: str
    rates: Vector
    """Server tokens per token of ours, per script (:data:`~.scripts.SCRIPTS` order): the
    posterior mean."""
    covariance: Matrix
    """The rates' posterior covariance."""
    noise: float
    """How much a prompt's ratio varies around its mix's rate (a standard deviation)."""
    spread: float
    """The largest server/fitted ratio among the samples (at least 1)."""
    samples: int
    lowest: float
    highest: float
    """The lowest and highest whole-prompt ratio among the samples (1, 1 when none)."""
    latest: ScriptTokens
    """The newest sample's mix (Latin only when none)."""

    def mean(self, mix: ScriptTokens) -> float:
        """The rate a prompt that splits as ``mix`` has on average."""
        return _dot(mix.shares(), self.rates)

    def rate(self, mix: ScriptTokens) -> float:
        """Server tokens per token of ours budgeted for a prompt that splits as ``mix``: the
        upper bound of what it may count, and the margin."""
        shares = mix.shares()
        mean = _dot(shares, self.rates)
        spread = _dot(shares, _product(self.covariance, shares)) + self.noise**2
        upper = max(mean * self.spread, mean + Z * math.sqrt(spread))
        return MARGIN * min(_MAX_RATE, max(_MIN_RATE, upper))

    def sd(self, script: int) -> float:
        """The standard deviation of a script's rate."""
        return math.sqrt(self.covariance[script][script])

    def assumed(self, script: int) -> bool:
        """The rate of script ``script`` is mostly its prior."""
        return self.sd(script) > PRIORS[script][1] / 2

    def describe(self, *, exact: bool) -> list[str]:
        """``/stats``'s lines: for a model counted exactly, the ratios seen; else the rates
        per script, and what the budget adds to them."""
        replies = f"{self.samples} reply" if self.samples == 1 else f"{self.samples} replies"
        if exact:
            seen = f"{self.lowest:.3f}x"
            if self.highest != self.lowest:
                seen += f" to {self.highest:.3f}x"
            return [f"  server counts {seen} our count over the last {replies}"]
        rates = []
        for index, name in enumerate(SCRIPTS):
            note = " (assumed: little seen)" if self.assumed(index) else ""
            rates.append(f"{NAMES[name]} {self.rates[index]:.3f}x ±{Z * self.sd(index):.3f}{note}")
        source = f"fitted from the last {replies}" if self.samples else "assumed, no reply yet"
        return [
            f"  server counts per script against ours, {source}: " + ", ".join(rates),
            f"  a prompt varies by ±{Z * self.noise:.3f} beyond its mix (largest ratio seen "
            f"{self.spread:.3f}x the fit); budgets take the upper end and {MARGIN - 1:.0%} more",
        ]


def fit(model: str, samples: Sequence[CalibrationSample]) -> Fitted:
    """The rates ``samples`` show, how sure they are, and the noise (the priors alone when
    there are none)."""
    rows: list[tuple[Vector, float]] = []  # shares, ratio
    for sample in samples:
        tokens = ScriptTokens(sample.latin, sample.cjk, sample.other)
        if tokens.total > 0:
            rows.append((tokens.shares(), sample.reported / tokens.total))
    noise = NOISE
    for _ in range(2):  # the rates with the noise assumed, the noise they leave, the rates
        precision = [[0.0] * 3 for _ in range(3)]
        target = [0.0] * 3
        for i, (prior, sd) in enumerate(PRIORS):
            precision[i][i] = 1 / sd**2
            target[i] = prior / sd**2
        for shares, ratio in rows:
            for i in range(3):
                target[i] += shares[i] * ratio / noise**2
                for j in range(3):
                    precision[i][j] += shares[i] * shares[j] / noise**2
        covariance = _inverse(precision)
        rates = _product(covariance, (target[0], target[1], target[2]))
        residual = sum((ratio - _dot(shares, rates)) ** 2 for shares, ratio in rows)
        noise = math.sqrt((residual + NOISE_WEIGHT * NOISE**2) / (len(rows) + NOISE_WEIGHT))
    spread = 1.0
    for sample in samples:
        tokens = ScriptTokens(sample.latin, sample.cjk, sample.other)
        fitted = _dot(tokens.as_tuple(), rates)
        if tokens.total >= SPREAD_FROM and fitted > 0:
            spread = max(spread, sample.reported / fitted)
    ratios = [ratio for _, ratio in rows]
    latest = samples[-1] if samples else None
    return Fitted(
        model=model,
        rates=rates,
        covariance=covariance,
        noise=noise,
        spread=spread,
        samples=len(rows),
        lowest=min(ratios, default=1.0),
        highest=max(ratios, default=1.0),
        latest=ScriptTokens(latest.latin, latest.cjk, latest.other) if latest else _LATIN_ONLY,
    )


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _product(matrix: Matrix, vector: Sequence[float]) -> Vector:
    return (_dot(matrix[0], vector), _dot(matrix[1], vector), _dot(matrix[2], vector))


def _inverse(matrix: list[list[float]]) -> Matrix:
    """The inverse of a symmetric positive definite 3×3 matrix (Gauss-Jordan)."""
    n = 3
    rows = [[*matrix[i], *(float(i == j) for j in range(n))] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        rows[col], rows[pivot] = rows[pivot], rows[col]
        head = rows[col][col]
        rows[col] = [value / head for value in rows[col]]
        for r in range(n):
            if r != col:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    a, b, c = ((row[n], row[n + 1], row[n + 2]) for row in rows)
    return (a, b, c)


_WINDOW_KEY = "context_window:"
"""The meta key (then the model's name) of the window a context-length error stated."""


class CalibrationStore(UsageStore, Protocol):
    async def get_meta(self, *, key: str) -> str | None: ...

    async def set_meta(self, *, key: str, value: str) -> None: ...


class Calibrator:
    """Every model's calibration, kept in the store."""

    def __init__(self, store: CalibrationStore, *, exact_models: frozenset[str]) -> None:
        self._store = store
        self._exact = exact_models
        self._samples: dict[str, list[CalibrationSample]] = {}
        self._fitted: dict[str, Fitted] = {}

    async def load(self) -> None:
        samples: dict[str, list[CalibrationSample]] = {}
        for sample in await self._store.calibration_samples():
            samples.setdefault(sample.model, []).append(sample)
        self._samples = {model: kept[-WINDOW:] for model, kept in samples.items()}
        self._fitted = {model: fit(model, kept) for model, kept in self._samples.items()}

    def get(self, model: str) -> Fitted | None:
        """The model's calibration, once a reply has reported usage."""
        return self._fitted.get(model)

    async def learned_window(self, model: str) -> int | None:
        """``model``'s context window in the server's tokens, as its last context-length
        error stated it; None when none has."""
        told = await self._store.get_meta(key=_WINDOW_KEY + model)
        return int(told) if told is not None and told.isdigit() else None

    async def learn_window(self, model: str, tokens: int) -> None:
        """Keep the window a context-length error stated for ``model``."""
        if tokens > 0 and await self.learned_window(model) != tokens:
            await self._store.set_meta(key=_WINDOW_KEY + model, value=str(tokens))

    def describe(self, model: str) -> list[str]:
        """What ``/stats`` says of the model's calibration."""
        fitted = self._fitted.get(model)
        if fitted is None and model in self._exact:
            return []
        return (fitted or fit(model, ())).describe(exact=model in self._exact)

    def exact(self, model: str) -> bool:
        """Our count of the model's prompts is the server's."""
        return model in self._exact

    def gauge(self, model: str, count: Callable[[str], int]) -> Gauge:
        """The calibration of ``model``, whose tokens ``count`` counts."""
        return Gauge(self, model, count)

    def rate(self, model: str, mix: ScriptTokens | None = None) -> float:
        """Server tokens per token of ours, budgeted, for a prompt that splits as ``mix``
        (None: as the model's newest sample did)."""
        if model in self._exact:
            return 1.0
        fitted = self._fitted.get(model) or fit(model, ())
        return fitted.rate(fitted.latest if mix is None else mix)

    def budget(self, model: str, limit: int, mix: ScriptTokens | None = None) -> int:
        """The budget, in our count, that keeps the server's count of a prompt that splits as
        ``mix`` (None: as the newest sample did) within ``limit``."""
        return max(1, math.floor(limit / self.rate(model, mix)))

    def budgets(self, model: str, limit: int) -> tuple[int, int]:
        """The budgets for a prompt wholly in the costliest and wholly in the cheapest
        script: the smallest and largest a mix can have."""
        rates = [self.rate(model, ScriptTokens(*(int(i == j) for j in range(3)))) for i in range(3)]
        return max(1, math.floor(limit / max(rates))), max(1, math.floor(limit / min(rates)))

    async def observe(self, model: str, *, tokens: ScriptTokens, reported: int | None) -> None:
        """Keep one prompt's counts, ours split by script and the server's, and fit again."""
        if not reported or tokens.total <= 0:
            return
        ratio = reported / tokens.total
        reported = round(tokens.total * min(_MAX_RATE, max(_MIN_RATE, ratio)))  # not nonsense
        sample = CalibrationSample(model, *tokens.as_tuple(), reported=reported)
        kept = [*self._samples.get(model, ()), sample][-WINDOW:]
        self._samples[model] = kept
        self._fitted[model] = fit(model, kept)
        await self._store.add_calibration_sample(sample=sample, keep=WINDOW)


@dataclass(frozen=True)
class Gauge:
    """One model's calibration, with the count that splits its prompts by script."""

    calibrator: Calibrator
    model: str
    count: Callable[[str], int]

    def tokens(self, messages: Iterable[Mapping[str, str]], total: int) -> ScriptTokens:
        """A short prompt's tokens (``total``, our count of it) split by script."""
        return split_prompt(self.count, messages, total)

    async def split(self, messages: Sequence[Mapping[str, str]], total: int) -> ScriptTokens:
        """A prompt's tokens split by script, off the event loop when it is long."""
        foreign = sum(len(v) for m in messages for v in m.values() if not v.isascii())
        if foreign > SPLIT_IN_THREAD:
            return await asyncio.to_thread(split_prompt, self.count, messages, total)
        return split_prompt(self.count, messages, total)

    async def cost(self, messages: Sequence[Mapping[str, str]], total: int) -> float:
        """The server's count of a prompt (``total`` in ours), predicted and budgeted."""
        if self.calibrator.exact(self.model):
            return float(total)
        return self.calibrator.rate(self.model, await self.split(messages, total)) * total

    def budget(self, limit: int, mix: ScriptTokens | None = None) -> int:
        return self.calibrator.budget(self.model, limit, mix)

    def budgets(self, limit: int) -> tuple[int, int]:
        return self.calibrator.budgets(self.model, limit)

    async def observe(
        self, messages: Sequence[Mapping[str, str]], total: int, reported: int | None
    ) -> None:
        if reported:
            tokens = await self.split(messages, total)
            await self.calibrator.observe(self.model, tokens=tokens, reported=reported)
