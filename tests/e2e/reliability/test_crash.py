"""Crash: the bot killed with SIGKILL while replies and summaries are in flight.

The bot (``tests/e2e/reliability/crash_driver.py``: the real app, eight console channels talking at
once) runs as a process against the local test server in this process. Once the history is
long enough for summaries to run, the server starts holding every request; when replies and a
summary are held, the bot is killed.

A user message is *acknowledged* when the bot has shown that it took it: either its answer was
printed (``answered c<n> <i>``), or the prompt answering it reached the model server (the engine
builds a prompt only from what is already committed to the database). Every acknowledged
message must be in the database after the kill, exactly once, the database must pass
``PRAGMA integrity_check``, and ``bot chat`` on the same file must carry the conversation on.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import config_dict, is_summary_request, respond
from tests.e2e.slack.test_run import ROOT, fake_slack_thread, wait_for
from tests.e2e.test_run_shutdown import free_port
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers

__all__ = ["fake_slack_thread"]

CHANNELS, MESSAGES = 8, 40
DRIVER_ARGS = ("--channels", str(CHANNELS), "--messages", str(MESSAGES))
CHAT_ARGS = ("--channel", "c0", "--user", "Ana")
QUESTION = re.compile(r"\[Ana\] (c\d+ m\d+)$")


class Holding:
    """Answers at once; once armed, holds the next summary request and every request after it."""

    def __init__(self) -> None:
        self.armed = False
        self.held = False
        self.held_chats: list[str] = []
        self.held_summaries = 0

    def __call__(self, body: dict[str, Any]) -> Reply:
        if self.armed and is_summary_request(body):
            self.held = True
        if not self.held:
            return Reply(text=respond(body))
        if is_summary_request(body):
            self.held_summaries += 1
        else:
            self.held_chats.append(body["messages"][-1]["content"])
        return Reply(text="too late", delay=120)


def asked(llm: FakeLLM) -> set[str]:
    """The user messages whose prompts reached the server."""
    found = set()
    for body in llm.chat_requests:
        if not is_summary_request(body):
            match = QUESTION.match(body["messages"][-1]["content"])
            if match:
                found.add(match.group(1))
    return found


def test_sigkill_mid_reply_and_summary_loses_no_acknowledged_message(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    server = Holding()
    llm_thread.responder = server
    db_path = tmp_path / "bot.sqlite3"
    config = tmp_path / "config.yaml"
    data = config_dict(
        llm_thread.url,
        db_path,
        memory={"max_context_tokens": 300, "summary_retry_seconds": 0},
        llm={"timeout_seconds": 300},
    )
    config.write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.reliability.crash_driver", str(config), *DRIVER_ARGS],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    answered: list[str] = []

    def read() -> None:
        assert driver.stdout is not None
        for line in driver.stdout:
            if line.startswith("answered "):
                channel, index = line.split()[1:]
                answered.append(f"{channel} m{index}")

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # Enough history for summaries in every channel, then hold everything.
        wait_for(lambda: len(answered) >= CHANNELS * 12, "answers before the hold")
        server.armed = True
        wait_for(
            lambda: len(server.held_chats) >= CHANNELS // 2 and server.held_summaries >= 1,
            "replies and a summary in flight",
        )
        time.sleep(0.2)  # let other writes race the kill too
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
        reader.join(timeout=10)
    assert driver.returncode == -signal.SIGKILL

    acknowledged = set(answered) | asked(llm_thread)
    assert len(acknowledged) > len(answered)  # some were in flight, unanswered
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = [row[0] for row in db.execute("SELECT content FROM messages WHERE role = 'user'")]
        for message in acknowledged:
            assert stored.count(message) == 1, message
        answers = {
            row[0]
            for row in db.execute(
                "SELECT q.content FROM messages a JOIN messages q ON a.reply_to = q.id"
            )
        }
        assert set(answered) <= answers  # an answer that was shown is remembered with it
        # Every summary that was saved covers exactly the rows it says it covers.
        summaries = db.execute(
            "SELECT conversation, covers_through_turn, message_count FROM summaries"
        ).fetchall()
        assert summaries
        for key, through, count in summaries:
            (covered,) = db.execute(
                "SELECT COUNT(*) FROM messages WHERE conversation = ?"
                " AND COALESCE(reply_to, id) <= ?",
                (key, through),
            ).fetchone()
            assert count == covered, key
    finally:
        db.close()

    # The conversation goes on from the same file.
    server.armed = server.held = False
    before = len(llm_thread.chat_requests)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "chat", "--config", str(config), *CHAT_ARGS],
        input="what did I say before?\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["echo: [Ana] what did I say before?"]
    after = [b for b in llm_thread.chat_requests[before:] if not is_summary_request(b)]
    prompt = "\n".join(m["content"] for m in after[-1]["messages"])
    assert "c0 m" in prompt  # it remembers the time before the crash


def test_sigkill_loses_no_slack_message_the_bot_acknowledged(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    """On Slack a message is acknowledged by the HTTP 200 to its event: Slack will not send
    it again. Messages acknowledged while an earlier reply in their channel is still with
    the model must already be stored when the bot is killed, and answered, once each and in
    order, when it is started again."""
    llm_thread.responder = lambda body: Reply(text="too late", delay=120)
    port = free_port()
    db_path = tmp_path / "bot.sqlite3"
    slack = {"enabled": True, "mode": "http", "host": "127.0.0.1", "port": port}
    data = config_dict(
        llm_thread.url, db_path, slack={**slack, "api_base_url": fake_slack_thread.api_url}
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="crash-secret")

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(config)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    bot = start()
    url = f"http://127.0.0.1:{port}/slack/events"

    def event(n: int, text: str) -> int:
        message = {"type": "message", "user": "U1", "text": text, "channel": "C1"}
        message.update(channel_type="channel", ts=f"60.{n}")
        body = json.dumps(
            {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{n}", "event": message}
        )
        headers = signed_headers("crash-secret", body, content_type="application/json")
        request = urllib.request.Request(url, data=body.encode(), headers=headers)
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)

    try:
        wait_for(lambda: fake_slack_thread.called("auth.test"), "the bot to sign in")
        wait_for(lambda: free_port_taken(port), "the bot to serve")
        assert event(1, f"<@{BOT_USER}> first question") == 200
        wait_for(lambda: llm_thread.chat_requests, "the first question at the model")
        assert event(2, f"<@{BOT_USER}> second question, same channel") == 200
        assert event(3, "chatter meanwhile") == 200
        time.sleep(0.5)
    finally:
        bot.send_signal(signal.SIGKILL)
        bot.communicate(timeout=30)
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = [row[0] for row in db.execute("SELECT content FROM messages ORDER BY id")]
    finally:
        db.close()
    assert stored == ["first question", "second question, same channel", "chatter meanwhile"]

    llm_thread.responder = lambda body: f"answer {len(llm_thread.chat_requests)}"

    def answers() -> list[str]:  # the killed process's "Thinking..." message is replaced
        return [m["text"] for m in fake_slack_thread.messages()]

    restarted = start()
    try:
        wait_for(lambda: "answer 3" in answers(), "the answers", timeout=60)
        time.sleep(1)  # nothing more comes
    finally:
        restarted.send_signal(signal.SIGTERM)
        _, stderr = restarted.communicate(timeout=30)
    assert answers() == ["answer 2", "answer 3"], stderr  # the model's 2nd and 3rd answers
    prompts = [json.dumps(r["messages"]) for r in llm_thread.chat_requests[1:]]
    assert "first question" in prompts[0] and "second question" not in prompts[0]
    assert "second question" in prompts[1]


def free_port_taken(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


BURST = 300


def test_sigkill_after_a_burst_from_new_people_loses_no_acknowledged_message(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    """300 messages from people the bot has never seen, while ``users.info`` takes seconds
    to name each of them; the bot is killed the moment the last HTTP 200 arrives. Every
    message that got its 200 is in the database: Slack will never send those again."""
    people = [f"U{100 + n}" for n in range(BURST)]
    lookup = 1.5  # seconds users.info takes for each of them
    fake_slack_thread.delays.update(dict.fromkeys(people, lookup))
    port = free_port()
    db_path = tmp_path / "bot.sqlite3"
    slack = {"enabled": True, "mode": "http", "host": "127.0.0.1", "port": port}
    data = config_dict(
        llm_thread.url, db_path, slack={**slack, "api_base_url": fake_slack_thread.api_url}
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="crash-secret")

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(config)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    bot = start()
    url = f"http://127.0.0.1:{port}/slack/events"

    def send(n: int) -> tuple[str, int]:
        text = f"burst message {n}"
        message = {"type": "message", "user": people[n], "text": text, "channel": "C1"}
        message.update(channel_type="channel", ts=f"70.{n:04d}")
        body = json.dumps(
            {"type": "event_callback", "team_id": TEAM, "event_id": f"EvB{n}", "event": message}
        )
        headers = signed_headers("crash-secret", body, content_type="application/json")
        request = urllib.request.Request(url, data=body.encode(), headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return text, int(response.status)
        except OSError:
            return text, 0

    try:
        wait_for(lambda: fake_slack_thread.called("auth.test"), "the bot to sign in")
        wait_for(lambda: free_port_taken(port), "the bot to serve")
        with ThreadPoolExecutor(max_workers=30) as pool:
            results = list(pool.map(send, range(BURST)))
    finally:
        bot.send_signal(signal.SIGKILL)
        bot.communicate(timeout=30)
        time.sleep(lookup)  # the fake finishes the lookups it was asked for
    acknowledged = {text for text, status in results if status == 200}
    assert len(acknowledged) == BURST
    db = sqlite3.connect(db_path)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = [row[0] for row in db.execute("SELECT content FROM messages")]
    finally:
        db.close()
    missing = acknowledged - set(stored)
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged messages lost"
    assert len(stored) == len(set(stored))
