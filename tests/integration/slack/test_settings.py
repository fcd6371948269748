"""Per-channel settings on Slack: who may change them (``slack.admin_user_ids``, anyone in their
own DM), private channels and DMs as Slack describes them (``conversations.info``), the
persona's modal (``views.open``, then its ``view_submission``) in HTTP and Socket Mode, and
what the next prompt, answer and restart make of a change."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.slack.platform import SlackPlatform
from bot.config import Config, parse_config
from bot.core.models import Conversation
from bot.wiring import App, open_app
from tests.conftest import config_dict, is_summary_request
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

ADMIN = "U9"
DEFAULT_PERSONA = "You are a test assistant."
PIRATE = "You are a pirate.\nAnswer in rhymes."
NOT_ADMIN = "Only channel admins can change settings"
C1 = Conversation(platform="slack", workspace=TEAM, channel="C1")


def bot_config(llm: FakeLLM, fake: FakeSlack, db: Path, **slack: Any) -> Config:
    raw = config_dict(
        llm.url,
        db,
        slack=slack_settings(fake, **slack),
        llm={"allowed_models": ["gpt-4o"]},
    )
    return parse_config(raw, ENV)


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
async def bot_app(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> AsyncIterator[App]:
    async with open_app(bot_config(llm, fake_slack, tmp_path / "bot.sqlite3")) as app:
        yield app


@pytest.fixture
async def slack(bot_app: App, fake_slack: FakeSlack) -> AsyncIterator[Slack]:
    async with serving(bot_app, fake_slack) as slack:
        yield slack


def prompts(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


def system_prompt(llm: FakeLLM) -> str:
    content = prompts(llm)[-1]["messages"][0]["content"]
    assert isinstance(content, str)
    return content


def box_of(view: dict[str, Any]) -> dict[str, Any]:
    (block,) = [b for b in view["blocks"] if b["type"] == "input"]
    element: dict[str, Any] = block["element"]
    return element


async def set_persona(slack: Slack, text: str, *, user: str = ADMIN, channel: str = "C1") -> Any:
    """``/settings persona``, then the modal it opened submitted with ``text``: the body the
    app answered the submission with."""
    opened = len(slack.fake.views())
    await slack.command("settings", "persona", user=user, channel=channel)
    assert len(slack.fake.views()) == opened + 1, slack.fake.responses[-1:]
    view = slack.fake.views()[-1]
    status, body = await slack.interact(slack.fake.submission(view, user, {"persona": text}))
    assert status == 200
    return json.loads(body) if body else None


async def test_an_admin_sets_a_persona_in_a_modal_and_a_model_and_the_channel_gets_them(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.command("settings", "persona", user=ADMIN)
    assert fake_slack.responses == []  # a form, not an answer
    (view,) = fake_slack.views()
    assert view["type"] == "modal" and box_of(view)["multiline"] is True
    assert box_of(view)["initial_value"] == DEFAULT_PERSONA  # the persona in force
    (opened,) = fake_slack.called("views.open")
    assert opened["trigger_id"]

    submitted = fake_slack.submission(view, ADMIN, {"persona": PIRATE})
    status, body = await slack.interact(submitted)
    assert (status, body) == (200, "")  # the modal closes
    told = slack.last_response()
    assert "persona is now You are a pirate. Answer in rhymes. in slack:T1:C1" in told["text"]

    await slack.command("settings", "model gpt-4o", user=ADMIN)
    assert "model is now gpt-4o in slack:T1:C1" in slack.last_response()["text"]
    await slack.command("settings", "persona", user=ADMIN)
    assert box_of(fake_slack.views()[-1])["initial_value"] == PIRATE  # the new one, shown

    await slack.say("U1", f"<@{BOT_USER}> who are you?")
    assert system_prompt(llm).startswith(PIRATE)
    assert prompts(llm)[-1]["model"] == "gpt-4o"
    await slack.say("U1", f"<@{BOT_USER}> and here?", channel="C2")
    assert system_prompt(llm).startswith(DEFAULT_PERSONA) and PIRATE not in system_prompt(llm)
    assert prompts(llm)[-1]["model"] == "gpt-4o-mini"


async def test_a_thread_takes_its_channels_persona(slack: Slack, llm: FakeLLM) -> None:
    assert await set_persona(slack, PIRATE) is None
    root = await slack.say("U2", "the build is red")
    await slack.say("U1", f"<@{BOT_USER}> why?", thread_ts=root)
    assert prompts(llm)[-1]["messages"][-1]["content"] == "[Ana] why?"
    assert system_prompt(llm).startswith(PIRATE)


async def test_a_refused_persona_shows_under_the_box_and_changes_nothing(
    slack: Slack, fake_slack: FakeSlack, bot_app: App
) -> None:
    await slack.command("settings", "budget 300", user=ADMIN)
    assert "budget is now 300 tokens" in slack.last_response()["text"]
    answered = len(fake_slack.responses)
    long_persona = "Speak of ships and of the sea, always. " * 60
    body = await set_persona(slack, long_persona)
    assert body["response_action"] == "errors"
    assert "the persona and pins would take" in body["errors"]["persona"]
    assert len(fake_slack.responses) == answered  # nothing told: the modal stays open
    # Rights are looked at again on submission: a view submitted by someone else is refused.
    await slack.command("settings", "persona", user=ADMIN)
    view = fake_slack.views()[-1]
    status, text = await slack.interact(fake_slack.submission(view, "U1", {"persona": PIRATE}))
    assert status == 200 and NOT_ADMIN in json.loads(text)["errors"]["persona"]
    resolved = await bot_app.engine.settings.resolve(C1)
    assert resolved.settings.system_prompt == DEFAULT_PERSONA


async def test_a_non_admin_is_refused_and_gets_no_modal(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.command("settings", "strategy window", user="U1")
    refused = slack.last_response()
    assert refused["response_type"] == "ephemeral" and NOT_ADMIN in refused["text"]
    await slack.command("settings", "persona", user="U1")
    assert fake_slack.views() == []
    refused = slack.last_response()
    assert refused["response_type"] == "ephemeral" and NOT_ADMIN in refused["text"]
    await slack.command("settings", "", user="U1")  # everyone may look
    assert "• strategy: " in slack.last_response()["text"]


async def test_in_their_own_dm_a_person_sets_its_persona(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    fake_slack.dm("D1", "U1")
    assert await set_persona(slack, PIRATE, user="U1", channel="D1") is None
    assert "persona is now" in slack.last_response()["text"]
    await slack.say("U1", "ahoy", channel="D1")
    assert system_prompt(llm).startswith(PIRATE)
    # Someone else's DM, or one Slack will not describe (two people's, say): admins only.
    await slack.command("settings", "strategy window", user="U2", channel="D1")
    assert NOT_ADMIN in slack.last_response()["text"]
    await slack.command("settings", "strategy window", user="U1", channel="D7")
    assert NOT_ADMIN in slack.last_response()["text"]
    await slack.command("settings", "strategy window", user=ADMIN, channel="D7")
    assert "strategy is now window" in slack.last_response()["text"]


@pytest.mark.parametrize(
    ("channel", "private"),
    [("C1", False), ("CSECRET", True), ("D1", True), ("GMULTI", True), ("CUNKNOWN", True)],
)
async def test_private_channels_and_dms_keep_to_themselves(
    slack: Slack, fake_slack: FakeSlack, channel: str, private: bool
) -> None:
    """A channel Slack calls private (or a DM, a group DM, or one it would not describe) needs
    share-private on before it joins a memory group."""
    fake_slack.private_channel("CSECRET")
    fake_slack.dm("D1", ADMIN)
    fake_slack.group_dm("GMULTI")
    if channel == "CUNKNOWN":
        fake_slack.fail("conversations.info", Failure(error="missing_scope"))
    await slack.command("settings", "memory-group support", user=ADMIN, channel=channel)
    answer = slack.last_response()["text"]
    if private:
        assert "this channel is private" in answer
        await slack.command("settings", "share-private on", user=ADMIN, channel=channel)
        await slack.command("settings", "memory-group support", user=ADMIN, channel=channel)
    assert "memory-group is now support" in slack.last_response()["text"]
    asked = [p["channel"] for p in fake_slack.called("conversations.info")]
    assert asked and set(asked) == {channel}


async def test_answer_all_answers_everything_and_answer_none_only_listens(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM, bot_app: App
) -> None:
    await slack.say("U2", "nobody asked me")
    assert fake_slack.messages() == []
    await slack.command("settings", "answer all", user=ADMIN)
    await slack.say("U2", "the deploy is at 5pm")
    assert [m["channel"] for m in fake_slack.messages()] == ["C1"]
    await slack.command("settings", "answer none", user=ADMIN)
    await slack.say("U1", f"<@{BOT_USER}> are you there?")
    assert len(fake_slack.messages()) == 1 and len(prompts(llm)) == 1
    # Each message is remembered all the same (and the one answer).
    assert await bot_app.store.count_messages(conversation_key=C1.key) == 4


async def test_settings_outlive_a_restart(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    config = bot_config(llm, fake_slack, tmp_path / "bot.sqlite3")

    async def session(work: Callable[[Slack], Awaitable[None]]) -> None:
        async with open_app(config) as app, serving(app, fake_slack) as slack:
            await work(slack)

    async def before(slack: Slack) -> None:
        assert await set_persona(slack, PIRATE) is None
        await slack.command("settings", "answer all", user=ADMIN)

    async def after(slack: Slack) -> None:
        await slack.say("U2", "still a pirate?")

    await session(before)
    await session(after)
    assert system_prompt(llm).startswith(PIRATE)
    assert [m["channel"] for m in fake_slack.messages()] == ["C1"]


async def test_once_the_commands_response_url_expired_the_result_is_shown_to_the_submitter(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.expired.add(f"settings-{len(fake_slack.responses)}")
    assert await set_persona(slack, PIRATE) is None
    (told,) = fake_slack.called("chat.postEphemeral")
    assert (told["channel"], told["user"]) == ("C1", ADMIN)
    assert "persona is now You are a pirate." in told["text"]


async def test_socket_mode_opens_the_modal_and_answers_its_submission_in_the_ack(
    tmp_path: Path, llm: FakeLLM
) -> None:
    async with FakeSlack(USERS) as fake:
        slack = {"enabled": True, "mode": "socket", "api_base_url": fake.api_url}
        slack["admin_user_ids"] = [ADMIN]
        raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack)
        env = {"SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_APP_TOKEN": "xapp-test-token"}
        async with open_app(parse_config(raw, env)) as app:
            platform = SlackPlatform(engine=app.engine, settings=app.config.slack)
            await platform.start()
            assert platform.listeners is not None
            try:
                form = {"command": "/settings", "text": "persona", "user_id": ADMIN}
                form |= {"user_name": "admin", "channel_id": "C1", "team_id": TEAM}
                form |= {"response_url": fake.response_url("settings"), "trigger_id": "1.2.3"}
                await fake.ack_for(await fake.push("slash_commands", form))
                await platform.listeners.settle()
                (view,) = fake.views()

                by_other = fake.submission(view, "U1", {"persona": PIRATE})
                ack = await fake.ack_for(await fake.push("interactive", by_other))
                assert NOT_ADMIN in ack["payload"]["errors"]["persona"]

                by_admin = fake.submission(view, ADMIN, {"persona": PIRATE})
                ack = await fake.ack_for(await fake.push("interactive", by_admin))
                assert "payload" not in ack or not ack["payload"]
                await platform.listeners.settle()
                (told,) = fake.responses
                assert "persona is now You are a pirate." in told.params["text"]
                resolved = await app.engine.settings.resolve(C1)
                assert resolved.settings.system_prompt == PIRATE
            finally:
                await platform.stop()


async def test_a_form_slack_will_not_open_is_told_to_the_admin(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    fake_slack.fail("views.open", Failure(error="expired_trigger_id"))
    await slack.command("settings", "persona", user=ADMIN)
    told = slack.last_response()
    assert told["response_type"] == "ephemeral"
    assert "Slack would not open the persona form (expired_trigger_id)" in told["text"]


async def test_a_submission_is_answered_within_slacks_three_seconds_even_when_slow(
    slack: Slack, fake_slack: FakeSlack, bot_app: App
) -> None:
    await slack.command("settings", "persona", user=ADMIN)
    fake_slack.slow["conversations.info"] = 4.0
    started = time.monotonic()
    status, body = await slack.interact(
        fake_slack.submission(fake_slack.views()[-1], ADMIN, {"persona": PIRATE})
    )
    assert status == 200 and time.monotonic() - started < 3.0
    assert "took too long" in json.loads(body)["errors"]["persona"]
    resolved = await bot_app.engine.settings.resolve(C1)
    assert resolved.settings.system_prompt == DEFAULT_PERSONA
