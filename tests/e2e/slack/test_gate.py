"""``bot run`` in Slack HTTP mode under a flood of requests Slack never sends: unsigned, badly
signed, stale, oversized and signed but malformed. Each gets a 4xx, the log keeps one short
line per reason, and a real message is still stored and answered afterwards."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import aiohttp
import pytest
import yaml

from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers
from tests.support.paths import ROOT

SECRET = "flood-test-signing-secret"
BURST = 200
MARKER = "BODY-TEXT-MARKER"
"""In every refused body: it must never reach the log."""
JSON_TYPE = "application/json"
FORM_TYPE = "application/x-www-form-urlencoded"
NOT_UTF8 = b"\xff\xfe\x00\x1b[31m" + MARKER.encode() + b"\x07\x80"


@dataclass
class Bot:
    """A running ``bot run`` and everything it wrote to stderr so far."""

    process: subprocess.Popen[bytes]
    url: str = ""
    stderr: bytearray = field(default_factory=bytearray)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)


def _read(bot: Bot, ready: threading.Event) -> None:
    assert bot.process.stderr is not None
    for line in bot.process.stderr:
        bot.stderr += line
        found = re.search(rb"serving /slack/events on 127\.0\.0\.1:(\d+)", line)
        if found:
            bot.url = f"http://127.0.0.1:{int(found[1])}/slack/events"
            ready.set()


@pytest.fixture
def fake_slack_thread() -> Iterator[FakeSlack]:
    fake = FakeSlack.start_in_thread({"U1": "Ana"})
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def bot(tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack) -> Iterator[Bot]:
    slack = {
        "enabled": True,
        "mode": "http",
        "host": "127.0.0.1",
        "port": 0,
        "api_base_url": fake_slack_thread.api_url,
    }
    data = config_dict(llm_thread.url, tmp_path / "bot.sqlite3", slack=slack)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLACK_BOT_TOKEN": "xoxb-flood-test",
        "SLACK_SIGNING_SECRET": SECRET,
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    running = Bot(process)
    ready = threading.Event()
    reader = threading.Thread(target=_read, args=(running, ready), daemon=True)
    reader.start()
    try:
        assert ready.wait(30), running.stderr.decode(errors="replace")
        yield running
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        reader.join(timeout=30)


def sign(body: bytes, *, secret: str = SECRET, age: float = 0) -> dict[str, str]:
    """Slack's signature over the raw bytes (which need not be UTF-8)."""
    timestamp = str(int(time.time() - age))
    base = b"v0:" + timestamp.encode() + b":" + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={digest}"}


async def burst(url: str, body: bytes, headers: dict[str, str], *, times: int = BURST) -> list[int]:
    """POST the same request ``times`` times, a few at once; the status codes."""
    gate = asyncio.Semaphore(16)

    async def one(http: aiohttp.ClientSession) -> int:
        async with gate, http.post(url, data=body, headers=headers) as response:
            await response.read()
            return response.status

    async with aiohttp.ClientSession() as http:
        return list(await asyncio.gather(*(one(http) for _ in range(times))))


def event_body(event: dict[str, object], event_id: str) -> bytes:
    body = {"type": "event_callback", "team_id": TEAM, "event_id": event_id, "event": event}
    return json.dumps(body).encode()


async def wait_for_answer(fake: FakeSlack, text: str) -> None:
    deadline = time.monotonic() + 30
    while not any(m["text"] == text for m in fake.messages()):
        assert time.monotonic() < deadline, f"no answer {text!r}: {fake.messages()}"
        await asyncio.sleep(0.05)


async def a_message_is_still_stored_and_answered(bot: Bot, fake: FakeSlack) -> None:
    event = {
        "type": "message",
        "user": "U1",
        "text": f"<@{BOT_USER}> still there?",
        "channel": "D1",
        "channel_type": "im",
        "ts": "1700000000.000100",
    }
    body = event_body(event, "EvGood")
    statuses = await burst(bot.url, body, {"Content-Type": JSON_TYPE, **sign(body)}, times=1)
    assert statuses == [200]
    await wait_for_answer(fake, "echo: [Ana] still there?")


