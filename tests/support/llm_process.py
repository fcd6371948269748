"""The local OpenAI-compatible test server in a process of its own, answering like the test
suite's ``respond`` (echo, or a fake summary) after a random delay of up to ``--max-delay``
seconds. Prints its URL on the first line of standard output and serves until standard input
closes. The load test uses it so that the server's work does not share the bot's event loop
(or interpreter).

    python -m tests.support.llm_process --max-delay 0.004 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
from typing import Any

from bot.core.memory.tokens import install_encodings
from tests.conftest import respond
from tests.support.fake_llm import FakeLLM, Reply


async def serve(max_delay: float, seed: int) -> None:
    rng = random.Random(seed)

    def answer(body: dict[str, Any]) -> Reply:
        return Reply(text=respond(body), delay=rng.uniform(0.0, max_delay))

    async with FakeLLM() as llm:
        llm.responder = answer
        print(llm.url, flush=True)
        await asyncio.to_thread(sys.stdin.read)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-delay", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    install_encodings()
    asyncio.run(serve(args.max_delay, args.seed))


if __name__ == "__main__":
    main()
