"""A busy bot to kill: the real app on a config file, several console channels talking at once.

    python -m tests.e2e.reliability.crash_driver CONFIG --channels 8 --messages 40

Each channel sends ``c<n> m<i>`` for i = 0, 1, ... one after the other, each addressed to the
bot; the channels run concurrently. After each answer it prints ``answered c<n> <i>`` (flushed):
that line is the acknowledgement the person would have seen.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bot.config import load_config
from bot.core.engine import Engine
from bot.core.models import Conversation, IncomingMessage, ReplyKind
from bot.wiring import open_app


def text(channel: int, index: int) -> str:
    return f"c{channel} m{index}"


async def talk(engine: Engine, channel: int, messages: int) -> None:
    where = Conversation.console(f"c{channel}")
    for index in range(messages):
        message = IncomingMessage(where, "ana", "Ana", text(channel, index), addressed=True)
        reply = await engine.handle_message(message)
        if reply is not None and reply.kind is ReplyKind.ANSWER:
            print(f"answered c{channel} {index}", flush=True)


async def run(config: Path, channels: int, messages: int) -> None:
    async with open_app(load_config(config)) as app:
        await asyncio.gather(*(talk(app.engine, n, messages) for n in range(channels)))
        print("done", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("config", type=Path)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--messages", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(run(args.config, args.channels, args.messages))


if __name__ == "__main__":
    main()
