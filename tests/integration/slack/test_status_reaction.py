"""👀 on a question while the bot answers it (``slack.status_reaction``), through Bolt's real
code paths against the fake Slack Web API: added when the answer starts, removed once it is
sent, never in the assistant pane (which has a status line) nor when unset, and a reaction
Slack refuses never holds up an answer."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.config import parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, Failure, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

Start = Callable[..., AbstractAsyncContextManager[Slack]]


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
def start(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> Start:
    @asynccontextmanager
    async def started(**settings: Any) -> AsyncIterator[Slack]:
        raw = config_dict(
            llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack, **settings)
        )
        app: App
        async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
            yield slack

    return started


def methods(fake: FakeSlack) -> list[str]:
    return [call.method for call in fake.calls]


async def test_eyes_are_on_the_question_until_the_answer_is_sent(
    start: Start, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    llm.script(Reply("It is in the vault, under ops.", piece_delay=0.05))
    async with start(status_reaction=":eyes:") as slack:
        ts = await slack.say("U1", f"<@{BOT_USER}> where is the key?")
    (answer,) = fake_slack.messages()
    assert answer["text"] == "It is in the vault, under ops."
    where = {"channel": "C1", "name": "eyes", "timestamp": ts}
    assert fake_slack.called("reactions.add") == [where]
    assert fake_slack.called("reactions.remove") == [where]
    calls = methods(fake_slack)
    last_shown = max(i for i, m in enumerate(calls) if m in ("chat.postMessage", "chat.update"))
    assert calls.index("reactions.add") < last_shown < calls.index("reactions.remove")


async def test_no_reaction_in_the_assistant_pane_or_when_unset(
    start: Start, fake_slack: FakeSlack
) -> None:
    async with start(status_reaction="eyes") as slack:
        await slack.say("U1", "hello", channel="D1", thread_ts="1699999999.000001")  # the pane
    async with start() as slack:
        await slack.say("U1", f"<@{BOT_USER}> hello")
    assert len(fake_slack.messages()) == 2
    assert not [m for m in methods(fake_slack) if m.startswith("reactions.")]


async def test_a_refused_reaction_is_logged_once_and_the_answers_go_on(
    start: Start, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    fake_slack.fail("reactions.add", Failure(error="missing_scope"), Failure(error="missing_scope"))
    with caplog.at_level(logging.DEBUG, logger="bot.adapters.status"):
        async with start(status_reaction="eyes") as slack:
            await slack.say("U1", f"<@{BOT_USER}> first")
            await slack.say("U1", f"<@{BOT_USER}> second")
    assert [m["text"] for m in fake_slack.messages()] == ["echo: [Ana] first", "echo: [Ana] second"]
    assert methods(fake_slack).count("reactions.add!missing_scope") == 2
    assert "reactions.remove" not in methods(fake_slack)
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "missing_scope" in warned[0].getMessage()
