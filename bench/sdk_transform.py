"""How long a chat request holds the event loop, by prompt length: the ``openai`` SDK's typed
``messages`` parameter against the bot's client, which puts the messages in the body as they are.

What it shows: the SDK walks every message of its typed parameter against its union of message
types before sending (Python, with the GIL held), so that work grows with the prompt and stalls
every other conversation of the process meanwhile. The bot's client (``bot/llm/openai.py``)
sends the same body without that walk (``tests/integration/test_llm_stream.py`` checks the
bodies are equal). The model server runs in a process of its own
(``tests/support/llm_process.py``, answering at once), so what is timed is the bot's side.

For each prompt length, ``--requests`` requests go one after another each way, interleaved,
while a ticker task sleeps 1 ms at a time and notes how late it wakes. Printed per length and
way: the median time per request, and the longest loop stall.

Run from the repository root::

    .venv/bin/python bench/sdk_transform.py
    .venv/bin/python bench/sdk_transform.py --lengths 100 400 --requests 40
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai

from bench.loop_lag import ticker
from bot.llm.openai import OpenAIChatModel, RetryPolicy, make_client

ROOT = Path(__file__).resolve().parent.parent
MODEL = "gpt-4o-mini"


def prompt(length: int) -> list[dict[str, str]]:
    """A system prompt and ``length - 1`` chat turns of a sentence or two each."""
    turns = [
        {
            "role": "user" if n % 2 else "assistant",
            "content": f"[Ana] message {n}: the deploy window moved to Thursday, see ticket {n}",
        }
        for n in range(1, length)
    ]
    return [{"role": "system", "content": "You are a helpful assistant in a team chat."}, *turns]


async def timed(send: Callable[[], Awaitable[object]], lags: list[float]) -> tuple[float, float]:
    """How long ``send`` took, and the longest the ticker woke late meanwhile (ms)."""
    first = len(lags)
    started = time.perf_counter()
    await send()
    return (time.perf_counter() - started) * 1000, max(lags[first:], default=0.0) * 1000


async def measure(url: str, lengths: list[int], requests: int) -> None:
    client = make_client(base_url=url, api_key="bench-key", timeout=30, max_retries=0)
    ours = OpenAIChatModel(client, MODEL, policy=RetryPolicy(retries=0, timeout=30, deadline=60))
    lags: list[float] = []
    stop = asyncio.Event()
    ticking = asyncio.create_task(ticker(lags, stop))
    print(f"{'messages':>8}  {'way':<16}{'ms/request p50':>15}{'worst stall ms':>16}")
    try:
        for length in lengths:
            messages = prompt(length)

            async def typed(messages: list[dict[str, str]] = messages) -> object:
                return await client.chat.completions.create(
                    model=MODEL,
                    messages=messages,  # type: ignore[arg-type]
                    max_tokens=16,
                )

            async def direct(messages: list[dict[str, str]] = messages) -> object:
                return await ours.complete(messages, max_tokens=16)

            await typed()
            await direct()  # warm connections and imports
            figures: dict[str, list[tuple[float, float]]] = {
                "typed parameter": [],
                "bot client": [],
            }
            for _ in range(requests):
                figures["typed parameter"].append(await timed(typed, lags))
                figures["bot client"].append(await timed(direct, lags))
            for way, runs in figures.items():
                p50 = statistics.median(ms for ms, _ in runs)
                worst = max(stall for _, stall in runs)
                print(f"{length:>8}  {way:<16}{p50:>15.1f}{worst:>16.1f}")
    finally:
        stop.set()
        await ticking
        await client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[20, 100, 300])
    parser.add_argument("--requests", type=int, default=20, help="per length and way")
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llm_process"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        print(f"openai {openai.__version__}; server {url}")
        asyncio.run(measure(url, args.lengths, args.requests))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
