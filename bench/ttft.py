"""Time to first visible text: how long after the model writes its first token people see it.

The bot runs in this process against the fake Slack (HTTP mode, signed events) or the fake
Discord (gateway and REST), and a local model server that streams each answer's first token
after ``--first-token`` seconds, then ``--tokens-per-second``. Questions arrive at ``--rate``
a second over ``--channels`` channels. For each answer: the bot's share of the wait (when its
first text reached the platform's API, minus when the model wrote that text), and the platform
API calls it took (posts, edits, deletes; Slack's thinking message included).

    .venv/bin/python bench/ttft.py --platform slack --messages 200 --rate 20
    .venv/bin/python bench/ttft.py --platform discord --messages 200 --rate 20
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.adapters.discord.platform import DiscordPlatform
from bot.config import parse_config
from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS
from bot.wiring import open_app
from tests.conftest import config_dict
from tests.support.fake_discord import FakeDiscord, FakeGuild, Person
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, FakeSlack
from tests.support.slack_bot import ENV, serving, slack_settings

MARKER = re.compile(r"q(\d+)x")
_ANSWER_METHODS = (
    "chat.postMessage",
    "chat.update",
    "chat.delete",
    "chat.startStream",
    "chat.appendStream",
    "chat.stopStream",
)
GUILD, TOKEN = 5001, "fake.bot.token"
BOT = Person(900, "Memory Bot", bot=True)
ASKER = Person(7001, "Ana")


def marker(text: str) -> int | None:
    found = MARKER.search(text)
    return int(found.group(1)) if found else None


class StreamingLLM(FakeLLM):
    """Answers ``q<N>x`` then ``words`` words, the first after ``first`` seconds, then one
    every ``1/rate``; records when each answer's first token was written."""

    def __init__(self, first: float, rate: float, words: int) -> None:
        super().__init__()
        self.first, self.gap, self.words = first, 1 / rate, words
        self.first_token: dict[int, float] = {}
        self.responder = self._answer

    def _answer(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages and messages[0]["content"] == SUMMARY_INSTRUCTIONS:
            return Reply(text="Facts:\n- none\nNarrative:\nQuestions were asked.")
        n = marker(str(messages[-1]["content"]))
        text = f"q{n}x " + " ".join(f"word{i}" for i in range(self.words))
        return Reply(text=text, delay=self.first, piece_delay=self.gap)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = json.loads(await request.read())
        n = marker(str(body["messages"][-1]["content"]))
        if n is not None and body.get("stream"):
            # the first piece goes out after the delay and one gap (tests/support/fake_llm.py)
            self.first_token.setdefault(n, time.perf_counter() + self.first + self.gap)
        return await super()._chat(request)


class Seen:
    """When each answer's first text reached the platform, and the calls answers took."""

    def __init__(self) -> None:
        self.first_text: dict[int, float] = {}
        self.finished: set[int] = set()
        self.calls: Counter[str] = Counter()

    def saw(self, text: str, words: int) -> None:
        n = marker(text)
        if n is not None:
            self.first_text.setdefault(n, time.perf_counter())
            if f"word{words - 1}" in text:
                self.finished.add(n)


class TimedSlack(FakeSlack):
    def __init__(self, seen: Seen, words: int) -> None:
        super().__init__({"U1": "Ana"})
        self.seen, self.words = seen, words
        self._streamed: dict[str, str] = {}

    async def _api(self, request: web.Request) -> web.Response:
        response = await super()._api(request)
        call = self.calls[-1]
        if call.method.split("!")[0] in _ANSWER_METHODS:
            self.seen.calls[call.method] += 1
            text = call.params.get("text") or call.params.get("markdown_text") or ""
            chunks = call.params.get("chunks") or []
            text += "".join(str(c.get("text", "")) for c in chunks if isinstance(c, dict))
            if "Stream" in call.method:  # a stream's calls carry what they add
                ts = str(call.params.get("ts"))
                text = self._streamed[ts] = self._streamed.get(ts, "") + str(text)
            self.seen.saw(str(text), self.words)
        return response


class TimedDiscord(FakeDiscord):
    def __init__(self, seen: Seen, words: int, channels: int) -> None:
        guild = FakeGuild(GUILD, "Team", channels={6000 + c: f"c{c}" for c in range(channels)})
        super().__init__(guilds=[guild], bot=BOT, token=TOKEN)
        self.seen, self.words = seen, words

    def _send(self, request: web.Request, body: Any, channel_id: str) -> web.Response:
        self.seen.calls["send"] += 1
        self.seen.saw(str(body.get("content") or ""), self.words)
        return super()._send(request, body, channel_id)

    def _edit(
        self, request: web.Request, body: Any, channel_id: str, message_id: str
    ) -> web.Response:
        self.seen.calls["edit"] += 1
        self.seen.saw(str(body.get("content") or ""), self.words)
        return super()._edit(request, body, channel_id, message_id)


async def paced(args: argparse.Namespace, ask: Any) -> None:
    """Ask the questions at ``--rate`` a second, without waiting for answers."""
    started = time.perf_counter()
    tasks = []
    for n in range(args.messages):
        delay = started + n / args.rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(ask(n)))
    await asyncio.gather(*tasks)


