"""The charts port (:class:`bot.core.ports.charts.Charts`) drawn with matplotlib.

matplotlib is imported on the first chart, not with the bot: most runs draw none.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.ports.charts import DayUsage, Image, LayerTokens


class MatplotlibCharts:
    """PNG charts of a fixed size, drawn off-screen (Agg), safe to call from worker threads:
    each chart is a figure of its own, never pyplot's shared state."""

    def usage_chart(self, *, title: str, days: Sequence[DayUsage]) -> Image:
        from bot.charts.draw import usage_chart

        return usage_chart(title=title, days=days)

    def layers_chart(self, *, title: str, layers: Sequence[LayerTokens], budget: int) -> Image:
        from bot.charts.draw import layers_chart

        return layers_chart(title=title, layers=layers, budget=budget)
