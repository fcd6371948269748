"""``bot run`` as a process with Slack enabled: it connects over Socket Mode to the local
fake, answers an event, keeps the tokens out of its logs and stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack
from tests.support.paths import ROOT

BOT_TOKEN = "xoxb-secret-bot-token-123"
APP_TOKEN = "xapp-secret-app-token-456"


@pytest.fixture
def fake_slack_thread() -> Iterator[FakeSlack]:
    fake = FakeSlack.start_in_thread({"U1": "Ana"})
    try:
        yield fake
    finally:
        fake.stop()


def write_config(tmp_path: Path, llm: FakeLLM, fake: FakeSlack, **logging: object) -> Path:
    slack = {"enabled": True, "api_base_url": fake.api_url}
    logs = {"level": "DEBUG", **logging}
    data = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack, logging=logs)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def wait_for(condition: Callable[[], object], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def test_bot_run_connects_to_slack_answers_and_stops_on_sigterm(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    fake = fake_slack_thread
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
    }
    config = write_config(tmp_path, llm_thread, fake)
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: fake.called("apps.connections.open"), "the socket to open")
        event = {
            "type": "message",
            "user": "U1",
            "text": f"<@{BOT_USER}> hello from a process",
            "channel": "D1",
            "channel_type": "im",
            "ts": "20.1",
        }
        body = {"type": "event_callback", "team_id": TEAM, "event_id": "EvP", "event": event}
        envelope = fake.call(fake.push("events_api", body))
        assert fake.call(fake.ack_for(envelope))["envelope_id"] == envelope
        answer = "echo: [Ana] hello from a process"
        wait_for(lambda: [m["text"] for m in fake.messages()][-1:] == [answer], "the answer")
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "slack connected" in stderr
    assert BOT_TOKEN not in stdout + stderr and APP_TOKEN not in stdout + stderr
    assert fake.calls[0].headers["authorization"] == f"Bearer {BOT_TOKEN}"


def test_bot_run_says_when_slack_refuses_the_token(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    fake_slack_thread.fail("auth.test", Failure(error="invalid_auth"))
    env = {"PYTHONPATH": str(ROOT), "SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "run",
            "--config",
            str(write_config(tmp_path, llm_thread, fake_slack_thread)),
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert (
        result.stderr.strip().splitlines()[-1] == "bot run: slack: auth.test failed: invalid_auth"
    )


def run_and_answer(tmp_path: Path, llm: FakeLLM, fake: FakeSlack, text: str, **logging: object):
    """``bot run`` at DEBUG answering one DM over Socket Mode; its stderr."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SLACK_BOT_TOKEN": BOT_TOKEN}
    env["SLACK_APP_TOKEN"] = APP_TOKEN
    config = write_config(tmp_path, llm, fake, **logging)
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: len(fake.called("apps.connections.open")) > len(fake.acks), "the socket")
        event = {"type": "message", "user": "U1", "text": text, "channel": "D1"}
        event.update(channel_type="im", ts=f"{time.time():.6f}")
        body = {"type": "event_callback", "team_id": TEAM, "event_id": text, "event": event}
        fake.call(fake.ack_for(fake.call(fake.push("events_api", body))))
        wait_for(lambda: any(text in m["text"] for m in fake.messages()), "the answer")
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    return stderr


def test_slack_sdk_debug_lines_stay_out_of_a_debug_log_unless_asked_for(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    quiet = run_and_answer(tmp_path, llm_thread, fake_slack_thread, "private words one")
    assert " DEBUG " in quiet  # the bot's own debug lines are there
    assert " DEBUG slack_sdk" not in quiet and "private words one" not in quiet
    loud = run_and_answer(
        tmp_path, llm_thread, fake_slack_thread, "private words two", slack_sdk_debug=True
    )
    assert " DEBUG slack_sdk" in loud and "private words two" in loud
