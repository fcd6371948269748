"""Permissions: /reset and /unpin by someone not allowed change nothing.

/reset is for channel admins (``can_manage``: the console's user, Slack's
``slack.admin_user_ids``, Discord's Manage Messages or ``discord.admin_user_ids``). A pin may be
removed by the person who pinned it or by an admin; anyone else is told who can.
"""

from __future__ import annotations

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.integration.slack.test_http import Slack, bot_app, fake_slack, slack
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import FakeSlack
from tests.support.stores import APP_KINDS, StoreKind, app_store

__all__ = ["bot_app", "fake_slack", "slack"]
GENERAL = Conversation.console("general")


def call(name: str, argument: str = "", *, who: str, admin: bool = False) -> CommandCall:
    return CommandCall(GENERAL, name, argument, who.lower(), who, can_manage=admin)


async def snapshot(app: App) -> tuple[object, ...]:
    """Everything /reset or /unpin could change."""
    messages = await app.store.messages_between(
        conversation_key=GENERAL.key, first_id=0, through_id=10**9
    )
    pins = await app.store.pins(channel_key=GENERAL.channel_key)
    summary = await app.store.latest_summary(conversation_key=GENERAL.key)
    return tuple(messages), tuple(pins), summary


@pytest.mark.parametrize("kind", APP_KINDS)
async def test_reset_and_unpin_by_someone_not_allowed_change_nothing(
    make_config: ConfigFactory, llm: FakeLLM, kind: StoreKind
) -> None:
    config = make_config(memory={"strategy": "summary"})
    async with open_app(config, store=app_store(kind)) as app:
        engine = app.engine
        await run_command(engine, call("pin", "Ana's pinned fact", who="Ana"))
        for i in range(6):
            await engine.handle_message(IncomingMessage(GENERAL, "ana", "Ana", f"m{i}", True))
        assert (await run_command(engine, call("summarize", who="Ana"))).kind is ReplyKind.INFO
        before = await snapshot(app)
        assert before[2] is not None  # there is a summary to lose

        for argument in ("", "all", "pins"):
            refused = await run_command(engine, call("reset", argument, who="Bo"))
            assert refused.kind is ReplyKind.ERROR and refused.ephemeral
            assert refused.text == "Only channel admins can use /reset."
        refused = await run_command(engine, call("unpin", "#1", who="Bo"))
        assert refused.kind is ReplyKind.ERROR and refused.ephemeral
        assert refused.text == "Only Ana, who pinned #1, or a channel admin can unpin it."
        assert await snapshot(app) == before


async def test_a_pin_is_removed_by_its_author_or_an_admin(app: App) -> None:
    engine = app.engine
    await run_command(engine, call("pin", "one", who="Ana"))
    await run_command(engine, call("pin", "two", who="Ana"))
    assert (await run_command(engine, call("unpin", "1", who="Ana"))).text == "Unpinned #1."
    assert (await run_command(engine, call("unpin", "2", who="Mod", admin=True))).text == (
        "Unpinned #2."
    )
    assert await app.store.pins(channel_key=GENERAL.channel_key) == []
    # A missing pin is missing for everyone, without saying whose it was.
    missing = await run_command(engine, call("unpin", "2", who="Bo"))
    assert missing.text == "There is no pin #2 in this channel (/pins lists them)."


async def test_slack_unpin_and_reset_by_someone_not_allowed_change_nothing(
    slack: Slack, fake_slack: FakeSlack, bot_app: App
) -> None:
    channel = "slack:T1:C1"
    await slack.say("U1", "remember me")
    await slack.command("pin", "Ana's fact", user="U1")
    pins_before = await bot_app.store.pins(channel_key=channel)
    assert [p.text for p in pins_before] == ["Ana's fact"]

    await slack.command("unpin", f"{pins_before[0].id}", user="U2")
    refused = slack.last_response()
    assert refused["response_type"] == "ephemeral"
    assert refused["text"].startswith("Only ana, who pinned")
    await slack.command("reset", "all", user="U2")
    assert slack.last_response()["response_type"] == "ephemeral"
    assert await bot_app.store.pins(channel_key=channel) == pins_before
    assert await bot_app.store.count_messages(conversation_key=channel) == 1

    await slack.command("unpin", f"{pins_before[0].id}", user="U9")  # an admin
    assert slack.last_response()["text"] == f"Unpinned #{pins_before[0].id}."
    assert await bot_app.store.pins(channel_key=channel) == []
