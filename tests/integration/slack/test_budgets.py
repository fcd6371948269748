"""A channel's cap on spend as people on Slack see it, through the real Bolt app and the fake
Slack API: the answer that spends the whole budget says so, and the next mention gets the
refusal with when it resets, the model not called."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config import parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_llm import Reply as Scripted
from tests.support.fake_slack import BOT_USER, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

NOW = datetime(2026, 12, 5, 21, 30, tzinfo=UTC).timestamp()


@pytest.fixture
async def running(tmp_path: Path, llm: FakeLLM) -> AsyncIterator[tuple[App, Slack]]:
    async with FakeSlack(USERS) as fake:
        raw = config_dict(
            llm.url,
            tmp_path / "bot.sqlite3",
            slack=slack_settings(fake),
            llm={"prices": {"gpt-4o-mini": {"input": 2, "output": 4}}},
            budgets={"channel": {"day": "$0.01"}},
        )
        async with open_app(parse_config(raw, ENV)) as app:
            app.engine.clock = lambda: NOW
            async with serving(app, fake) as slack:
                yield app, slack


@pytest.fixture
def slack(running: tuple[App, Slack]) -> Slack:
    return running[1]


async def test_the_channel_is_told_at_its_cap_and_then_refused_until_midnight_utc(
    slack: Slack, llm: FakeLLM
) -> None:
    llm.script(Scripted("the deploy is at noon", prompt_tokens=5000, completion_tokens=0))
    await slack.say("U1", f"<@{BOT_USER}> when is the deploy?")
    told = slack.fake.messages()[-1]["text"]
    assert told.startswith("the deploy is at noon\n\nThis channel has now used all of its budget")
    assert "until it resets at 00:00 UTC (in 2 h 30 min)" in told

    await slack.say("U2", f"<@{BOT_USER}> and the rollback plan?")
    refused = slack.fake.messages()[-1]["text"]
    assert refused == (
        "This channel has reached its budget for today ($0.01 of $0.01). No answers here "
        "until it resets at 00:00 UTC (in 2 h 30 min); messages are still remembered."
    )
    assert len(llm.chat_requests) == 1 and llm.pending == 0


async def test_a_channel_answering_everything_is_refused_once_then_left_in_peace(
    running: tuple[App, Slack], llm: FakeLLM
) -> None:
    app, slack = running
    llm.script(Scripted("lunch at one", prompt_tokens=5000, completion_tokens=0))
    await slack.say("U1", "when is lunch?", channel="CALL")  # CALL: answers every message
    assert slack.fake.messages()[-1]["text"].startswith("lunch at one\n\nThis channel has now")
    await slack.say("U2", "and dessert?", channel="CALL")
    refused = slack.fake.messages()[-1]["text"]
    assert refused.startswith("This channel has reached its budget for today")
    shown = len(slack.fake.messages())
    calls = len(slack.fake.calls)
    await slack.say("U1", "coffee after?", channel="CALL")
    await slack.say("U2", "yes please", channel="CALL")
    assert len(slack.fake.messages()) == shown  # kept, without a word
    assert [call.method for call in slack.fake.calls[calls:]] == []
    await slack.say("U2", f"<@{BOT_USER}> can you hear me?", channel="CALL")
    assert slack.fake.messages()[-1]["text"] == refused  # asked: told again
    assert len(slack.fake.messages()) == shown + 1
    assert len(llm.chat_requests) == 1
    stored = await app.store.count_messages(conversation_key="slack:T1:CALL")
    assert stored == 6  # every message and the one answer
