"""``bot run`` on Slack catches up on start: what people wrote while it was stopped is read
back from the (fake) Web API's history, stored once, in order, and never answered."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import config_dict
from tests.e2e.slack.test_run import APP_TOKEN, BOT_TOKEN, ROOT, wait_for
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack

CHANNEL = "C1"


@pytest.fixture
def fake() -> Iterator[FakeSlack]:
    server = FakeSlack.start_in_thread({"U1": "Ana", "U2": "Ben"})
    try:
        yield server
    finally:
        server.stop()


class Bot:
    """``bot run`` as a process, started and stopped by the test."""

    def __init__(self, tmp_path: Path, llm: FakeLLM, fake: FakeSlack, **catch_up: Any) -> None:
        self.fake = fake
        self.db = tmp_path / "bot.sqlite3"
        slack = {"enabled": True, "api_base_url": fake.api_url}
        data = config_dict(llm.url, self.db, slack=slack, logging={"level": "DEBUG"})
        if catch_up:
            data["catch_up"] = catch_up
        self.config = tmp_path / "config.yaml"
        self.config.write_text(yaml.safe_dump(data))
        self.process: subprocess.Popen[str] | None = None
        self.events = 0

    def start(self) -> None:
        connected = self.fake.connections
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_APP_TOKEN": APP_TOKEN,
            "BOT_PROGRESS_SECONDS": "0",  # a progress line per conversation caught up
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(self.config)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for(lambda: self.fake.connections > connected, "the socket to connect")

    def stop(self) -> str:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        _, stderr = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, stderr
        self.process = None
        return stderr

    def say(self, text: str, ts: str, user: str = "U1") -> None:
        """A message arriving live (an event over the socket)."""
        self.events += 1
        event = {"type": "message", "user": user, "text": text, "channel": CHANNEL, "ts": ts}
        event["channel_type"] = "channel"
        body = {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{ts}", "event": event}
        self.fake.write(CHANNEL, event)
        self.fake.call(self.fake.push("events_api", body))

    def ask(self, text: str, ts: str) -> None:
        """A question to the bot; waits for its answer."""
        answers = len(self.fake.called("chat.update"))
        self.say(f"<@{BOT_USER}> {text}", ts)
        wait_for(lambda: len(self.fake.called("chat.update")) > answers, "the answer")

    def stored(self) -> list[tuple[str, str | None]]:
        with sqlite3.connect(self.db) as db:
            rows = db.execute(
                "SELECT content, platform_message_id FROM messages"
                " WHERE conversation = ? AND role = 'user' ORDER BY id",
                (f"slack:{TEAM}:{CHANNEL}",),
            ).fetchall()
        return [(str(content), mid) for content, mid in rows]


def ts(offset: float) -> str:
    return f"{time.time() + offset:.6f}"


def written_while_stopped(fake: FakeSlack, texts: list[str], *, start: float) -> list[str]:
    stamps = []
    for index, text in enumerate(texts):
        stamp = f"{start + index:.6f}"
        fake.write(CHANNEL, {"type": "message", "user": "U2", "text": text, "ts": stamp})
        stamps.append(stamp)
    return stamps


def last_prompt(llm: FakeLLM) -> str:
    return json.dumps(llm.chat_requests[-1]["messages"])


def test_what_was_written_while_stopped_is_in_the_next_prompt_and_not_answered(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    first = ts(-100)
    bot.ask("hello", first)
    bot.stop()
    written_while_stopped(
        fake, ["the deploy key rotates on fridays", "lunch moved to noon"], start=time.time() - 50
    )

    bot.start()
    wait_for(lambda: len(bot.stored()) == 3, "the catch-up to be stored")
    posts = len(fake.called("chat.postMessage"))
    bot.ask("when does the key rotate?", ts(0))
    stderr = bot.stop()

    prompt = last_prompt(llm_thread)
    assert "[Ben] the deploy key rotates on fridays" in prompt
    assert "[Ben] lunch moved to noon" in prompt
    assert [text for text, _ in bot.stored()] == [
        "hello",
        "the deploy key rotates on fridays",
        "lunch moved to noon",
        "when does the key rotate?",
    ]
    # Only the question was answered: one placeholder, none for what was caught up.
    assert len(fake.called("chat.postMessage")) == posts + 1
    assert "slack catch-up: started (1 conversation)" in stderr
    assert "slack catch-up: 1/1 conversation (100%)" in stderr
    assert "slack: caught up 2 messages written while stopped, in 1 conversation" in stderr
    history = fake.called("conversations.history")
    assert history[0]["oldest"] == first and history[0]["channel"] == CHANNEL


def test_a_message_already_stored_is_not_stored_twice(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    bot.say("first", ts(-100))
    bot.say("second", ts(-90))
    wait_for(lambda: len(bot.stored()) == 2, "the live messages")
    bot.stop()
    # The newest stored message is not the newest the bot had seen: "second" came first and
    # "first" last, so history after "first"'s time still holds "second".
    with sqlite3.connect(bot.db) as db:
        db.execute("UPDATE messages SET created_at = created_at - 1000 WHERE content = 'second'")
    written_while_stopped(fake, ["third"], start=time.time() - 50)

    bot.start()
    wait_for(lambda: len(bot.stored()) == 3, "the catch-up")
    stderr = bot.stop()

    ids = [mid for _, mid in bot.stored()]
    assert len(ids) == len(set(ids)) == 3
    assert "slack: caught up 1 message written while stopped" in stderr


def test_at_most_max_messages_the_most_recent_are_caught_up(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake, max_messages=3)
    bot.start()
    bot.say("before", ts(-100))
    wait_for(lambda: len(bot.stored()) == 1, "the live message")
    bot.stop()
    written_while_stopped(fake, [f"note {n}" for n in range(5)], start=time.time() - 50)

    bot.start()
    wait_for(lambda: len(bot.stored()) == 4, "the catch-up")
    stderr = bot.stop()

    assert [text for text, _ in bot.stored()] == ["before", "note 2", "note 3", "note 4"]
    assert "caught up 3 messages" in stderr
    assert "more than 3 written while stopped" in stderr


def test_the_history_rate_limit_is_waited_out_fifteen_a_call(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    bot.say("before", ts(-100))
    wait_for(lambda: len(bot.stored()) == 1, "the live message")
    bot.stop()
    written_while_stopped(fake, [f"note {n}" for n in range(20)], start=time.time() - 50)
    fake.history_limit = (1, 2.0)

    bot.start()
    wait_for(lambda: len(bot.stored()) == 21, "the catch-up", timeout=60)
    stderr = bot.stop()

    assert [text for text, _ in bot.stored()][1:] == [f"note {n}" for n in range(20)]
    assert all(int(call["limit"]) <= 15 for call in fake.called("conversations.history"))
    assert fake.called("conversations.history!ratelimited")
    assert "caught up 20 messages" in stderr


def test_what_the_rate_limit_keeps_from_being_read_is_logged(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    bot.say("before", ts(-100))
    wait_for(lambda: len(bot.stored()) == 1, "the live message")
    bot.stop()
    written_while_stopped(fake, ["lost to the limit"], start=time.time() - 50)
    refused = Failure(status=429, error="ratelimited", retry_after=0)
    fake.fail("conversations.history", *[refused] * 4)

    bot.start()
    wait_for(lambda: len(fake.called("conversations.history!ratelimited")) == 4, "the refusals")
    bot.ask("still there?", ts(0))
    stderr = bot.stop()

    assert f"1 conversation not caught up: slack:{TEAM}:{CHANNEL}" in stderr
    assert "caught up 0 messages" in stderr
    assert "lost to the limit" not in [text for text, _ in bot.stored()]


def test_catch_up_hours_zero_turns_it_off(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake, hours=0)
    bot.start()
    bot.say("before", ts(-100))
    wait_for(lambda: len(bot.stored()) == 1, "the live message")
    bot.stop()
    written_while_stopped(fake, ["not read back"], start=time.time() - 50)

    bot.start()
    bot.ask("anyone?", ts(0))
    bot.stop()

    assert [text for text, _ in bot.stored()] == ["before", "anyone?"]
    assert not fake.called("conversations.history")


def test_a_live_message_during_catch_up_is_stored_after_what_was_caught_up(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    bot.say("before", ts(-100))
    wait_for(lambda: len(bot.stored()) == 1, "the live message")
    bot.stop()
    written_while_stopped(fake, ["while away 1", "while away 2"], start=time.time() - 50)
    fake.slow["conversations.history"] = 1.5

    bot.start()
    wait_for(lambda: "conversations.history" in fake.arrived, "the catch-up to begin")
    bot.say("live during catch-up", ts(0))
    wait_for(lambda: len(bot.stored()) == 4, "everything stored")
    bot.stop()

    assert [text for text, _ in bot.stored()] == [
        "before",
        "while away 1",
        "while away 2",
        "live during catch-up",
    ]


def test_a_catch_up_another_process_has_begun_is_left_to_it(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    bot.say("before", ts(-100))
    wait_for(lambda: len(bot.stored()) == 1, "the live message")
    bot.stop()
    written_while_stopped(fake, ["read back by the other process"], start=time.time() - 50)
    with sqlite3.connect(bot.db) as db:  # another process on this database is catching up
        db.execute(
            "INSERT INTO leases (name, holder, expires_at) VALUES (?, 'other', ?)",
            (f"catch-up:slack:{TEAM}", time.time() + 600),
        )

    bot.start()
    bot.ask("anyone?", ts(0))
    stderr = bot.stop()

    assert "another process is catching up" in stderr
    assert not fake.called("conversations.history")
    assert [text for text, _ in bot.stored()] == ["before", "anyone?"]
