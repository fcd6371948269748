"""How long ``/usage chart`` and ``/stats chart`` take to draw, and whether the event loop
stalls meanwhile.

Draws the 30-day usage chart and the layers bar through the bot's own code (``bot.core.charts``
over ``MatplotlibCharts``, in a worker thread as the commands do), the first time in a fresh
process (matplotlib imported and its font cache made then) and ``--repeat`` times after,
while a ticker on the event loop records how late it wakes (a stall shows as lag).

    .venv/bin/python bench/charts.py
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.charts import MatplotlibCharts
from bot.core.charts import layers_chart, usage_chart
from bot.core.models import Conversation
from bot.core.ports.spend import ModelCall
from bot.store.memory import MemoryStore

TICK = 0.005


async def ticker(lags: list[float], stop: asyncio.Event) -> None:
    """How late each 5 ms sleep wakes, in ms."""
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(TICK)
        lags.append((time.perf_counter() - started - TICK) * 1000)


async def draw(store: MemoryStore, charts: MatplotlibCharts, now: float) -> tuple[float, float]:
    """ms to draw the usage chart, then the layers bar."""
    started = time.perf_counter()
    await usage_chart(store, charts, channel_key="slack:T1:C1", now=now, where="#general")
    middle = time.perf_counter()
    layers = {"system": 120, "pins": 80, "profile": 40, "summary": 900, "recall": 600}
    await layers_chart(charts, breakdown={**layers, "recent": 4000}, budget=8000, where="here")
    return (middle - started) * 1000, (time.perf_counter() - middle) * 1000


async def run(repeat: int) -> None:
    store = MemoryStore()
    now = time.time()
    channel = Conversation("slack", "T1", "C1")
    for day in range(30):
        for _ in range(20):
            at = now - day * 86400
            call = ModelCall(at, channel, "U1", "gpt-4o-mini", "chat", 3000, 0, 200, 0.001)
            await store.record_call(call=call)
    charts = MatplotlibCharts()
    lags: list[float] = []
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(lags, stop))
    first = await draw(store, charts, now)
    first_lag = max(lags)
    lags.clear()
    later = [await draw(store, charts, now) for _ in range(repeat)]
    stop.set()
    await ticking
    charts.close()
    print(f"first draw in this process: usage {first[0]:.0f} ms, layers {first[1]:.0f} ms;")
    print(f"  the event loop's worst lag meanwhile: {first_lag:.1f} ms")
    usage = statistics.median(u for u, _ in later)
    layer = statistics.median(b for _, b in later)
    print(f"next {repeat} draws, median: usage {usage:.0f} ms, layers {layer:.0f} ms;")
    print(f"  the event loop's worst lag meanwhile: {max(lags):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    asyncio.run(run(parser.parse_args().repeat))


if __name__ == "__main__":
    main()
