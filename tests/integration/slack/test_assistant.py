"""Slack's assistant pane through Bolt's real code paths: signed requests to the app served on
127.0.0.1, the fake Slack Web API recording what the bot set and posted, the local model
server recording the prompts."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.config import parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict, is_summary_request
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

DM = "D1"
PROMPTS = [
    {"title": "Plan my week", "message": "Help me plan my week."},
    {"title": "Recap", "message": "What did we decide so far?"},
]
ASSISTANT = {"greeting": "Hello! **I remember** this chat.", "suggested_prompts": PROMPTS}


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
def assistant() -> dict[str, Any]:
    return ASSISTANT


@pytest.fixture
async def slack(
    tmp_path: Any, llm: FakeLLM, fake_slack: FakeSlack, assistant: dict[str, Any]
) -> AsyncIterator[Slack]:
    settings = slack_settings(fake_slack, assistant=assistant)
    raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=settings)
    app: App
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        yield slack


def started(thread_ts: str, user: str = "U1") -> dict[str, Any]:
    """The event Slack sends when a person opens a new thread in the pane."""
    context = {"channel_id": "C1", "team_id": TEAM, "enterprise_id": None}
    thread = {"user_id": user, "context": context, "channel_id": DM, "thread_ts": thread_ts}
    return {"type": "assistant_thread_started", "assistant_thread": thread, "event_ts": thread_ts}


async def ask(slack: Slack, text: str, thread_ts: str, user: str = "U1") -> str:
    """A person's message in a thread of the pane (a DM thread under the app's root)."""
    return await slack.say(user, text, channel=DM, thread_ts=thread_ts, parent_user_id=BOT_USER)


def methods(fake: FakeSlack) -> list[str]:
    return [call.method for call in fake.calls if call.method != "users.info"]


def prompts_of(llm: FakeLLM) -> list[list[str]]:
    """Each answer's prompt, as the model got it (the system prompt left out)."""
    bodies = [body for body in llm.chat_requests if not is_summary_request(body)]
    return [[m["content"] for m in body["messages"][1:]] for body in bodies]


async def test_a_thread_opened_is_greeted_with_the_configured_prompts_once(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    assert await slack.event(started("1700000100.000100"), event_id="EvOpen") == 200
    assert await slack.event(started("1700000100.000100"), event_id="EvOpen") == 200  # a retry
    await slack.settle()
    (greeting,) = fake_slack.called("chat.postMessage")
    assert (greeting["channel"], greeting["thread_ts"]) == (DM, "1700000100.000100")
    assert greeting["text"] == "Hello! *I remember* this chat."
    (suggested,) = fake_slack.called("assistant.threads.setSuggestedPrompts")
    assert (suggested["channel_id"], suggested["thread_ts"]) == (DM, "1700000100.000100")
    assert suggested["prompts"] == PROMPTS
    assert methods(fake_slack)[-2:] == ["chat.postMessage", "assistant.threads.setSuggestedPrompts"]


async def test_the_first_question_titles_the_thread_and_a_status_line_shows_the_work(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    thread = "1700000200.000100"
    await ask(slack, "What is a good name for a   sourdough starter, short and funny?", thread)
    (title,) = fake_slack.called("assistant.threads.setTitle")
    assert (title["channel_id"], title["thread_ts"]) == (DM, thread)
    assert title["title"] == "What is a good name for a sourdough starter, short and…"  # 60
    statuses = fake_slack.called("assistant.threads.setStatus")
    assert [(s["channel_id"], s["thread_ts"]) for s in statuses] == [(DM, thread)] * 2
    # searching memory while the prompt is built, then thinking while the model answers
    assert [s["status"] for s in statuses] == ["is searching memory…", "is thinking…"]
    assert fake_slack.called("chat.postMessage") == []  # no thinking message: the status shows
    (answer,) = fake_slack.called("chat.startStream")  # streamed into the thread
    assert (answer["channel"], answer["thread_ts"]) == (DM, thread)
    assert answer["recipient_user_id"] == "U1" and answer["recipient_team_id"] == TEAM
    (shown,) = fake_slack.messages()
    assert shown["text"].startswith("echo: [Ana] What is a good name")
    order = methods(fake_slack)
    assert order.index("assistant.threads.setStatus") < order.index("chat.startStream")
    assert fake_slack.called("chat.update") == [] and fake_slack.streaming() == set()

    llm.script("Call it Doughbi-Wan.")
    await ask(slack, "And one more, longer than the title could ever hold in one line?", thread)
    assert len(fake_slack.called("assistant.threads.setTitle")) == 1  # titled once
    assert len(fake_slack.called("assistant.threads.setStatus")) == 4
    assert [m["text"] for m in fake_slack.messages()][-1] == "Call it Doughbi-Wan."
    assert prompts_of(llm)[-1][0].startswith("[Ana] What is a good name")  # one conversation


async def test_each_thread_of_the_pane_remembers_only_its_own_conversation(
    slack: Slack, llm: FakeLLM
) -> None:
    await ask(slack, "My locker code is 4512, keep it for me.", "1700000300.000100")
    await ask(slack, "What is my locker code?", "1700000400.000100")
    assert prompts_of(llm)[-1] == ["[Ana] What is my locker code?"]
    await ask(slack, "Thanks! What was it again?", "1700000300.000100")
    assert "4512" in prompts_of(llm)[-1][0]


async def test_a_failed_answer_clears_the_status_line(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    llm.script(*[Reply.server_error()] * 3)
    await ask(slack, "Are you there?", "1700000500.000100")
    statuses = [call["status"] for call in fake_slack.called("assistant.threads.setStatus")]
    assert statuses == ["is searching memory…", "is thinking…", ""]
    assert fake_slack.called("chat.postMessage") == []
    assert len(fake_slack.called("chat.postEphemeral")) == 1  # the error, to the asker


async def test_a_thread_slack_gives_no_status_line_gets_a_thinking_message(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.fail("assistant.threads.setStatus", Failure(error="not_allowed_token_type"))
    await ask(slack, "hello?", "1700000600.000100")
    posted = fake_slack.called("chat.postMessage")
    assert [p["text"] for p in posted] == ["_Thinking…_"]
    # the answer streams into the thread, and the thinking message goes once it shows text
    assert [d["ts"] for d in fake_slack.called("chat.delete")] == [posted[0]["ts"]]
    assert [m["text"] for m in fake_slack.messages()] == ["echo: [Ana] hello?"]


@pytest.mark.parametrize("assistant", [{**ASSISTANT, "enabled": False}])
async def test_with_the_pane_off_threads_are_neither_greeted_nor_titled(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    assert await slack.event(started("1700000700.000100")) == 200
    await ask(slack, "hello?", "1700000700.000100")
    assert [p["text"] for p in fake_slack.called("chat.postMessage")] == ["_Thinking…_"]
    assert not [m for m in methods(fake_slack) if m.startswith("assistant.")]
