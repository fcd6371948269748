"""/settings on Discord through discord.py's interactions: who may change a channel's
settings, the persona form, private channels, and what the changes do to the next prompt and
to answering, across a restart."""

from __future__ import annotations

from typing import Any

import discord

from bot.core.handler import Handler
from tests.conftest import is_summary_request
from tests.support.discord_bot import (
    ANA,
    BOT,
    GENERAL,
    GUILD,
    RANDOM,
    RELEASE_THREAD,
    StartBot,
)
from tests.support.fake_discord import FakeDiscord, Person, eventually
from tests.support.fake_llm import FakeLLM

EPHEMERAL = 64
ADMIN = Person(7010, "Mod", permissions=discord.Permissions(manage_channels=True))
MODERATOR = Person(7011, "Mo", permissions=discord.Permissions(manage_messages=True))
"""Manage Messages, not Manage Channels: no channel admin."""
CONFIG_PERSONA = "You are a test assistant."
PERSONA = "You are Captain Memo.\nYou answer like a ship's log: dated, terse."
SECRET, SECRET_THREAD, PRIVATE_THREAD, UNKNOWN = 6003, 6103, 6104, 6999
DM = {"channel_id": 8001, "guild_id": None}


def where(channel_id: int) -> dict[str, Any]:
    return {"channel_id": channel_id, "guild_id": GUILD}


def flags(entry: dict[str, Any]) -> int:
    return int(entry.get("flags") or (entry.get("data") or {}).get("flags") or 0)


async def settings(fake: FakeDiscord, who: Person, argument: str, here: dict[str, Any]) -> str:
    """``/settings ARGUMENT`` by ``who``: the bot's answer."""
    count = len(fake.followups)
    await fake.command(who, "settings", {"option": argument} if argument else None, **here)
    await fake.until(lambda: len(fake.followups) > count)
    return str(fake.followups[-1]["content"])


