"""``bot run`` as a process with the HTTP endpoint and Slack (a local fake): health and
metrics while it runs, and SIGTERM in the middle of a reply."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from tests.conftest import config_dict
from tests.e2e.slack.test_run import APP_TOKEN, BOT_TOKEN, ROOT, fake_slack_thread, wait_for
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack

__all__ = ["fake_slack_thread"]
SHUTDOWN_BOUND = 25.0  # seconds: 10 s for in-flight replies, 10 s for summaries, start-up


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def start_bot(tmp_path: Path, llm: FakeLLM, fake: FakeSlack, port: int) -> subprocess.Popen[str]:
    data = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        slack={"enabled": True, "api_base_url": fake.api_url},
        http={"host": "127.0.0.1", "port": port},
        logging={"format": "json"},
        llm={"timeout_seconds": 300},  # a slow reply is still in flight at SIGTERM
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "SLACK_BOT_TOKEN": BOT_TOKEN,
        "SLACK_APP_TOKEN": APP_TOKEN,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def mention(fake: FakeSlack, text: str, ts: str) -> None:
    event = {
        "type": "message",
        "user": "U1",
        "text": f"<@{BOT_USER}> {text}",
        "channel": "D1",
        "channel_type": "im",
        "ts": ts,
    }
    body = {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{ts}", "event": event}
    envelope = fake.call(fake.push("events_api", body))
    fake.call(fake.ack_for(envelope))


def test_run_serves_health_and_metrics(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    port = free_port()
    process = start_bot(tmp_path, llm_thread, fake_slack_thread, port)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: fetch(f"{base}/healthz")[0] == 200, "a healthy bot")
        assert fetch(f"{base}/healthz") == (200, "database: ok\nslack: ok\n")
        health = subprocess.run(
            [sys.executable, "-m", "bot", "health", "--config", str(tmp_path / "config.yaml")],
            env={
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "SLACK_BOT_TOKEN": BOT_TOKEN,
                "SLACK_APP_TOKEN": APP_TOKEN,
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert (health.returncode, health.stdout) == (0, "database: ok\nslack: ok\n")
        mention(fake_slack_thread, "hello", "30.1")
        replied = 'bot_replies_out_total{platform="slack"} 1.0'
        wait_for(lambda: replied in fetch(f"{base}/metrics")[1], "the answer, counted")
        status, metrics = fetch(f"{base}/metrics")
        assert status == 200
        assert 'bot_replies_out_total{platform="slack"} 1.0' in metrics
        assert 'bot_llm_request_seconds_count{model="gpt-4o-mini",purpose="chat"} 1.0' in metrics
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert BOT_TOKEN not in stderr and APP_TOKEN not in stderr
    assert all(line.startswith("{") for line in stderr.splitlines()), stderr


def test_sigterm_during_a_reply_exits_in_bounded_time_and_keeps_every_message(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    port = free_port()
    process = start_bot(tmp_path, llm_thread, fake_slack_thread, port)
    try:
        wait_for(lambda: fetch(f"http://127.0.0.1:{port}/healthz")[0] == 200, "a healthy bot")
        mention(fake_slack_thread, "first", "40.1")
        wait_for(lambda: fake_slack_thread.called("chat.update"), "the first answer")
        llm_thread.script(Reply("too late", delay=120))
        mention(fake_slack_thread, "second, in flight", "40.2")
        wait_for(lambda: len(llm_thread.chat_requests) == 2, "the second request")
    finally:
        process.send_signal(signal.SIGTERM)
        started = time.monotonic()
        _, stderr = process.communicate(timeout=60)
    took = time.monotonic() - started
    assert process.returncode == 0, stderr
    assert took < SHUTDOWN_BOUND, f"took {took:.1f} s"
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    rows = db.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    db.close()
    assert rows == [
        ("user", "first"),
        ("assistant", "echo: [Ana] first"),
        ("user", "second, in flight"),
    ]
