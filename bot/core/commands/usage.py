"""``/usage``: what the models cost for this channel (and its threads) and for the caller
(their calls in this workspace), today, this month (UTC) and in total, by model, and each cap
on spend in force here, used against its limit; ``/usage chart``: the channel's last 30 days
as a chart (:mod:`.charts`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from bot.core.caps import period_bounds
from bot.core.commands.charts import usage_with_chart, wants_chart
from bot.core.commands.common import error, info
from bot.core.commands.page_link import page_lines
from bot.core.cost import NO_PRICE, Prices, money
from bot.core.engine import Engine
from bot.core.models import CommandCall, Reply
from bot.core.ports.spend import Spend
from bot.core.wording import counted


def spend_lines(rows: Sequence[Spend], prices: Prices, indent: str = "  ") -> list[str]:
    """A line per model (requests, tokens, money; a model without a price flagged) and a
    total line; one line saying so when nothing was spent."""
    if not rows:
        return [f"{indent}nothing"]
    lines = []
    for row in rows:
        cached = f" ({row.cached_tokens:,} cached)" if row.cached_tokens else ""
        cost = money(row.cost) if prices.priced(row.model) or row.cost else NO_PRICE
        lines.append(
            f"{indent}{row.model}: {counted(row.requests, 'request')}, "
            f"{row.prompt_tokens:,} prompt{cached} + {row.completion_tokens:,} completion "
            f"tokens: {cost}"
        )
    requests = sum(row.requests for row in rows)
    total = money(sum(row.cost for row in rows))
    unpriced = [row.model for row in rows if not prices.priced(row.model) and not row.cost]
    missing = f" (no price for {', '.join(unpriced)})" if unpriced else ""
    lines.append(f"{indent}total: {counted(requests, 'request')}: {total}{missing}")
    return lines


def periods(now: float) -> list[tuple[str, float | None]]:
    """Today, this month (UTC) and in total: each titled, with when it starts."""
    (today, _), (month, _) = period_bounds(now, "day"), period_bounds(now, "month")
    return [
        (f"Today ({datetime.fromtimestamp(today, UTC):%Y-%m-%d} UTC)", today),
        (f"This month ({datetime.fromtimestamp(month, UTC):%B %Y})", month),
        ("In total", None),
    ]


USAGE = "Usage: /usage, or /usage chart for this channel's last 30 days as a chart."


async def usage(engine: Engine, call: CommandCall) -> Reply:
    chart = wants_chart(call)
    if chart is None:
        return error(USAGE)
    if chart:
        return await usage_with_chart(engine, call)
    conversation = call.conversation
    prices = engine.meter.prices
    workspace = conversation.workspace_scope
    lines = []
    for title, scope in (
        ("This channel (and its threads)", {"channel_key": conversation.channel_key}),
        ("You, in this workspace", {"workspace": workspace, "person": call.user_id}),
    ):
        lines.append(f"{title}:")
        for period, since in periods(engine.clock()):
            rows = await engine.store.spend(since=since, until=None, **scope)
            lines.append(f"  {period}:")
            lines.extend(spend_lines(rows, prices, indent="    "))
    settings = await engine.settings_for(conversation)
    if uses := await engine.caps.uses(conversation, call.user_id, settings):
        lines.append("Budgets in force:")
        lines.extend(f"  {use.line}" for use in uses)
    lines.extend(await page_lines(engine, call))
    return info("\n".join(lines), ephemeral=True)
