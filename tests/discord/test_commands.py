"""Slash commands and the "Pin to memory" menu through discord.py's interaction code."""

from __future__ import annotations

from typing import Any

import discord

from tests.discord.conftest import ANA, BO, GENERAL, GUILD, RELEASE_THREAD, StartBot
from tests.support.fake_discord import FakeDiscord, Person

EPHEMERAL = 64
DEFERRED_WITH_THINKING = 5
MOD = Person(7010, "Mod", permissions=discord.Permissions(manage_messages=True))


def flags(entry: dict[str, Any]) -> int:
    data = entry.get("data") or {}
    return int(entry.get("flags") or data.get("flags") or 0)


async def test_commands_are_synced_from_the_table_with_the_context_menu(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    async with start_bot():
        pass
    scope, commands = discord_fake.command_syncs[-1]
    assert scope == "global"
    by_name = {c["name"]: c for c in commands}
    assert set(by_name) == {
        "pin",
        "unpin",
        "pins",
        "summarize",
        "stats",
        "reset",
        "help",
        "Pin to memory",
    }
    assert by_name["Pin to memory"]["type"] == 3
    assert by_name["pin"]["options"][0]["name"] == "text"
    assert by_name["pin"]["options"][0]["required"] is True
    assert by_name["reset"]["options"][0]["required"] is False
    manage = discord.Permissions(manage_messages=True).value
    assert by_name["reset"]["default_member_permissions"] == manage
    assert by_name["pins"]["default_member_permissions"] is None


async def test_commands_sync_to_the_development_server(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    async with start_bot(dev_guild_id=GUILD):
        pass
    scope, commands = discord_fake.command_syncs[-1]
    assert scope == str(GUILD)
    assert len(commands) == 8


async def test_pin_pins_and_stats_are_deferred_then_followed_up(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with start_bot():
        await fake.command(ANA, "pin", {"text": "Use UTC"}, channel_id=GENERAL, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 1)
        # A thread's /pins lists its channel's pins.
        await fake.command(BO, "pins", channel_id=RELEASE_THREAD, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 2)
        await fake.command(BO, "stats", channel_id=RELEASE_THREAD, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 3)
    pin, pins, stats = fake.followups
    assert [c["type"] for c in fake.callbacks] == [DEFERRED_WITH_THINKING] * 3
    assert [flags(c) for c in fake.callbacks] == [0, 0, EPHEMERAL]
    assert pin["content"].startswith("Pinned #1: Use UTC")
    assert "#1 (Ana N): Use UTC" in pins["content"]
    assert stats["content"].startswith(f"Context for discord:{GUILD}:{GENERAL}:{RELEASE_THREAD}")
    assert flags(stats) == EPHEMERAL and flags(pin) == 0
    assert all(f["allowed_mentions"] == {"parse": []} for f in fake.followups)


async def test_reset_needs_manage_messages_or_the_admin_list(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with start_bot(admin_user_ids=[BO.id]):
        await fake.command(ANA, "reset", channel_id=GENERAL, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 1)
        await fake.command(MOD, "reset", {"option": "all"}, channel_id=GENERAL, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 2)
        await fake.command(BO, "reset", channel_id=GENERAL, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 3)
    refused, by_mod, by_admin = fake.followups
    assert refused["content"] == "Only channel admins can use /reset."
    # An error after a public deferral: the "thinking" message goes, the error is ephemeral.
    assert flags(refused) == EPHEMERAL
    assert fake.deleted_originals == [fake.callbacks[0]["token"]]
    assert by_mod["content"].startswith("Forgot 0 messages") and "Pins removed" in by_mod["content"]
    assert by_admin["content"].startswith("Forgot 0 messages")


async def test_pin_to_memory_pins_the_chosen_message(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with start_bot() as (app, _):
        target = fake.message(BO, "The staging DB is db-2", channel_id=GENERAL, guild_id=GUILD)
        await fake.command(ANA, "Pin to memory", channel_id=GENERAL, guild_id=GUILD, target=target)
        await fake.until(lambda: len(fake.followups) == 1)
        pins = await app.store.pins(channel_key=f"discord:{GUILD}:{GENERAL}")
    assert [(p.text, p.author_name) for p in pins] == [("Bo: The staging DB is db-2", "Ana N")]
    assert fake.callbacks[0]["type"] == DEFERRED_WITH_THINKING
    assert fake.followups[0]["content"].startswith("Pinned #1: Bo: The staging DB is db-2")
