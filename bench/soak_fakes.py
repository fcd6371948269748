"""bench/soak.py's side of the wire: Slack (signed events in, a fake Web API out) and the model,
timing each message by the marker it carries (``soak-N``)."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from typing import Any

from aiohttp import web

from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS
from tests.support.fake_llm import FakeLLM, Reply, echo
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack

SECRET = "soak-signing-secret"
MARKER = re.compile(r"soak-(\d+)")


def marker(text: str) -> int | None:
    found = MARKER.search(text)
    return int(found.group(1)) if found else None


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
        # The marker first: an answer streamed shows it in its first text, so a message
        # counts as answered once its answer starts to show, as people see it.
        n = marker(str(messages[-1]["content"])) if messages else None
        return Reply(text=f"soak-{n} {echo(body)}", delay=self._delay)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        try:
            return await super()._chat(request)
        finally:
            body = json.loads(await request.read())
            last = body["messages"][-1]["content"] if body.get("messages") else ""
            n = marker(str(last))
            if n is not None and body["messages"][0]["content"] != SUMMARY_INSTRUCTIONS:
                spent = time.perf_counter() - started
                self.model_seconds[n] = self.model_seconds.get(n, 0.0) + spent


class TimedSlack(FakeSlack):
    """The fake Web API, recording when each message's answer arrived, and how many times."""

    def __init__(self) -> None:
        super().__init__({f"U{i}": f"user{i}" for i in range(100)})
        self.delivered_at: dict[int, float] = {}
        self.deliveries: Counter[int] = Counter()
        """Messages each answer was shown in."""
        self._shown_in: dict[int, set[str]] = {}

    async def _api(self, request: web.Request) -> web.Response:
        response = await super()._api(request)
        call = self.calls[-1] if self.calls else None
        if call is not None and call.method == "chat.update":
            n = marker(str(call.params.get("text", "")))
            if n is not None:
                self.delivered_at.setdefault(n, time.perf_counter())
                # an answer streamed into its message updates it more than once: one delivery
                shown = self._shown_in.setdefault(n, set())
                shown.add(str(call.params.get("ts")))
                self.deliveries[n] = len(shown)
        return response


def event_body(n: int, channels: int) -> str:
    """Slack's ``event_callback`` for message ``n``: a mention of the bot in one of
    ``channels`` channels, carrying its marker."""
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
