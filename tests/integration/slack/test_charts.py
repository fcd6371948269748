"""Charts on Slack, through Bolt's real code paths and the real upload API calls
(files.getUploadURLExternal, the upload, files.completeUploadExternal) against the fake Slack:
``/usage chart`` and ``/stats chart`` post a PNG with its alt text in the channel, the reply's
text as its message; where Slack refuses the upload, the text still comes, with one line
saying the chart is missing and why."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.charts.draw import LAYERS_SIZE, TOKENS_COLOUR, USAGE_SIZE
from bot.config import parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, Failure, FakeSlack
from tests.support.pictures import bars, size
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
async def slack(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> AsyncIterator[Slack]:
    raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack))
    app: App
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        yield slack


async def test_usage_chart_posts_the_png_with_its_alt_text_in_the_channel(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    await slack.say("U1", f"<@{BOT_USER}> what is on today?")
    responses = len(fake_slack.responses)
    await slack.command("usage", "chart")
    (upload,) = fake_slack.uploads
    assert (upload.filename, upload.channel, upload.thread_ts) == ("usage.png", "C1", None)
    assert upload.alt_text is not None
    assert upload.alt_text.startswith("Tokens and cost per day for this channel (and its threads)")
    assert "calls on 1 of 30 days." in upload.alt_text
    assert upload.initial_comment == upload.alt_text  # the reply's text, with the picture
    assert size(upload.content) == USAGE_SIZE
    (today,) = bars(upload.content, TOKENS_COLOUR)
    assert today.last > 0.9 * USAGE_SIZE[0]  # the last of the 30 days, on the right
    assert len(fake_slack.responses) == responses  # nothing through the response URL


async def test_stats_chart_posts_the_layers_bar_with_the_stats(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    await slack.command("stats", "chart")
    (upload,) = fake_slack.uploads
    assert upload.filename == "prompt-layers.png" and size(upload.content) == LAYERS_SIZE
    assert upload.initial_comment is not None
    assert upload.initial_comment.startswith("Context for slack:T1:C1")
    assert upload.alt_text is not None
    assert upload.alt_text.startswith("The prompt for this channel by layer, against its budget")


async def test_a_refused_upload_still_answers_with_the_text_and_a_line_saying_so(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.fail("files.getUploadURLExternal", Failure(error="not_in_channel"))
    await slack.command("usage", "chart")
    assert fake_slack.uploads == []
    answer = slack.last_response()
    assert answer["response_type"] == "in_channel"
    text, note = answer["text"].rsplit("\n", 1)
    assert text.startswith("Tokens and cost per day for this channel")
    assert note == "_(usage.png could not be posted here: Slack said not_in_channel.)_"
