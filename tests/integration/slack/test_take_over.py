"""Answers another process left: a Slack bot killed between showing its thinking message and
recording it has the process taking the answer over find that message (by the metadata naming
its question) and replace it, so no stray *Thinking…* stays in the channel."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.adapters.slack.outbox import THINKING, THINKING_EVENT
from bot.config import Config, parse_config
from bot.core.models import Conversation, IncomingMessage, Reply
from bot.wiring import open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_ID, BOT_USER, TEAM, FakeSlack
from tests.support.slack_bot import ENV, USERS, serving, slack_settings

QUESTION = "1700000000.000100"


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
def config(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> Config:
    raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack))
    return parse_config(raw, ENV)


def thinking(ts: str, question: str, *, thread: str | None = None) -> dict[str, object]:
    metadata = {"event_type": THINKING_EVENT, "event_payload": {"question": question}}
    shown: dict[str, object] = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID}
    shown.update(text=THINKING, ts=ts, metadata=metadata)
    if thread is not None:
        shown["thread_ts"] = thread
    return shown


async def until(check: Callable[[], object], within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def left_unanswered(config: Config, text: str, *, thread: str | None = None) -> None:
    """A process stores the question, shows nothing it records, and stops."""
    conversation = Conversation("slack", TEAM, "C1", thread)
    question = IncomingMessage(conversation, "U1", "Ana", text, True, message_id=QUESTION)
    async with open_app(config) as gone:
        assert await gone.engine.accept(question) is not None


@pytest.mark.parametrize("thread", [None, "1699999999.000100"])
async def test_the_thinking_message_a_killed_process_never_recorded_is_replaced_by_the_answer(
    config: Config, fake_slack: FakeSlack, thread: str | None
) -> None:
    await left_unanswered(config, "are you there?", thread=thread)
    said = {"type": "message", "user": "U1", "text": f"<@{BOT_USER}> are you there?"}
    fake_slack.write("C1", {**said, "ts": QUESTION, **({"thread_ts": thread} if thread else {})})
    fake_slack.write("C1", thinking("1700000001.000100", QUESTION, thread=thread))
    # a later question's thinking message, which is not this answer's
    fake_slack.write("C1", thinking("1700000003.000100", "1700000002.000100", thread=thread))
    async with open_app(config) as app, serving(app, fake_slack):
        await until(lambda: fake_slack.called("chat.update"))
        await asyncio.sleep(0.2)
    updated = [(u["ts"], u["text"]) for u in fake_slack.called("chat.update")]
    assert updated == [("1700000001.000100", "echo: [Ana] are you there?")]
    assert fake_slack.called("chat.postMessage") == []
    read = "conversations.history" if thread is None else "conversations.replies"
    looked = [c for c in fake_slack.called(read) if c.get("oldest") == QUESTION]
    assert any(c.get("include_all_metadata") == "1" for c in looked)  # metadata asked for


async def test_with_no_thinking_message_left_the_answer_shows_its_own_naming_its_question(
    config: Config, fake_slack: FakeSlack
) -> None:
    await left_unanswered(config, "still there?")
    async with open_app(config) as app, serving(app, fake_slack):
        await until(lambda: fake_slack.called("chat.update"))
    posted = fake_slack.called("chat.postMessage")
    assert [p["text"] for p in posted] == [THINKING]
    metadata = posted[0]["metadata"]
    assert metadata == {"event_type": THINKING_EVENT, "event_payload": {"question": QUESTION}}
    assert [m["text"] for m in fake_slack.messages()] == ["echo: [Ana] still there?"]


async def test_a_thinking_message_deleted_meanwhile_gives_way_to_a_new_message(
    config: Config, fake_slack: FakeSlack
) -> None:
    """The dead process recorded its thinking message, then streamed and deleted it (or a
    person deleted it): the answer is posted, not lost on an edit Slack refuses."""
    conversation = Conversation("slack", TEAM, "C1")
    question = IncomingMessage(conversation, "U1", "Ana", "hello?", True, message_id=QUESTION)
    async with open_app(config) as gone:
        accepted = await gone.engine.accept(question)
        assert accepted is not None and not isinstance(accepted, Reply)
        await gone.store.showing(stored_id=accepted.stored.id, message_id="1700000001.000100")
    async with open_app(config) as app, serving(app, fake_slack):
        await until(lambda: fake_slack.messages())
        await asyncio.sleep(0.3)
    assert [m["text"] for m in fake_slack.messages()] == ["echo: [Ana] hello?"]
    assert [c.method for c in fake_slack.calls if c.method.startswith("chat.update")][:1] == [
        "chat.update!message_not_found"
    ]
