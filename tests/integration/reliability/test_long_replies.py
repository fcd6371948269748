"""A reply far longer than a chat message (an endpoint that ignores ``max_tokens``): Slack
gets the start of it in a few messages and the whole text as one ``reply.md`` file; memory
keeps the whole text. Bolt and slack_sdk's real upload (``files_upload_v2``) against the
local fake Slack.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.adapters.slack.render import MAX_CHARS
from bot.config import parse_config
from bot.wiring import open_app
from tests.conftest import config_dict
from tests.integration.reliability.test_model_output import stored
from tests.integration.slack.test_http import ENV, USERS, Slack, serving, slack_settings
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import Failure, FakeSlack

DEFAULT_CAP = 8000
HUGE = "\n\n".join(f"Paragraph {i}: " + " ".join(["word"] * 80) for i in range(250))


@pytest.fixture
async def slack(tmp_path: Path, llm: FakeLLM) -> AsyncIterator[Slack]:
    async with FakeSlack(USERS) as fake:
        raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake))
        async with open_app(parse_config(raw, ENV)) as app, serving(app, fake) as slack:
            assert app.config.llm.max_reply_chars == DEFAULT_CAP
            yield slack


@pytest.mark.parametrize("where", ["dm", "thread"])
async def test_slack_posts_a_few_messages_and_the_whole_reply_as_a_file(
    slack: Slack, llm: FakeLLM, tmp_path: Path, where: str
) -> None:
    assert len(HUGE) > 100_000
    llm.responder = lambda body: HUGE
    thread = {"thread_ts": "1699999999.000001"} if where == "thread" else {}
    await slack.say("U1", "tell me everything", channel="D1", **thread)
    posted = slack.fake.messages()
    assert len(posted) <= math.ceil(DEFAULT_CAP / MAX_CHARS) + 1
    shown = "\n".join(m["text"] for m in posted)
    assert shown.startswith("Paragraph 0: word") and len(shown) <= DEFAULT_CAP + len(posted)
    assert all(m.get("thread_ts") == thread.get("thread_ts") for m in posted)
    (upload,) = slack.fake.uploads
    assert upload.filename == "reply.md"
    assert upload.content.decode() == HUGE
    assert upload.channel == "D1" and upload.thread_ts == thread.get("thread_ts")
    assert upload.initial_comment is not None and "reply.md" in upload.initial_comment
    assert stored(tmp_path / "bot.sqlite3")[-1] == ("assistant", HUGE)


async def test_a_reply_within_the_cap_is_posted_whole_without_a_file(
    slack: Slack, llm: FakeLLM
) -> None:
    text = "\n\n".join(f"Paragraph {i}: " + " ".join(["word"] * 80) for i in range(18))
    assert MAX_CHARS < len(text) <= DEFAULT_CAP
    llm.responder = lambda body: text
    await slack.say("U1", "tell me a bit", channel="D1")
    assert "\n\n".join(m["text"] for m in slack.fake.messages()) == text
    assert slack.fake.uploads == []


async def test_a_refused_upload_is_said_in_the_channel_and_memory_keeps_the_reply(
    slack: Slack, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.responder = lambda body: HUGE
    slack.fake.fail("files.getUploadURLExternal", Failure(error="missing_scope"))
    await slack.say("U1", "tell me everything", channel="D1")
    posted = [m["text"] for m in slack.fake.messages()]
    assert posted[0].startswith("Paragraph 0: word")
    assert posted[-1] == "_(The rest of this reply could not be attached; it is kept in memory.)_"
    assert len(posted) <= math.ceil(DEFAULT_CAP / MAX_CHARS) + 1
    assert slack.fake.uploads == []
    assert stored(tmp_path / "bot.sqlite3")[-1] == ("assistant", HUGE)
