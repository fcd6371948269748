"""Slash commands and the "Pin to memory" menu through discord.py's interaction code."""

from __future__ import annotations

from typing import Any

import discord

from bot.wiring import App
from tests.support.discord_bot import ANA, BO, GENERAL, GUILD, RELEASE_THREAD, StartBot
from tests.support.fake_discord import FakeDiscord, Person, eventually

EPHEMERAL = 64
DEFERRED_WITH_THINKING = 5
MOD = Person(7010, "Mod", permissions=discord.Permissions(manage_channels=True))


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
        "search",
        "stats",
        "settings",
        "usage",
        "reset",
        "help",
        "remember",
        "profile",
        "forget",
        "Pin to memory",
    }
    assert by_name["Pin to memory"]["type"] == 3
    assert by_name["pin"]["options"][0]["name"] == "text"
    assert by_name["pin"]["options"][0]["required"] is True
    assert by_name["reset"]["options"][0]["required"] is False
    for charted in ("usage", "stats"):  # /usage chart, /stats chart
        assert by_name[charted]["options"][0]["name"] == "option"
        assert by_name[charted]["options"][0]["required"] is False
    assert by_name["remember"]["options"][0]["name"] == "text"
    assert by_name["forget"]["options"][0]["name"] == "id"
    assert "options" not in by_name["profile"] or not by_name["profile"]["options"]
    manage = discord.Permissions(manage_channels=True).value
    assert by_name["reset"]["default_member_permissions"] == manage
    assert by_name["pins"]["default_member_permissions"] is None


async def test_commands_sync_to_the_development_server(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    async with start_bot(dev_guild_id=GUILD):
        pass
    scope, commands = discord_fake.command_syncs[-1]
    assert scope == str(GUILD)
    assert len(commands) == 14


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


async def test_reset_needs_manage_channels_or_the_admin_list(
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


async def test_commands_work_in_dms_and_a_429_on_a_follow_up_is_retried(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    dm = {"channel_id": 8001, "guild_id": None}
    async with start_bot() as (app, _):
        fake.rate_limit_once("POST", r"/webhooks/\d+/[^/]+")
        await fake.command(ANA, "pin", {"text": "I prefer short answers"}, **dm)
        await fake.until(lambda: len(fake.followups) == 1)
        await fake.command(ANA, "unpin", {"id": "#1"}, **dm)
        await fake.until(lambda: len(fake.followups) == 2)
        await fake.command(ANA, "reset", **dm)  # your own DM: no permission needed
        await fake.until(lambda: len(fake.followups) == 3)
        await fake.command(ANA, "help", **dm)
        await fake.until(lambda: len(fake.followups) == 4)
        assert await app.store.pins(channel_key="discord:dm:8001") == []
    assert len(fake.rate_limited) == 1
    pinned, unpinned, reset, help_ = (f["content"] for f in fake.followups)
    assert pinned.startswith("Pinned #1: I prefer short answers")
    assert unpinned == "Unpinned #1."
    assert reset.startswith("Forgot 0 messages")
    assert "/pin TEXT" in help_ and flags(fake.followups[3]) == EPHEMERAL


async def test_summarize_folds_the_channel_and_answers_with_the_summary(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    where = {"channel_id": GENERAL, "guild_id": GUILD}
    async with start_bot(memory={"strategy": "summary", "keep_recent_turns": 2}) as (app, _):
        for i in range(8):
            await fake.say(ANA, f"FACT number {i} is important", **where)
        key = f"discord:{GUILD}:{GENERAL}"
        await eventually(lambda: _stored(app, key, 8))
        await fake.command(BO, "summarize", **where)
        await fake.until(lambda: len(fake.followups) == 1)
    summary = fake.followups[0]["content"]
    assert summary.startswith("Summary ") and "- FACT number 0 is important" in summary
    assert flags(fake.followups[0]) == 0


async def test_search_shows_the_caller_what_memory_holds_with_links(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    where = {"channel_id": GENERAL, "guild_id": GUILD}
    async with start_bot(memory={"recall_tokens": 500}) as (app, _):
        said = await fake.say(BO, "the staging password rotates every 90 days", **where)
        await fake.say(ANA, "lunch at noon?", **where)
        await eventually(lambda: _stored(app, f"discord:{GUILD}:{GENERAL}", 2))
        await fake.command(ANA, "search", {"text": "staging password"}, **where)
        await fake.until(lambda: len(fake.followups) == 1)
    found = fake.followups[0]
    assert flags(found) == EPHEMERAL and flags(fake.callbacks[0]) == EPHEMERAL
    lines = found["content"].splitlines()
    assert lines[0] == "Best matches for “staging password” in this conversation:"
    assert len(lines) == 2 and ", Bo: the staging password rotates every 90 days" in lines[1]
    jump = f"https://discord.com/channels/{GUILD}/{GENERAL}/{said['id']}"
    assert lines[1].endswith(f"({jump})")


async def _stored(app: App, key: str, count: int) -> bool:
    return await app.store.count_messages(conversation_key=key) == count
