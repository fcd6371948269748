"""Memory a Slack workspace shares, through the real Bolt app against the fake Slack: an
admin's ``/pin --everywhere`` in one channel reaches the model's prompt for a mention in any
other channel and in a DM; channels an admin put in one memory group (``/settings memory-group``
typed in each) recall each other's messages, and a channel outside it does not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import parse_config
from bot.core.memory.group import GROUP_HEADING
from bot.core.prompt.layout import WORKSPACE_PINS_HEADING
from bot.wiring import App, open_app
from tests.conftest import config_dict, is_summary_request
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

ADMIN = "U9"
"""In slack.admin_user_ids."""


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
async def slack(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> AsyncIterator[Slack]:
    memory = {"strategy": "full", "max_context_tokens": 2000, "recall_tokens": 600}
    raw = config_dict(
        llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack), memory=memory
    )
    app: App
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        yield slack


def prompts(llm: FakeLLM) -> list[str]:
    """Every prompt the model server was sent for an answer, as one text each."""
    return [
        "\n".join(m["content"] for m in body["messages"])
        for body in llm.chat_requests
        if not is_summary_request(body)
    ]


async def test_an_admins_pin_for_every_channel_reaches_mentions_in_other_channels(
    slack: Slack, llm: FakeLLM
) -> None:
    await slack.command("pin", "--everywhere Deploys need two approvals", user="U1")
    assert slack.last_response()["text"].startswith("Only admins can pin for every channel")
    await slack.command("pin", "--everywhere Deploys need two approvals", user=ADMIN)
    assert slack.last_response()["text"].startswith(
        "Pinned #1 in every channel of this workspace: Deploys need two approvals"
    )
    pinned = f"{WORKSPACE_PINS_HEADING}\n#1 (admin): Deploys need two approvals"
    for channel in ("C2", "C3", "D1"):
        await slack.say("U2", f"<@{BOT_USER}> can I deploy alone?", channel=channel)
        assert len(prompts(llm)) == ("C2", "C3", "D1").index(channel) + 1
        assert pinned in prompts(llm)[-1], channel
    await slack.command("pins", channel="C3", user="U2")
    assert slack.last_response()["text"].endswith(
        "In every channel of this workspace (1 pinned fact):\n"
        "#1 (admin): Deploys need two approvals"
    )


async def test_channels_in_one_memory_group_recall_each_others_messages(
    slack: Slack, llm: FakeLLM
) -> None:
    for channel in ("C1", "C2"):
        await slack.command("settings", "memory-group support", user=ADMIN, channel=channel)
        assert slack.last_response()["text"].startswith("memory-group is now support")
    await slack.say("U2", "the staging deploy key is marmalade-7", channel="C2")
    for i in range(6):
        await slack.say("U2", f"chatter {i}: lunch and the weather", channel="C2")
    await slack.say("U1", f"<@{BOT_USER}> what is the staging deploy key?", channel="C1")
    shared = prompts(llm)[-1]
    assert GROUP_HEADING in shared
    assert "#C2 [Bo] the staging deploy key is marmalade-7" in shared
    await slack.say("U1", f"<@{BOT_USER}> what is the staging deploy key?", channel="C3")
    assert len(prompts(llm)) == 2
    assert "marmalade" not in prompts(llm)[-1]