def stored_texts(db: Path) -> list[str]:
    with sqlite3.connect(db) as connection:
        return [row[0] for row in connection.execute("SELECT content FROM messages ORDER BY id")]


def check_log(stderr: bytes, started: float) -> list[str]:
    """The log is a few short lines: no traceback, no body text, no control byte; at most one
    line per reason per minute. Returns the lines about refused requests."""
    text = stderr.decode("utf-8")
    assert "Traceback" not in text and "Error handling request" not in text
    assert MARKER not in text and "payload=" not in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), "a control byte in the log"
    refused = [line for line in text.splitlines() if "refused" in line]
    reasons = [re.sub(r"^.*refused \d+ requests? \((.*?)\).*$", r"\1", line) for line in refused]
    minutes = int((time.monotonic() - started) // 60) + 1
    for reason in set(reasons):
        assert reasons.count(reason) <= minutes, refused
    assert all(len(line) < 200 for line in refused), refused
    return refused


UNSIGNED: dict[str, tuple[bytes, str, dict[str, str]]] = {
    "an open brace": (b"{" + MARKER.encode(), JSON_TYPE, {}),
    "bytes that are not UTF-8": (NOT_UTF8, JSON_TYPE, {}),
    "a JSON array": (json.dumps([MARKER]).encode(), JSON_TYPE, {}),
    "a payload that is not JSON": (f"payload={MARKER}".encode(), FORM_TYPE, {}),
    "an event with a wrong signature": (
        event_body({"type": "message", "text": MARKER}, "Ev1"),
        JSON_TYPE,
        {"X-Slack-Request-Timestamp": str(int(time.time())), "X-Slack-Signature": "v0=bad"},
    ),
    "headers that are not a timestamp and a signature": (
        b"{}",
        JSON_TYPE,
        {"X-Slack-Request-Timestamp": f"12 {MARKER}", "X-Slack-Signature": f"v0=\u00e9{MARKER}"},
    ),
}


async def raw_post(url: str, head: bytes, body: bytes) -> int:
    """POST with headers as given, bytes the HTTP client would refuse to send; the status."""
    host, port = url.split("/")[2].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        + head
        + b"Content-Length: %d\r\n\r\n" % len(body)
        + body
    )
    status_line = await reader.readline()
    writer.close()
    await writer.wait_closed()
    return int(status_line.split()[1])


async def test_unsigned_and_badly_signed_floods_get_401_and_a_line_per_reason(
    bot: Bot, fake_slack_thread: FakeSlack, tmp_path: Path
) -> None:
    started = time.monotonic()
    for what, (body, content_type, headers) in UNSIGNED.items():
        statuses = await burst(bot.url, body, {"Content-Type": content_type, **headers})
        assert set(statuses) == {401}, what
    stale = event_body({"type": "message", "text": MARKER}, "Ev2")
    statuses = await burst(bot.url, stale, {"Content-Type": JSON_TYPE, **sign(stale, age=360)})
    assert set(statuses) == {401}, "a stale timestamp"
    control = b"X-Slack-Request-Timestamp: 1\x1b[31m\x07\r\nX-Slack-Signature: v0=\x1b]0;x\x07\r\n"
    long = b"X-Junk: " + MARKER.encode() * 1000 + b"\r\n"
    statuses = [await raw_post(bot.url, head, NOT_UTF8) for head in [control, long] * 10]
    assert set(statuses) == {400}, "not even HTTP"
    wrong = event_body({"type": "message", "text": MARKER}, "Ev3")
    statuses = await burst(bot.url, wrong, {"Content-Type": JSON_TYPE, **sign(wrong, secret="x")})
    assert set(statuses) == {401}, "another app's secret"
    await a_message_is_still_stored_and_answered(bot, fake_slack_thread)
    assert bot.stop() == 0
    refused = check_log(bytes(bot.stderr), started)
    assert len(refused) >= 3, refused  # unsigned, bad signature, stale: each said at least once
    total = sum(int(m) for m in re.findall(r"refused (\d+) request", "\n".join(refused)))
    assert total == BURST * (len(UNSIGNED) + 2) + 20
    assert len(bot.stderr) < 4096
    assert stored_texts(tmp_path / "bot.sqlite3")[0] == "still there?"


