"""The charts as drawn, read back: a real PNG of the stated size, a bar for each day with
calls where that day is and none for the others, heights as the numbers go; the layers as
segments of one bar as long as their share of the budget. And their alt text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bot.charts import MatplotlibCharts
from bot.charts.draw import (
    COST_COLOUR,
    LAYER_COLOURS,
    LAYERS_SIZE,
    TOKENS_COLOUR,
    UNUSED_COLOUR,
    USAGE_SIZE,
)
from bot.core.charts import daily_usage, last_days, layers_alt, short_number, usage_alt
from bot.core.ports.charts import DayUsage, LayerTokens
from bot.core.ports.spend import SpendLine
from tests.support.pictures import Bar, bars, size, widths_in_busiest_row

NOW = 1_796_000_000.0  # 2026-11-30 UTC
USED = {3: (40_000, 0.20), 4: (10_000, 0.05), 11: (90_000, 0.30), 20: (30_000, 0.90)}
"""Day index → tokens and cost; the other days of the thirty had no calls."""


@pytest.fixture(scope="module")
def charts() -> Iterator[MatplotlibCharts]:
    """Drawn as the bot draws them: in a drawing process of their own."""
    drawing = MatplotlibCharts()
    yield drawing
    drawing.close()


def _days() -> list[DayUsage]:
    tokens_cost = {index: USED.get(index, (0, 0.0)) for index in range(30)}
    return [DayUsage(day, *tokens_cost[index]) for index, day in enumerate(last_days(NOW))]


def _at_days(found: list[Bar], days: list[int]) -> None:
    """One bar per day in ``days``, each where its day's column is: evenly spaced by day."""
    assert len(found) == len(days), found
    step = (found[-1].centre - found[0].centre) / (days[-1] - days[0])
    assert step > 20  # thirty columns across the chart
    for bar, day in zip(found, days, strict=True):
        assert abs(bar.centre - (found[0].centre + (day - days[0]) * step)) <= 1.5


def test_the_usage_chart_shows_a_bar_for_each_day_with_calls_where_it_falls(
    charts: MatplotlibCharts,
) -> None:
    image = charts.usage_chart(title="Tokens and cost", days=_days())
    assert (image.width, image.height) == USAGE_SIZE
    assert size(image.png) == USAGE_SIZE
    used = sorted(USED)
    tokens, cost = bars(image.png, TOKENS_COLOUR), bars(image.png, COST_COLOUR)
    _at_days(tokens, used)
    _at_days(cost, used)
    assert [bar.centre for bar in tokens] == [bar.centre for bar in cost]
    # Heights in proportion: the tallest token bar on day 11, the tallest cost bar on day 20.
    tallest = max(bar.height for bar in tokens)
    for bar, day in zip(tokens, used, strict=True):
        assert abs(bar.height - tallest * USED[day][0] / 90_000) <= 2
    assert max(cost, key=lambda bar: bar.height) == cost[used.index(20)]
    assert tokens[used.index(11)].height == tallest


def test_a_month_without_calls_draws_no_bars(charts: MatplotlibCharts) -> None:
    quiet = [DayUsage(day, 0, 0.0) for day in last_days(NOW)]
    image = charts.usage_chart(title="Tokens and cost", days=quiet)
    assert size(image.png) == USAGE_SIZE
    assert bars(image.png, TOKENS_COLOUR) == [] == bars(image.png, COST_COLOUR)


def test_the_layers_chart_is_one_bar_of_segments_as_long_as_their_share_of_the_budget(
    charts: MatplotlibCharts,
) -> None:
    layers = [
        LayerTokens("system", 400),
        LayerTokens("pins", 200),
        LayerTokens("profile", 0),
        LayerTokens("summary", 1_400),
        LayerTokens("recall", 600),
        LayerTokens("recent", 2_400),
    ]
    image = charts.layers_chart(title="Layers", layers=layers, budget=8_000)
    assert (image.width, image.height) == LAYERS_SIZE == size(image.png)
    colours = [LAYER_COLOURS[layer.layer] for layer in layers] + [UNUSED_COLOUR]
    widths = widths_in_busiest_row(image.png, colours)
    whole = sum(widths)
    assert whole > 0.8 * LAYERS_SIZE[0]
    for width, tokens in zip(widths, [layer.tokens for layer in layers] + [3_000], strict=True):
        assert abs(width - whole * tokens / 8_000) <= 3, (widths, tokens)
    assert widths[2] == 0  # no profile: no segment


def test_days_without_calls_count_as_zero_and_other_days_are_left_out() -> None:
    days = last_days(NOW, count=3)
    assert days == ["2026-11-28", "2026-11-29", "2026-11-30"]

    def line(day: str, prompt: int, completion: int, cost: float) -> SpendLine:
        return SpendLine(day, "console:local:general", "m", "chat", 1, prompt, 0, completion, cost)

    lines = [
        line("2026-11-27", 500, 500, 1.0),
        line("2026-11-28", 100, 20, 0.01),
        line("2026-11-28", 30, 0, 0.002),
        line("2026-11-30", 7, 3, 0.0),
    ]
    assert daily_usage(lines, days) == [
        DayUsage("2026-11-28", 150, 0.012),
        DayUsage("2026-11-29", 0, 0.0),
        DayUsage("2026-11-30", 10, 0.0),
    ]


def test_the_alt_text_states_the_totals_and_the_busiest_day() -> None:
    alt = usage_alt("this channel", _days())
    assert alt == (
        "Tokens and cost per day for this channel, 2026-11-01 to 2026-11-30 (UTC): "
        "total 170k tokens, $1.45; busiest day 2026-11-12 with 90k tokens, $0.3; "
        "costliest day 2026-11-21 with $0.9; calls on 4 of 30 days."
    )
    quiet = [DayUsage(day, 0, 0.0) for day in last_days(NOW)]
    assert usage_alt("this channel", quiet).endswith(": no model calls in these 30 days.")
    layers = [LayerTokens("system", 400), LayerTokens("recent", 3_600)]
    assert layers_alt("this channel", layers, 8_000) == (
        "The prompt for this channel by layer, against its budget: 4,000 of 8,000 tokens "
        "(50%); system 400, recent 3,600; 4,000 left."
    )


def test_short_numbers() -> None:
    assert [short_number(n) for n in (0, 950, 1_000, 12_345, 1_200_000, 3e9)] == [
        "0",
        "950",
        "1k",
        "12k",
        "1.2M",
        "3B",
    ]
