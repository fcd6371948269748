"""Sharding: the bot's servers split over gateway connections by shard, in one process or
several on one database, discord.py's AutoShardedClient against the fake Discord's shards."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.discord.platform import DiscordPlatform
from bot.config import DiscordConfig, parse_config
from bot.core.ports.platform import PlatformError
from bot.wiring import open_app
from tests.conftest import config_dict, is_summary_request
from tests.support.discord_bot import ANA, BO, BOT, TOKEN
from tests.support.fake_discord import FakeDiscord, FakeGuild, shard_of
from tests.support.fake_llm import FakeLLM

GUILD_A, CHANNEL_A = 5001, 6001  # shard 0 of 2
GUILD_B, CHANNEL_B = (1 << 22) + 5101, 6201  # shard 1 of 2


def guilds() -> list[FakeGuild]:
    assert (shard_of(GUILD_A, 2), shard_of(GUILD_B, 2)) == (0, 1)
    return [
        FakeGuild(GUILD_A, "Alpha", channels={CHANNEL_A: "general"}),
        FakeGuild(GUILD_B, "Beta", channels={CHANNEL_B: "general"}),
    ]


@pytest.fixture
async def discord_fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(guilds=guilds(), bot=BOT, token=TOKEN, recommended_shards=2) as fake:
        with fake.pointed_at():
            yield fake


@asynccontextmanager
async def bot_process(
    llm: FakeLLM, tmp_path: Path, name: str, **discord: Any
) -> AsyncIterator[DiscordPlatform]:
    """What ``bot run`` starts, with ``discord`` settings; its prompt names it, so a test
    can tell which one answered. Every one shares ``tmp_path``'s database."""
    data = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        discord={"enabled": True, **discord},
        system_prompt=f"You are the bot process {name}.",
    )
    async with open_app(parse_config(data, {"DISCORD_TOKEN": TOKEN})) as app:
        platform = DiscordPlatform(
            engine=app.engine,
            settings=app.config.discord,
            guild_ready_timeout=0.05,
            identify_interval=0.01,
        )
        await platform.start()
        try:
            yield platform
        finally:
            await platform.stop()


async def ask(fake: FakeDiscord, guild_id: int, channel_id: int, text: str) -> None:
    """Someone mentions the bot in ``channel_id``, and an answer arrives there."""
    before = len([s for s in fake.sent if s.channel_id == channel_id])
    await fake.say(
        ANA, f"<@{BOT.id}> {text}", channel_id=channel_id, guild_id=guild_id, mentions=(BOT,)
    )
    await fake.until(lambda: len([s for s in fake.sent if s.channel_id == channel_id]) > before)


def answered_by(llm: FakeLLM, text: str) -> list[str]:
    """The processes whose prompts carried ``text``, by the names in their system prompts."""
    names = []
    for body in llm.chat_requests:
        if not is_summary_request(body) and text in body["messages"][-1]["content"]:
            system = body["messages"][0]["content"]
            names.append(system.split("You are the bot process ")[1].split(".")[0])
    return names


def shards(fake: FakeDiscord) -> list[list[int] | None]:
    return sorted(i.get("shard") or [0, 1] for i in fake.identifies)


async def test_two_processes_answer_each_in_the_servers_of_their_shard(
    llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with bot_process(
        llm, tmp_path, "one", shard_count=2, shard_ids=[1], register_commands=False
    ):
        assert fake.command_syncs == []  # left to the leader
        async with bot_process(llm, tmp_path, "zero", shard_count=2, shard_ids=[0]):
            assert shards(fake) == [[0, 2], [1, 2]]
            assert [scope for scope, _ in fake.command_syncs] == ["global"]

            await ask(fake, GUILD_A, CHANNEL_A, "hello alpha")
            await ask(fake, GUILD_B, CHANNEL_B, "hello beta")
            # A slash command in shard 1's server: answered by the process that did not
            # register the commands, and its pin kept in the shared database.
            await fake.command(
                BO, "pin", {"text": "Beta ships on Fridays"}, channel_id=CHANNEL_B, guild_id=GUILD_B
            )
            await fake.until(lambda: len(fake.followups) == 1)
            assert "Pinned #1" in fake.followups[0]["content"]
            await ask(fake, GUILD_A, CHANNEL_A, "what ships?")

    assert answered_by(llm, "hello alpha") == ["zero"]
    assert answered_by(llm, "hello beta") == ["one"]
    assert answered_by(llm, "what ships?") == ["zero"]
    assert [s.channel_id for s in fake.sent] == [CHANNEL_A, CHANNEL_B, CHANNEL_A]  # once each
    assert [s.content for s in fake.sent] == [
        "echo: [Ana N] hello alpha",
        "echo: [Ana N] hello beta",
        "echo: [Ana N] what ships?",
    ]


async def test_one_process_runs_every_shard_and_answers_in_every_server(
    llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with bot_process(llm, tmp_path, "all", shard_count=2) as platform:
        assert platform.connected
        assert shards(fake) == [[0, 2], [1, 2]]
        await ask(fake, GUILD_A, CHANNEL_A, "hello alpha")
        await ask(fake, GUILD_B, CHANNEL_B, "hello beta")
        dm = 8001
        await fake.say(ANA, "hello in private", channel_id=dm, guild_id=None)  # on shard 0
        await fake.until(lambda: any(s.channel_id == dm for s in fake.sent))
    assert answered_by(llm, "hello alpha") == answered_by(llm, "hello beta") == ["all"]


async def test_auto_takes_the_shard_count_discord_recommends(
    llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with bot_process(llm, tmp_path, "auto", shard_count="auto"):
        assert ("GET", "/gateway/bot") in fake.requests
        assert shards(fake) == [[0, 2], [1, 2]]
        await ask(fake, GUILD_B, CHANNEL_B, "hello beta")


async def test_without_a_shard_count_the_bot_connects_once_unsharded(
    llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with bot_process(llm, tmp_path, "plain"):
        assert [i.get("shard") for i in fake.identifies] == [None]
        assert ("GET", "/gateway/bot") not in fake.requests
        await ask(fake, GUILD_A, CHANNEL_A, "hello alpha")
        await ask(fake, GUILD_B, CHANNEL_B, "hello beta")


async def test_sharded_without_the_intent_says_how_to_enable_it(
    llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    discord_fake.grant_message_content = False
    with pytest.raises(PlatformError, match="Discord refused the Message Content intent"):
        async with bot_process(llm, tmp_path, "refused", shard_count=2):
            pass


async def test_doctor_names_the_shards_and_who_registers_the_commands(
    llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    from bot.adapters.discord.diagnose import diagnose

    def settings(**discord: Any) -> DiscordConfig:
        data = config_dict(llm.url, tmp_path / "bot.sqlite3", discord={"enabled": True, **discord})
        return parse_config(data, {"DISCORD_TOKEN": TOKEN}).discord

    ok, detail = await diagnose(settings(shard_count=4, shard_ids=[2, 3], register_commands=False))
    assert ok and detail.endswith(
        "slash commands registered by another process; shards 2, 3 of 4"
    ), detail
    ok, detail = await diagnose(settings(shard_count="auto"))
    assert ok and detail.endswith("all servers; as many shards as Discord recommends"), detail
    assert discord_fake.command_syncs == []