def prompts(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


async def asked(fake: FakeDiscord, llm: FakeLLM, channel_id: int, text: str) -> dict[str, Any]:
    """Ana mentions the bot in ``channel_id``: the prompt the model was given for it."""
    count = len(fake.shown())
    mention = f"<@{BOT.id}> {text}"
    await fake.say(ANA, mention, mentions=(BOT,), **where(channel_id))
    await fake.sent_count(count + 1)
    return prompts(llm)[-1]


async def test_an_admin_sets_the_persona_in_a_form_and_the_model_for_one_channel(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    models = {"allowed_models": ["gpt-4o"]}
    async with start_bot(models=models):
        await fake.command(ADMIN, "settings", {"option": "persona"}, **where(GENERAL))
        await fake.until(lambda: len(fake.forms()) == 1)
        form = fake.forms()[0]
        text_input = form["components"][0]["component"]
        assert form["components"][0]["label"] == "Persona"
        assert text_input["value"] == CONFIG_PERSONA  # the persona in force, to edit
        assert text_input["style"] == discord.TextStyle.paragraph.value
        assert text_input["max_length"] == 4000
        assert fake.followups == []  # a form, not an answer

        await fake.submit_form(ADMIN, form, {"Persona": PERSONA}, **where(GENERAL))
        await fake.until(lambda: len(fake.followups) == 1)
        set_persona = fake.followups[0]
        assert set_persona["content"].startswith("persona is now You are Captain Memo. You")
        assert flags(set_persona) == EPHEMERAL and flags(fake.callbacks[-1]) == EPHEMERAL

        changed = await settings(fake, ADMIN, "model gpt-4o", where(GENERAL))
        assert changed.startswith(f"model is now gpt-4o in discord:{GUILD}:{GENERAL}")
        listing = await settings(fake, ANA, "", where(GENERAL))
        assert "• model: gpt-4o (this channel)" in listing

        general = await asked(fake, llm, GENERAL, "what are you?")
        assert general["messages"][0]["content"].startswith(PERSONA)
        assert general["model"] == "gpt-4o"
        random = await asked(fake, llm, RANDOM, "and here?")
        assert random["messages"][0]["content"].startswith(CONFIG_PERSONA)
        assert random["model"] == "gpt-4o-mini"
        thread = await asked(fake, llm, RELEASE_THREAD, "in the thread?")
        assert thread["messages"][0]["content"].startswith(PERSONA)
        assert thread["model"] == "gpt-4o"

    async with start_bot(models=models):  # the same database, a new process
        again = await asked(fake, llm, GENERAL, "still you?")
        assert again["messages"][0]["content"].startswith(PERSONA)
        assert again["model"] == "gpt-4o"


async def test_channel_admins_are_manage_channels_a_configured_role_or_user(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    team_role = fake.guilds[0].team_role_id
    lead = Person(7012, "Lead", roles=(team_role,))
    async with start_bot(admin_role_ids=[team_role]) as (app, _):
        refused = await settings(fake, MODERATOR, "strategy window", where(GENERAL))
        assert refused.startswith("Only channel admins can change settings")
        assert flags(fake.followups[-1]) == EPHEMERAL
        # No form for who may not change the persona: it is shown whole instead.
        shown = await settings(fake, MODERATOR, "persona", where(GENERAL))
        assert shown.startswith("persona (") and CONFIG_PERSONA in shown
        assert fake.forms() == []
        reset = await settings(fake, MODERATOR, "reset all", where(GENERAL))
        assert reset.startswith("Only channel admins")
        await fake.command(MODERATOR, "reset", **where(GENERAL))
        await fake.until(lambda: len(fake.followups) == 4)
        assert fake.followups[-1]["content"] == "Only channel admins can use /reset."

        by_role = await settings(fake, lead, "strategy window", where(GENERAL))
        assert by_role.startswith(f"strategy is now window in discord:{GUILD}:{GENERAL}")
        await fake.command(lead, "settings", {"option": "persona"}, **where(GENERAL))
        await fake.until(lambda: len(fake.forms()) == 1)
        by_permission = await settings(fake, ADMIN, "recall on", where(GENERAL))
        assert by_permission.startswith("recall is now on")
        in_dm = await settings(fake, ANA, "stream off", DM)  # one's own DM
        assert in_dm.startswith("stream is now off in discord:dm:8001")

        changes = await app.store.setting_changes(scope=f"discord:{GUILD}:{GENERAL}", limit=5)
    assert [(c.key, c.by_name) for c in changes] == [("recall", "Mod"), ("strategy", "Lead")]


async def test_answer_all_and_none_change_what_the_bot_answers_in_the_channel(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    key = f"discord:{GUILD}:{GENERAL}"
    async with start_bot() as (app, platform):
        handler: Handler = platform.client.handler
        await settings(fake, ADMIN, "answer all", where(GENERAL))
        await fake.say(ANA, "anyone around?", **where(GENERAL))
        sent = await fake.sent_count(1)
        assert sent[0].channel_id == GENERAL and sent[0].content == "echo: [Ana N] anyone around?"

        await settings(fake, ADMIN, "answer none", where(GENERAL))
        await fake.say(ANA, f"<@{BOT.id}> are you there?", mentions=(BOT,), **where(GENERAL))

        async def stored() -> bool:
            return await app.store.count_messages(conversation_key=key) == 3

        await eventually(stored)
        await handler.settle()
        assert len(fake.shown()) == 1 and len(prompts(llm)) == 1
        # Only in that channel: a mention elsewhere is answered.
        await fake.say(ANA, f"<@{BOT.id}> hello?", mentions=(BOT,), **where(RANDOM))
        assert (await fake.sent_count(2))[-1].channel_id == RANDOM


async def test_a_private_channel_joins_a_memory_group_only_once_an_admin_opts_in(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    guild = fake.guilds[0]
    guild.channels[SECRET] = "secret"
    guild.private_channels.add(SECRET)
    guild.threads[SECRET_THREAD] = (SECRET, "plans")
    guild.threads[PRIVATE_THREAD] = (GENERAL, "just us")
    guild.private_threads.add(PRIVATE_THREAD)
    async with start_bot():
        public = await settings(fake, ADMIN, "memory-group team", where(GENERAL))
        assert public.startswith("memory-group is now team")
        # A private channel, a thread of one, a private thread and a channel the bot cannot
        # see (so cannot tell) are all private; a DM is in no server, so in no group.
        for here in (where(SECRET), where(SECRET_THREAD), where(PRIVATE_THREAD), where(UNKNOWN)):
            refused = await settings(fake, ADMIN, "memory-group team", here)
            assert refused.startswith("memory-group: this channel is private"), here
        in_dm = await settings(fake, ADMIN, "memory-group team", DM)
        assert in_dm.startswith("memory-group: this DM is in no server"), in_dm
        opted_in = await settings(fake, ADMIN, "share-private on", where(SECRET))
        assert opted_in.startswith("share-private is now on")
        joined = await settings(fake, ADMIN, "memory-group team", where(SECRET))
        assert joined.startswith(f"memory-group is now team in discord:{GUILD}:{SECRET}")
