"""A running Slack adapter in HTTP mode against the local fake Slack: signed requests to the
app served on 127.0.0.1, what it sent read from the fake Web API."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bot.adapters.slack.platform import EVENTS_PATH, SlackPlatform
from bot.wiring import App
from tests.support.fake_slack import TEAM, FakeSlack, signed_headers

SECRET = "test-signing-secret"
ENV = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_SIGNING_SECRET": SECRET}
USERS = {"U1": "Ana", "U2": "Bo", "U3": "Cy", "U9": "Admin"}


class Slack:
    """Sends what Slack would send to the app; reads what the app sent to the fake API."""

    def __init__(self, platform: SlackPlatform, fake: FakeSlack, http: aiohttp.ClientSession):
        self.platform = platform
        self.fake = fake
        self.http = http
        self.url = f"http://127.0.0.1:{platform.port}{EVENTS_PATH}"
        self._events = 0

    async def post(self, body: str, content_type: str, *, age: float = 0, secret: str = SECRET):
        headers = signed_headers(secret, body, content_type=content_type, age=age)
        async with self.http.post(self.url, data=body.encode(), headers=headers) as response:
            return response.status, await response.text()

    async def event(self, event: dict[str, Any], *, event_id: str | None = None) -> int:
        self._events += 1
        body = {
            "token": "unused",
            "team_id": TEAM,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id or f"Ev{self._events}",
            "event_time": int(time.time()),
            "event": event,
        }
        status, _ = await self.post(json.dumps(body), "application/json")
        return status

    async def say(self, user: str, text: str, channel: str = "C1", **fields: Any) -> str:
        """A person's message; returns its ts."""
        self._events += 1
        ts = fields.pop("ts", f"{1700000000 + self._events}.000001")
        message = {"type": "message", "user": user, "text": text, "channel": channel, "ts": ts}
        message["channel_type"] = "im" if channel.startswith("D") else "channel"
        assert await self.event({**message, **fields}) == 200
        await self.settle()
        return ts

    async def command(self, name: str, text: str = "", user: str = "U1", channel: str = "C1"):
        form = {
            "command": f"/{name}",
            "text": text,
            "user_id": user,
            "user_name": USERS[user].lower(),
            "channel_id": channel,
            "team_id": TEAM,
            "response_url": self.fake.response_url(f"{name}-{len(self.fake.responses)}"),
            "trigger_id": f"{time.time_ns()}.{len(self.fake.responses)}",
        }
        status, body = await self.post(urlencode(form), "application/x-www-form-urlencoded")
        await self.settle()
        return status, body

    async def interact(self, payload: dict[str, Any]) -> tuple[int, str]:
        """An interaction (a shortcut, a modal submitted), as Slack posts it; the status and
        the body the app answered with."""
        form = urlencode({"payload": json.dumps(payload)})
        answer = await self.post(form, "application/x-www-form-urlencoded")
        await self.settle()
        return answer

    async def settle(self) -> None:
        assert self.platform.listeners is not None
        await self.platform.listeners.settle()

    def last_response(self) -> dict[str, Any]:
        return self.fake.responses[-1].params


def slack_settings(fake: FakeSlack, **overrides: Any) -> dict[str, Any]:
    settings = {
        "enabled": True,
        "mode": "http",
        "host": "127.0.0.1",
        "port": 0,
        "api_base_url": fake.api_url,
        "answer_channels": ["CALL"],
        "admin_user_ids": ["U9"],
    }
    return {**settings, **overrides}


@asynccontextmanager
async def serving(app: App, fake: FakeSlack) -> AsyncIterator[Slack]:
    """``app``'s Slack endpoint started, and a Slack to talk to it, until the block ends."""
    platform = SlackPlatform(engine=app.engine, settings=app.config.slack)
    await platform.start()
    try:
        async with aiohttp.ClientSession() as http:
            yield Slack(platform, fake, http)
    finally:
        await platform.stop()
