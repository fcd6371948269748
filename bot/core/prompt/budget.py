"""Fitting a prompt to a limit in the server's count, when its script mix decides the budget.

The assembler fits turns to a budget in the bot's own count; for a foreign tokenizer what
that budget allows depends on the scripts of what is fitted (:mod:`bot.core.memory.calibration`).
So a prompt is built with the budget for the model's latest mix, its server count is predicted
from its own mix, and it is built again with the budget at which a prompt of that mix fills
the limit: smaller when it is over, larger when it is under and turns were left out that may
fit. Each build is a few reads of the store, against seconds of model time; most prompts fit
at the first, and a change of script takes one or two more.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable

from bot.core.memory.calibration import Gauge
from bot.core.prompt.fit import PromptTooLarge
from bot.core.prompt.layout import Prompt

BUILDS = 4
"""Builds tried before the budget for a prompt wholly in the costliest script is used."""
CLOSE = 0.97
"""A prompt predicted at this share of the limit or more is not built again to use the rest."""


async def build_within(
    build: Callable[[int], Awaitable[Prompt]], *, limit: int, gauge: Gauge
) -> Prompt:
    """The roomiest prompt ``build`` makes (given a budget in the bot's count) whose server
    count, as ``gauge`` predicts it, is within ``limit``. Raises :class:`PromptTooLarge` when
    what must be in the prompt does not fit."""
    costliest, cheapest = gauge.budgets(limit)
    budget = gauge.budget(limit)
    best: Prompt | None = None
    tried: list[int] = []
    while len(tried) < BUILDS and budget not in tried:
        tried.append(budget)
        try:
            prompt = await build(budget)
        except PromptTooLarge:
            if len(tried) > 1 or budget >= cheapest:
                raise
            budget = cheapest  # the mix guessed may be costlier than this prompt's
            continue
        predicted = max(await gauge.cost(prompt.messages, prompt.tokens), 1.0)
        # The budget at which a prompt of this one's mix would fill the limit.
        fills = math.floor(prompt.tokens * limit / predicted)
        if predicted <= limit:
            if best is None or prompt.tokens > best.tokens:
                best = prompt
            if not prompt.turns_left_out or predicted >= limit * CLOSE or fills <= budget:
                break
        if best is not None and fills <= best.budget:
            break
        budget = fills
    if best is not None:
        return best
    return await build(costliest)
