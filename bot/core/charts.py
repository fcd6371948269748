"""What the charts show and how they read in words: a channel's tokens and cost over its last
30 days, a prompt's layers against its budget. Each chart comes with alt text saying the same
(:class:`Chart`); the picture itself is drawn by the :class:`~bot.core.ports.charts.Charts`
implementation passed in, in a worker thread.

Used by ``/usage chart`` and ``/stats chart`` (:mod:`bot.core.commands.charts`) and by anything
else that shows the charts (the operators' page): :func:`usage_chart`, :func:`layers_chart`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.core.cost import money
from bot.core.models import Attachment
from bot.core.ports.charts import Charts, DayUsage, Image, LayerTokens
from bot.core.ports.spend import Ledger, SpendLine
from bot.core.wording import counted

USAGE_DAYS = 30
PNG = "image/png"


@dataclass(frozen=True)
class Chart:
    """A drawn chart and what it shows, in words."""

    image: Image
    alt_text: str

    def attachment(self, filename: str) -> Attachment:
        return Attachment(
            filename=filename, data=self.image.png, mime_type=PNG, alt_text=self.alt_text
        )


def short_number(value: float) -> str:
    """``950``, ``12k``, ``1.2M``: a count as a glance takes it."""
    size = abs(value)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if size >= limit:
            scaled = value / limit
            text = f"{scaled:.1f}" if abs(scaled) < 10 else f"{scaled:.0f}"
            return text.removesuffix(".0") + suffix
    return f"{value:.0f}"


def last_days(now: float, count: int = USAGE_DAYS) -> list[str]:
    """The ``count`` UTC days up to and including today's, oldest first: ``2026-12-05``."""
    today = datetime.fromtimestamp(now, UTC).date()
    return [(today - timedelta(days=back)).isoformat() for back in range(count - 1, -1, -1)]


def day_start(day: str) -> float:
    """When a UTC day (``2026-12-05``) starts, in seconds since the epoch."""
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def daily_usage(lines: Sequence[SpendLine], days: Sequence[str]) -> list[DayUsage]:
    """Tokens (prompt and completion) and cost for each of ``days``: zero where no call was
    made; lines of other days are left out."""
    tokens = dict.fromkeys(days, 0)
    cost = dict.fromkeys(days, 0.0)
    for line in lines:
        if line.day in tokens:
            tokens[line.day] += line.prompt_tokens + line.completion_tokens
            cost[line.day] += line.cost
    return [DayUsage(day=day, tokens=tokens[day], cost=cost[day]) for day in days]


def usage_title(where: str, days: Sequence[DayUsage]) -> str:
    return f"Tokens and cost per day for {where}, {days[0].day} to {days[-1].day} (UTC)"


def usage_alt(where: str, days: Sequence[DayUsage]) -> str:
    """The usage chart in words: the totals, the busiest day, the costliest when another, and
    how many days had calls."""
    title = usage_title(where, days)
    used = [day for day in days if day.tokens or day.cost]
    if not used:
        return f"{title}: no model calls in these {counted(len(days), 'day')}."
    tokens = sum(day.tokens for day in days)
    cost = sum(day.cost for day in days)
    busiest = max(used, key=lambda day: (day.tokens, day.cost))
    parts = [
        f"total {short_number(tokens)} tokens, {money(cost)}",
        f"busiest day {busiest.day} with {short_number(busiest.tokens)} tokens, "
        f"{money(busiest.cost)}",
    ]
    costliest = max(used, key=lambda day: (day.cost, day.tokens))
    if costliest.cost > busiest.cost:
        parts.append(f"costliest day {costliest.day} with {money(costliest.cost)}")
    parts.append(f"calls on {len(used)} of {counted(len(days), 'day')}")
    return f"{title}: " + "; ".join(parts) + "."


def layers_title(where: str) -> str:
    return f"The prompt for {where} by layer, against its budget"


def layers_alt(where: str, layers: Sequence[LayerTokens], budget: int) -> str:
    """The layers chart in words: the prompt's tokens against the budget, each layer's, and
    what is left."""
    total = sum(layer.tokens for layer in layers)
    share = f" ({total / budget:.0%})" if budget else ""
    each = ", ".join(f"{layer.layer} {layer.tokens:,}" for layer in layers)
    left = budget - total
    rest = f"{left:,} left" if left >= 0 else f"{-left:,} over"
    return f"{layers_title(where)}: {total:,} of {counted(budget, 'token')}{share}; {each}; {rest}."


async def usage_chart(
    ledger: Ledger, charts: Charts, *, channel_key: str, now: float, where: str
) -> Chart:
    """The tokens and cost of a channel (and its threads) per UTC day over the last
    :data:`USAGE_DAYS` days up to ``now``; ``where``: how the words name the channel."""
    days = last_days(now)
    lines = await ledger.spend_lines(since=day_start(days[0]), until=None, channel_key=channel_key)
    usage = daily_usage(lines, days)
    image = await asyncio.to_thread(charts.usage_chart, title=usage_title(where, usage), days=usage)
    return Chart(image=image, alt_text=usage_alt(where, usage))


async def layers_chart(
    charts: Charts, *, breakdown: Mapping[str, int], budget: int, where: str
) -> Chart:
    """A prompt's layers (``Prompt.breakdown.as_dict()``, in order) as one bar against its
    ``budget``."""
    layers = [LayerTokens(layer=name, tokens=tokens) for name, tokens in breakdown.items()]
    image = await asyncio.to_thread(
        charts.layers_chart, title=layers_title(where), layers=layers, budget=budget
    )
    return Chart(image=image, alt_text=layers_alt(where, layers, budget))
