"""The charts, drawn with matplotlib's Agg renderer onto figures of their own (no pyplot, no
display): bars in flat colours, no edges, so that each series is one colour on the image."""

from __future__ import annotations

import io
from collections.abc import Sequence

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter, MaxNLocator

from bot.core.charts import short_number
from bot.core.cost import CURRENCY
from bot.core.ports.charts import DayUsage, Image, LayerTokens

DPI = 100
USAGE_SIZE = (1000, 560)
"""Width and height of the usage chart, in pixels."""
LAYERS_SIZE = (1000, 300)
TOKENS_COLOUR = "#2b6cb0"
COST_COLOUR = "#d97706"
LAYER_COLOURS = {
    "system": "#4a5568",
    "pins": "#d69e2e",
    "profile": "#805ad5",
    "summary": "#38a169",
    "recall": "#e53e3e",
    "recent": "#3182ce",
}
OTHER_LAYER_COLOURS = ("#319795", "#b83280", "#744210")
"""For layers the table above does not name, in turn."""
UNUSED_COLOUR = "#e2e8f0"
"""The part of the budget the prompt leaves unused."""
_GRID = "#cbd5e0"
_TICK_EVERY = 5  # days between the dates on the usage chart's axis
_BAR_WIDTH = 0.7


def _figure(size: tuple[int, int]) -> Figure:
    figure = Figure(figsize=(size[0] / DPI, size[1] / DPI), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Figure, title: str) -> Image:
    canvas = figure.canvas
    assert isinstance(canvas, FigureCanvasAgg)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI, metadata={"Title": title})
    width, height = canvas.get_width_height()
    return Image(png=buffer.getvalue(), width=width, height=height)


def _bars(axes: Axes, values: Sequence[float], colour: str, label: str) -> None:
    axes.bar(range(len(values)), values, width=_BAR_WIDTH, color=colour, linewidth=0)
    axes.set_ylabel(label)
    axes.set_ylim(0, max(values, default=0) * 1.1 or 1)
    axes.yaxis.set_major_locator(MaxNLocator(nbins=4))
    axes.grid(axis="y", color=_GRID, linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def usage_chart(*, title: str, days: Sequence[DayUsage]) -> Image:
    """Tokens above, cost below, a bar a day."""
    figure = _figure(USAGE_SIZE)
    tokens, cost = figure.subplots(2, 1, sharex=True)
    _bars(tokens, [day.tokens for day in days], TOKENS_COLOUR, "tokens")
    _bars(cost, [day.cost for day in days], COST_COLOUR, f"cost ({CURRENCY})")
    tokens.yaxis.set_major_formatter(FuncFormatter(lambda value, _: short_number(value)))
    cost.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{CURRENCY}{value:,.2f}"))
    cost.set_xlim(-0.5, len(days) - 0.5)
    marked = list(range(len(days) - 1, -1, -_TICK_EVERY))[::-1]
    cost.set_xticks(marked, [days[index].day[5:] for index in marked])
    figure.suptitle(title)
    return _png(figure, title)


def _colours(layers: Sequence[LayerTokens]) -> list[str]:
    others = iter(OTHER_LAYER_COLOURS * len(layers))
    return [LAYER_COLOURS.get(layer.layer) or next(others) for layer in layers]


def layers_chart(*, title: str, layers: Sequence[LayerTokens], budget: int) -> Image:
    """One bar: the budget's length in the unused colour, each layer's segment over it from
    the left, in order; a legend below names each with its tokens."""
    figure = _figure(LAYERS_SIZE)
    axes = figure.subplots()
    total = sum(layer.tokens for layer in layers)
    axes.barh(0, budget, height=0.6, color=UNUSED_COLOUR, linewidth=0)
    start = 0
    colours = _colours(layers)
    for layer, colour in zip(layers, colours, strict=True):
        if layer.tokens:
            axes.barh(0, layer.tokens, left=start, height=0.6, color=colour, linewidth=0)
        start += layer.tokens
    axes.set_xlim(0, max(budget, total, 1))
    axes.set_ylim(-0.5, 0.5)
    axes.set_yticks([])
    axes.set_xlabel("tokens")
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: short_number(value)))
    for side in ("top", "right", "left"):
        axes.spines[side].set_visible(False)
    handles = [Patch(color=colour) for colour in colours]
    labels = [f"{layer.layer} {layer.tokens:,}" for layer in layers]
    handles.append(Patch(color=UNUSED_COLOUR))
    labels.append(f"unused {max(budget - total, 0):,}")
    figure.legend(handles, labels, loc="outside lower center", ncol=4, frameon=False)
    figure.suptitle(title)
    return _png(figure, title)
