"""The Slack adapter in Socket Mode: ``apps.connections.open`` on the fake Web API hands out
a local websocket; events and slash commands pushed over it are acknowledged and handled."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.slack.platform import SlackPlatform
from bot.config import parse_config
from bot.core.ports.platform import PlatformError
from bot.wiring import open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack

ENV = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_APP_TOKEN": "xapp-test-token"}


@pytest.fixture
async def connected(tmp_path: Path, llm: FakeLLM) -> AsyncIterator[tuple[SlackPlatform, FakeSlack]]:
    async with FakeSlack({"U1": "Ana"}) as fake:
        slack = {"enabled": True, "mode": "socket", "api_base_url": fake.api_url}
        raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack)
        async with open_app(parse_config(raw, ENV)) as app:
            platform = SlackPlatform(engine=app.engine, settings=app.config.slack)
            await platform.start()
            try:
                yield platform, fake
            finally:
                await platform.stop()
        assert not platform.connected


async def test_socket_mode_connects_acks_an_event_and_answers_it(
    connected: tuple[SlackPlatform, FakeSlack],
) -> None:
    platform, fake = connected
    assert platform.connected
    (opened,) = [c for c in fake.calls if c.method == "apps.connections.open"]
    assert opened.headers["authorization"] == "Bearer xapp-test-token"
    event = {
        "type": "message",
        "user": "U1",
        "text": f"<@{BOT_USER}> hi over the socket",
        "channel": "C1",
        "channel_type": "channel",
        "ts": "10.1",
    }
    body = {"type": "event_callback", "team_id": TEAM, "event_id": "Ev1", "event": event}
    envelope = await fake.push("events_api", body)
    assert await fake.ack_for(envelope) == {"envelope_id": envelope}
    assert platform.listeners is not None
    await platform.listeners.settle()
    assert [m["text"] for m in fake.messages()] == ["echo: [Ana] hi over the socket"]
    redelivered = await fake.push("events_api", body, retry_attempt=1)
    await fake.ack_for(redelivered)
    await platform.listeners.settle()
    assert len(fake.called("chat.update")) == 1


async def test_socket_mode_slash_command_is_acked_then_answered(
    connected: tuple[SlackPlatform, FakeSlack],
) -> None:
    platform, fake = connected
    form = {
        "command": "/pin",
        "text": "the office closes at 6",
        "user_id": "U1",
        "user_name": "ana",
        "channel_id": "C1",
        "team_id": TEAM,
        "response_url": fake.response_url("pin"),
    }
    envelope = await fake.push("slash_commands", form)
    assert (await fake.ack_for(envelope))["envelope_id"] == envelope
    assert platform.listeners is not None
    await platform.listeners.settle()
    (response,) = fake.responses
    assert "Pinned #1: the office closes at 6" in response.params["text"]


async def test_a_refused_app_token_stops_start_with_one_line(tmp_path: Path, llm: FakeLLM) -> None:
    async with FakeSlack() as fake:
        fake.fail("apps.connections.open", Failure(error="invalid_auth"))
        slack = {"enabled": True, "mode": "socket", "api_base_url": fake.api_url}
        raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack)
        async with open_app(parse_config(raw, ENV)) as app:
            platform = SlackPlatform(engine=app.engine, settings=app.config.slack)
            with pytest.raises(
                PlatformError, match=r"apps\.connections\.open failed: invalid_auth"
            ):
                await platform.start()
            await platform.stop()


def stored_texts(db_path: Path) -> list[str]:
    db = sqlite3.connect(db_path)
    try:
        return [row[0] for row in db.execute("SELECT content FROM messages ORDER BY id")]
    finally:
        db.close()


def said(text: str, ts: str, user: str = "U7") -> dict[str, Any]:
    event = {"type": "message", "user": user, "text": text, "channel": "C1", "ts": ts}
    return {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{ts}", "event": event}


async def test_socket_mode_acks_an_event_only_once_its_message_is_stored(
    tmp_path: Path, connected: tuple[SlackPlatform, FakeSlack]
) -> None:
    _, fake = connected
    fake.delays["U7"] = 3.0  # nobody can say who U7 is for a while
    envelope = await fake.push("events_api", said("the vault code is 4711", "11.1"))
    await fake.ack_for(envelope)
    assert stored_texts(tmp_path / "bot.sqlite3") == ["the vault code is 4711"]


async def test_socket_mode_does_not_ack_what_it_could_not_store(
    tmp_path: Path, llm: FakeLLM
) -> None:
    """Another process holds the database's write lock past the busy timeout: the event is
    not acknowledged, and Slack's redelivery is stored, once."""
    db_path = tmp_path / "bot.sqlite3"
    async with FakeSlack({"U1": "Ana"}) as fake:
        slack = {"enabled": True, "mode": "socket", "api_base_url": fake.api_url}
        raw = config_dict(llm.url, db_path, slack=slack, storage={"busy_timeout_ms": 200})
        async with open_app(parse_config(raw, ENV)) as app:
            platform = SlackPlatform(engine=app.engine, settings=app.config.slack)
            await platform.start()
            try:
                blocker = sqlite3.connect(db_path, isolation_level=None)
                blocker.execute("BEGIN IMMEDIATE")
                body = said("keep this", "12.1", user="U1")
                refused = await fake.push("events_api", body)
                await asyncio.sleep(1.5)
                assert [a for a in fake.acks if a.get("envelope_id") == refused] == []
                blocker.execute("ROLLBACK")
                blocker.close()
                retried = await fake.push("events_api", body, retry_attempt=1)
                await fake.ack_for(retried)
                again = await fake.push("events_api", body, retry_attempt=2)
                await fake.ack_for(again)
            finally:
                await platform.stop()
    assert stored_texts(db_path) == ["keep this"]
