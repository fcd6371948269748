"""Two ``bot run`` processes on one database file (Slack HTTP mode, each on its own port):
the same message delivered to both, or the same signed ``/pin`` replayed to both, is stored
and acted on once. The database refuses the second copy, not either process's memory."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

import yaml

from tests.conftest import config_dict
from tests.e2e.reliability.test_crash import free_port_taken
from tests.e2e.slack.test_run import ROOT, fake_slack_thread, wait_for
from tests.e2e.test_run_shutdown import free_port
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers

__all__ = ["fake_slack_thread"]

SECRET = "two-processes-secret"
FORM = "application/x-www-form-urlencoded"


def start_bot(tmp_path: Path, llm: FakeLLM, fake: FakeSlack, port: int) -> subprocess.Popen[str]:
    slack = {"enabled": True, "mode": "http", "host": "127.0.0.1", "port": port}
    data = config_dict(
        llm.url, tmp_path / "bot.sqlite3", slack={**slack, "api_base_url": fake.api_url}
    )
    config = tmp_path / f"config-{port}.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET)
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def post(port: int, body: str, content_type: str) -> int:
    headers = signed_headers(SECRET, body, content_type=content_type)
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/slack/events", data=body.encode(), headers=headers
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


def test_two_processes_on_one_database_store_and_answer_a_message_once(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    fake = fake_slack_thread
    ports = [free_port(), free_port()]
    first = start_bot(tmp_path, llm_thread, fake, ports[0])
    wait_for(lambda: free_port_taken(ports[0]), "the first bot to serve")
    second = start_bot(tmp_path, llm_thread, fake, ports[1])
    bots = [first, second]
    question = {"type": "message", "user": "U1", "text": f"<@{BOT_USER}> once?", "channel": "C1"}
    question.update(channel_type="channel", ts="80.1")
    pin = urlencode(
        {
            "command": "/pin",
            "text": "the freeze starts Monday",
            "user_id": "U1",
            "user_name": "ana",
            "channel_id": "C1",
            "team_id": TEAM,
            "response_url": fake.response_url("pin"),
            "trigger_id": "80.2.ab",
        }
    )
    try:
        wait_for(lambda: free_port_taken(ports[1]), "the second bot to serve")
        for n, port in enumerate(ports):  # one message, two deliveries, one to each process
            body = {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{n}"}
            assert post(port, json.dumps({**body, "event": question}), "application/json") == 200
            assert post(port, pin, FORM) == 200
        wait_for(lambda: fake.called("chat.update") and fake.responses, "the answer and the pin")
        time.sleep(1.0)  # room for a second answer or pin, if one were coming
    finally:
        for bot in bots:
            bot.send_signal(signal.SIGTERM)
        for bot in bots:
            bot.communicate(timeout=30)
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    try:
        questions = db.execute("SELECT COUNT(*) FROM messages WHERE role = 'user'").fetchone()
        pins = db.execute("SELECT text FROM pins").fetchall()
    finally:
        db.close()
    assert questions == (1,)
    assert pins == [("the freeze starts Monday",)]
    assert len(llm_thread.chat_requests) == 1
    assert len(fake.called("chat.postMessage")) == 1
    assert len(fake.responses) == 1
