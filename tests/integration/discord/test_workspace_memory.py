"""Memory a Discord server shares, through discord.py against the fake Discord with two
servers: an admin's ``/pin --everywhere`` reaches the prompts of mentions in the server's other
channels and threads, never in the other server; channels an admin put in one memory group
(``/settings memory-group``) recall each other's messages, and a same-named group in the other
server does not."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.core.memory.group import GROUP_HEADING
from bot.core.prompt.layout import WORKSPACE_PINS_HEADING
from tests.conftest import is_summary_request
from tests.support.discord_bot import (
    BO,
    BOT,
    GENERAL,
    GUILD,
    RANDOM,
    RELEASE_THREAD,
    TOKEN,
    StartBot,
    team_guild,
)
from tests.support.fake_discord import FakeDiscord, FakeGuild, Person
from tests.support.fake_llm import FakeLLM

ADMIN = Person(7009, "Admin")
"""In discord.admin_user_ids."""
OTHER_GUILD, OTHER_GENERAL = 5101, 6201
MEMORY = {"strategy": "full", "max_context_tokens": 2000, "recall_tokens": 600}


@pytest.fixture
async def discord_fake() -> AsyncIterator[FakeDiscord]:
    """The team's server and another one the bot is in."""
    other = FakeGuild(OTHER_GUILD, "Other", channels={OTHER_GENERAL: "general"})
    async with FakeDiscord(guilds=[team_guild(), other], bot=BOT, token=TOKEN) as fake:
        with fake.pointed_at():
            yield fake


def prompts(llm: FakeLLM) -> list[str]:
    return [
        "\n".join(m["content"] for m in body["messages"])
        for body in llm.chat_requests
        if not is_summary_request(body)
    ]


async def command(
    fake: FakeDiscord, user: Person, name: str, text: str, *, channel: int, guild: int = GUILD
) -> str:
    """Run a slash command with its text as typed; the bot's follow-up."""
    option = "text" if name == "pin" else "option"
    before = len(fake.followups)
    await fake.command(user, name, {option: text}, channel_id=channel, guild_id=guild)
    await fake.until(lambda: len(fake.followups) > before)
    return str(fake.followups[-1]["content"])


async def mention(
    fake: FakeDiscord, llm: FakeLLM, text: str, *, channel: int, guild: int = GUILD
) -> str:
    """A mention of the bot answered; the prompt the model got for it."""
    asked = len(prompts(llm))
    await fake.say(BO, f"<@{BOT.id}> {text}", channel_id=channel, guild_id=guild, mentions=(BOT,))
    await fake.until(lambda: len(prompts(llm)) > asked)
    return prompts(llm)[-1]


async def test_an_admins_pin_for_every_channel_reaches_the_server_and_no_other(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot(admin_user_ids=[ADMIN.id]):
        refused = await command(fake, BO, "pin", "--everywhere Not from me", channel=GENERAL)
        assert refused.startswith("Only admins can pin for every channel")
        pinned = await command(
            fake, ADMIN, "pin", "--everywhere Releases ship on Fridays", channel=GENERAL
        )
        assert pinned.startswith("Pinned #1 in every channel of this workspace")
        line = f"{WORKSPACE_PINS_HEADING}\n#1 (Admin): Releases ship on Fridays"
        assert line in await mention(fake, llm, "when do we ship?", channel=RANDOM)
        assert line in await mention(fake, llm, "when do we ship?", channel=RELEASE_THREAD)
        elsewhere = await mention(
            fake, llm, "when do we ship?", channel=OTHER_GENERAL, guild=OTHER_GUILD
        )
        assert "Fridays" not in elsewhere


async def test_channels_in_one_memory_group_recall_each_others_messages(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot(memory=MEMORY, admin_user_ids=[ADMIN.id]):
        joined = [
            await command(fake, ADMIN, "settings", "memory-group support", channel=channel)
            for channel in (GENERAL, RANDOM)
        ]
        joined.append(
            await command(
                fake,
                ADMIN,
                "settings",
                "memory-group support",
                channel=OTHER_GENERAL,
                guild=OTHER_GUILD,
            )
        )
        assert all(reply.startswith("memory-group is now support") for reply in joined), joined
        await fake.say(
            BO, "the staging deploy key is marmalade-7", channel_id=RANDOM, guild_id=GUILD
        )
        for i in range(6):
            await fake.say(BO, f"chatter {i}: lunch", channel_id=RANDOM, guild_id=GUILD)
        here = await mention(fake, llm, "what is the staging deploy key?", channel=GENERAL)
        assert GROUP_HEADING in here
        assert f"#{RANDOM} [Bo] the staging deploy key is marmalade-7" in here
        elsewhere = await mention(
            fake, llm, "what is the staging deploy key?", channel=OTHER_GENERAL, guild=OTHER_GUILD
        )
        assert "marmalade" not in elsewhere
