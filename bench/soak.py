"""Soak: N messages at a given rate through the Slack HTTP endpoint of a running ``bot run``.

The bot runs as its own process (Slack HTTP mode) with its real code; this script plays Slack
(signed ``event_callback`` requests to ``/slack/events``, and a fake Web API that the bot posts
to) and the model (``tests/support/fake_llm.py``, answering instantly by default). Each message
mentions the bot in one of ``--channels`` channels, carries a unique marker, and is sent at its
scheduled time without waiting for earlier replies. Run from the repository root::

    .venv/bin/python bench/soak.py --messages 2000 --rate 40 --channels 20

Printed figures:

- accepted: requests the bot answered with HTTP 200 (Slack's acknowledgement);
- delivered: answers that reached the fake Slack (``chat.update`` of the *Thinking…* message
  with the echo of that very message);
- lost: accepted messages missing from the bot's database after it stopped (must be 0), and
  accepted messages never answered (must be 0);
- overhead p50/p99: per message, from sending the request to the answer arriving at the fake
  Slack, minus the time the model server spent on that message's requests: the bot's own
  work (Bolt, engine, SQLite, two Web API calls, the HTTP round trips), not the model's;
- peak memory: the bot process's maximum resident set size (``getrusage`` of the child).

``--budget`` (default 1,000 tokens) is small enough that summaries run during the soak.
``--synchronous`` (default full) sets ``storage.synchronous``.
Exits 1 when anything is lost or unanswered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiohttp
import yaml
from aiohttp import web

from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS
from bot.core.memory.tokens import install_encodings
from tests.support.fake_llm import FakeLLM, Reply, echo
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers

ROOT = Path(__file__).resolve().parent.parent
SECRET = "soak-signing-secret"
MARKER = re.compile(r"soak-(\d+)")


class TimedLLM(FakeLLM):
    """The test server, recording how long it spent on each message's chat requests."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.model_seconds: dict[int, float] = {}
        self.summaries = 0
        self.responder = self._answer
        self._delay = delay

    def _answer(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if messages and messages[0]["content"] == SUMMARY_INSTRUCTIONS:
            self.summaries += 1
            return Reply(text="Facts:\n- none\nNarrative:\nPeople said numbered things.")
        return Reply(text=str(echo(body)), delay=self._delay)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        try:
            return await super()._chat(request)
        finally:
            body = json.loads(await request.read())
            last = body["messages"][-1]["content"] if body.get("messages") else ""
            found = MARKER.search(str(last))
            if found and body["messages"][0]["content"] != SUMMARY_INSTRUCTIONS:
                n = int(found.group(1))
                spent = time.perf_counter() - started
                self.model_seconds[n] = self.model_seconds.get(n, 0.0) + spent


class TimedSlack(FakeSlack):
    """The fake Web API, recording when each message's answer arrived."""

    def __init__(self) -> None:
        super().__init__({f"U{i}": f"user{i}" for i in range(100)})
        self.delivered_at: dict[int, float] = {}

    async def _api(self, request: web.Request) -> web.Response:
        response = await super()._api(request)
        call = self.calls[-1] if self.calls else None
        if call is not None and call.method == "chat.update":
            found = MARKER.search(str(call.params.get("text", "")))
            if found:
                self.delivered_at.setdefault(int(found.group(1)), time.perf_counter())
        return response


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def event_body(n: int, channels: int) -> str:
    event = {
        "type": "message",
        "user": f"U{n % 100}",
        "text": f"<@{BOT_USER}> question soak-{n} about item {n % 97}",
        "channel": f"C{n % channels:04d}",
        "channel_type": "channel",
        "ts": f"{1_800_000_000 + n}.000100",
    }
    body = {
        "token": "unused",
        "team_id": TEAM,
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": f"EvSoak{n}",
        "event_time": int(time.time()),
        "event": event,
    }
    return json.dumps(body)


def start_bot(
    folder: Path, llm_url: str, api_url: str, port: int, budget: int, synchronous: str
) -> subprocess.Popen[str]:
    data = {
        "system_prompt": "You are a helpful assistant in a team chat.",
        "llm": {
            "base_url": llm_url,
            "chat_model": "gpt-4o-mini",
            "summary_model": "gpt-4o-mini",
            "timeout_seconds": 60,
        },
        "memory": {"max_context_tokens": budget},
        "storage": {"path": str(folder / "bot.sqlite3"), "synchronous": synchronous},
        "logging": {"level": "WARNING"},
        "slack": {
            "enabled": True,
            "mode": "http",
            "host": "127.0.0.1",
            "port": port,
            "api_base_url": api_url,
        },
    }
    config = folder / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLACK_BOT_TOKEN": "xoxb-soak-token",
        "SLACK_SIGNING_SECRET": SECRET,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


async def wait_until_serving(http: aiohttp.ClientSession, url: str) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "ready"})
    for _ in range(600):
        headers = signed_headers(SECRET, body, content_type="application/json")
        try:
            async with http.post(url, data=body.encode(), headers=headers) as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    raise SystemExit("the bot never started serving")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def soak(args: argparse.Namespace) -> int:
    install_encodings()
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    llm, slack = TimedLLM(args.model_delay), TimedSlack()
    await llm.start()
    await slack.start()
    port = free_port()
    bot = start_bot(folder, llm.url, slack.api_url, port, args.budget, args.synchronous)
    url = f"http://127.0.0.1:{port}/slack/events"
    sent_at: dict[int, float] = {}
    accepted: set[int] = set()
    refused = 0
    connector = aiohttp.TCPConnector(limit=200)
    async with aiohttp.ClientSession(connector=connector) as http:
        await wait_until_serving(http, url)

        async def send(n: int) -> None:
            nonlocal refused
            body = event_body(n, args.channels)
            headers = signed_headers(SECRET, body, content_type="application/json")
            sent_at[n] = time.perf_counter()
            try:
                async with http.post(url, data=body.encode(), headers=headers) as response:
                    if response.status == 200:
                        accepted.add(n)
                    else:
                        refused += 1
            except aiohttp.ClientError:
                refused += 1

        # Warm-up: the first messages load the tokenizer and open connections; they are
        # checked for loss like the rest but left out of the timings.
        for n in range(args.warmup):
            await send(n)
            while n not in slack.delivered_at:  # noqa: ASYNC110 (state owned by the fakes)
                await asyncio.sleep(0.01)
        started = time.perf_counter()
        tasks = []
        for n in range(args.warmup, args.warmup + args.messages):
            delay = started + (n - args.warmup) / args.rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(send(n)))
        await asyncio.gather(*tasks)
        sending = time.perf_counter() - started
        deadline = time.perf_counter() + args.settle
        while time.perf_counter() < deadline and not accepted <= set(slack.delivered_at):  # noqa: ASYNC110
            await asyncio.sleep(0.1)
        finished = time.perf_counter() - started
    bot.send_signal(signal.SIGTERM)
    _, stderr = await asyncio.to_thread(bot.communicate, timeout=120)
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    await llm.aclose()
    await slack.aclose()

    db = sqlite3.connect(folder / "bot.sqlite3")
    stored = {
        int(found.group(1))
        for (content,) in db.execute("SELECT content FROM messages WHERE role = 'user'")
        if (found := MARKER.search(content))
    }
    (summaries,) = db.execute("SELECT COUNT(*) FROM summaries").fetchone()
    db.close()
    delivered = accepted & set(slack.delivered_at)
    lost = len(accepted - stored)
    unanswered = len(accepted - delivered)
    timed = [n for n in delivered if n >= args.warmup]
    overhead_ms = [
        (slack.delivered_at[n] - sent_at[n] - llm.model_seconds.get(n, 0.0)) * 1000 for n in timed
    ]
    model_ms = [llm.model_seconds.get(n, 0.0) * 1000 for n in timed]
    print(
        f"messages sent:       {args.messages:,} at {args.rate:g}/s over {args.channels} channels"
    )
    print(f"sending took:        {sending:.1f} s (all answered after {finished:.1f} s)")
    print(f"messages accepted:   {len(accepted):,} (refused {refused})")
    print(f"replies delivered:   {len(delivered):,}")
    print(f"lost:                {lost} not stored, {unanswered} not answered")
    if overhead_ms:
        print(
            f"overhead (ms):       p50 {statistics.median(overhead_ms):.1f}  "
            f"p99 {percentile(overhead_ms, 0.99):.1f}  max {max(overhead_ms):.1f}"
        )
        print(f"model time (ms):     p50 {statistics.median(model_ms):.1f}  (excluded above)")
    print(f"summaries made:      {summaries} ({llm.summaries} summary requests)")
    print(f"peak memory (bot):   {peak_kib / 1024:.1f} MiB")
    if bot.returncode != 0:
        print(f"bot exited with {bot.returncode}:\n{stderr}", file=sys.stderr)
        return 1
    return 1 if lost or unanswered or refused else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000)
    parser.add_argument("--rate", type=float, default=40.0, help="messages per second")
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--budget", type=int, default=1000, help="memory.max_context_tokens")
    parser.add_argument(
        "--synchronous", choices=["full", "normal"], default="full", help="storage.synchronous"
    )
    parser.add_argument("--model-delay", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--warmup", type=int, default=20, help="untimed messages first")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds to wait for answers")
    return asyncio.run(soak(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
