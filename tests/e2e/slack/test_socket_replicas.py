"""Two ``bot run`` processes in Slack Socket Mode on one database: Slack spreads an app's
events over its connections, and the guarantees of one process hold. A conversation's second
question, delivered to the other process while the first is still being answered, is answered
after it; each is stored and answered once."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.e2e.slack.test_catch_up import CHANNEL, Bot, fake, ts
from tests.e2e.slack.test_run import wait_for
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack

__all__ = ["fake"]


def test_two_socket_mode_processes_answer_one_conversation_in_order(
    tmp_path: Path, llm_thread: FakeLLM, fake: FakeSlack
) -> None:
    first, second = Bot(tmp_path, llm_thread, fake), Bot(tmp_path, llm_thread, fake)
    first.start()
    second.start()  # its connection opened second: socket 1
    llm_thread.script(Reply("the slow first answer", delay=2.0))
    try:
        for socket, (text, stamp) in enumerate([("first?", ts(0)), ("second?", ts(1))]):
            event = {"type": "message", "user": "U1", "text": f"<@{BOT_USER}> {text}"}
            event.update(channel=CHANNEL, ts=stamp, channel_type="channel")
            body = {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{stamp}"}
            fake.call(fake.push("events_api", {**body, "event": event}, socket=socket))
            wait_for(lambda: llm_thread.chat_requests, "the first question at the model")
        wanted = ["the slow first answer", "echo: [Ana] second?"]
        wait_for(lambda: [m["text"] for m in fake.messages()] == wanted, "both answers")
    finally:
        stderr = first.stop() + second.stop()
    shown = [message["text"] for message in fake.messages()]
    assert shown == ["the slow first answer", "echo: [Ana] second?"], stderr
    # Answered in turn: the second process waited for the first's answer before its own.
    # Each answer's final update, in order (streamed, a message is updated as its text grows).
    finished = [call["text"] for call in fake.called("chat.update") if call["text"] in wanted]
    assert finished == wanted, stderr
    with sqlite3.connect(first.db) as db:
        rows = db.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    assert [role for role, _ in rows] == ["user", "user", "assistant", "assistant"]