async def until_finished(seen: Seen, count: int, within: float) -> None:
    deadline = time.perf_counter() + within
    while len(seen.finished) < count and time.perf_counter() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)  # the fakes' handlers tell nobody; polling is the bench


async def run_slack(args: argparse.Namespace, llm: StreamingLLM, seen: Seen, db: Path) -> None:
    async with TimedSlack(seen, args.words) as fake:
        raw = config_dict(llm.url, db, slack=slack_settings(fake))
        async with open_app(parse_config(raw, ENV)) as app, serving(app, fake) as slack:

            async def ask(n: int) -> None:
                text = f"<@{BOT_USER}> question q{n}x"
                event = {"type": "message", "user": "U1", "text": text, "ts": f"{1.8e9 + n:.6f}"}
                event.update(channel=f"C{n % args.channels:04d}", channel_type="channel")
                if args.threads:  # answered in the thread: streamed with Slack's API
                    event["thread_ts"] = f"{1.7e9 + n % args.channels:.6f}"
                assert await slack.event(event) == 200

            await paced(args, ask)
            await until_finished(seen, args.messages, args.timeout)


async def run_discord(args: argparse.Namespace, llm: StreamingLLM, seen: Seen, db: Path) -> None:
    async with TimedDiscord(seen, args.words, args.channels) as fake:
        with fake.pointed_at():
            raw = config_dict(llm.url, db, discord={"enabled": True})
            async with open_app(parse_config(raw, {"DISCORD_TOKEN": TOKEN})) as app:
                platform = DiscordPlatform(
                    engine=app.engine, settings=app.config.discord, guild_ready_timeout=0.05
                )
                await platform.start()
                try:

                    async def ask(n: int) -> None:
                        channel = 6000 + n % args.channels
                        await fake.say(
                            ASKER,
                            f"<@{BOT.id}> question q{n}x",
                            channel_id=channel,
                            guild_id=GUILD,
                            mentions=(BOT,),
                        )

                    await paced(args, ask)
                    await until_finished(seen, args.messages, args.timeout)
                finally:
                    await platform.stop()


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def bench(args: argparse.Namespace) -> int:
    seen = Seen()
    async with StreamingLLM(args.first_token, args.tokens_per_second, args.words) as llm:
        with tempfile.TemporaryDirectory() as folder:
            run = run_slack if args.platform == "slack" else run_discord
            await run(args, llm, seen, Path(folder) / "bot.sqlite3")
        shares = [
            (seen.first_text[n] - llm.first_token[n]) * 1000
            for n in seen.first_text
            if n in llm.first_token
        ]
    answered = len(seen.finished)
    print(
        f"{args.platform}: {args.messages} questions at {args.rate:g}/s over {args.channels} "
        f"channels; model: first token after {args.first_token * 1000:.0f} ms, then "
        f"{args.tokens_per_second:g} tokens/s, {args.words + 1} tokens an answer"
    )
    print(f"  answered in full: {answered} of {args.messages}")
    if not shares:
        print("  no answer showed any text")
        return 1
    print(
        "  bot's share of the time to first visible text (first text at the platform minus "
        f"the model's first token): median {percentile(shares, 0.5):.1f} ms, "
        f"p95 {percentile(shares, 0.95):.1f} ms, max {max(shares):.1f} ms"
    )
    total = sum(seen.calls.values())
    detail = ", ".join(
        f"{name} {count / max(answered, 1):.2f}" for name, count in seen.calls.items()
    )
    print(f"  platform API calls per answer: {total / max(answered, 1):.2f} ({detail})")
    return 0 if answered == args.messages else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", choices=["slack", "discord"], default="slack")
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20.0, help="questions a second")
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--first-token", type=float, default=0.3, help="seconds")
    parser.add_argument("--tokens-per-second", type=float, default=30.0)
    parser.add_argument("--words", type=int, default=60, help="tokens an answer, after the first")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument(
        "--threads", action="store_true", help="Slack: ask in threads (Slack's streaming API)"
    )
    return asyncio.run(bench(parser.parse_args()))


if __name__ == "__main__":
    raise SystemExit(main())