SIGNED_MALFORMED: dict[str, tuple[bytes, str]] = {
    "an open brace": (b"{" + MARKER.encode(), JSON_TYPE),
    "bytes that are not UTF-8": (NOT_UTF8, JSON_TYPE),
    "a JSON array": (json.dumps([MARKER]).encode(), JSON_TYPE),
    "a JSON string": (json.dumps(MARKER).encode(), JSON_TYPE),
    "a payload that is not JSON": (f"payload={MARKER}".encode(), FORM_TYPE),
    "a payload that is a JSON array": (f"payload=[%22{MARKER}%22]".encode(), FORM_TYPE),
    "an event callback without an event": (
        json.dumps({"type": "event_callback", "team_id": TEAM, "text": MARKER}).encode(),
        JSON_TYPE,
    ),
    "an event that is not an object": (
        json.dumps({"type": "event_callback", "event": MARKER}).encode(),
        JSON_TYPE,
    ),
    "a message whose text is a number": (
        event_body({"type": "message", "user": "U1", "channel": "C1", "text": 7}, MARKER),
        JSON_TYPE,
    ),
    "an edit whose message is text": (
        event_body({"type": "message", "subtype": "message_changed", "message": MARKER}, "E"),
        JSON_TYPE,
    ),
    "block actions without actions": (
        b"payload=" + quote(json.dumps({"type": "block_actions", "actions": []})).encode(),
        FORM_TYPE,
    ),
    "a shortcut without its channel": (
        b"payload="
        + quote(json.dumps({"type": "message_action", "callback_id": "pin_to_memory"})).encode(),
        FORM_TYPE,
    ),
    "a view submission without its view": (
        b"payload=" + quote(json.dumps({"type": "view_submission", "user": {"id": "U1"}})).encode(),
        FORM_TYPE,
    ),
    "a command without its channel": (
        f"command=/pin&text={MARKER}&user_id=U1&team_id={TEAM}".encode(),
        FORM_TYPE,
    ),
}


async def test_signed_payloads_of_shapes_slack_never_sends_get_400_and_a_line(
    bot: Bot, fake_slack_thread: FakeSlack, tmp_path: Path
) -> None:
    started = time.monotonic()
    for what, (body, content_type) in SIGNED_MALFORMED.items():
        statuses = await burst(bot.url, body, {"Content-Type": content_type, **sign(body)})
        assert set(statuses) == {400}, what
    await a_message_is_still_stored_and_answered(bot, fake_slack_thread)
    assert bot.stop() == 0
    refused = check_log(bytes(bot.stderr), started)
    total = sum(int(m) for m in re.findall(r"refused (\d+) request", "\n".join(refused)))
    assert total == BURST * len(SIGNED_MALFORMED)
    assert len(bot.stderr) < 4096
    assert stored_texts(tmp_path / "bot.sqlite3")[0] == "still there?"


async def test_an_oversized_body_gets_413_unread(bot: Bot, fake_slack_thread: FakeSlack) -> None:
    started = time.monotonic()
    body = b'{"type": "event_callback", "x": "' + MARKER.encode() * 80_000 + b'"}'
    assert len(body) > 1024 * 1024
    for headers in ({}, sign(body)):
        statuses = await burst(bot.url, body, {"Content-Type": JSON_TYPE, **headers}, times=20)
        assert set(statuses) == {413}
    await a_message_is_still_stored_and_answered(bot, fake_slack_thread)
    assert bot.stop() == 0
    (line,) = check_log(bytes(bot.stderr), started)
    assert "refused 40 requests" in line and "too large" in line


async def test_url_verification_still_answers_its_challenge(bot: Bot) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "ch4llenge", "token": "t"})
    headers = signed_headers(SECRET, body, content_type=JSON_TYPE)
    async with (
        aiohttp.ClientSession() as http,
        http.post(bot.url, data=body.encode(), headers=headers) as response,
    ):
        assert response.status == 200
        assert json.loads(await response.text()) == {"challenge": "ch4llenge"}
    assert bot.stop() == 0
    assert "refused" not in bot.stderr.decode()
