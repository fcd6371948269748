"""/unpin through discord.py's interactions: the pin's author or a moderator, nobody else."""

from __future__ import annotations

import discord

from tests.support.discord_bot import ANA, BO, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord, Person

MOD = Person(7010, "Mod", permissions=discord.Permissions(manage_channels=True))
CHANNEL = f"discord:{GUILD}:{GENERAL}"


async def test_unpin_is_for_the_pins_author_or_manage_channels(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    here = {"channel_id": GENERAL, "guild_id": GUILD}
    async with start_bot() as (app, _):
        for text in ("Ana's first", "Ana's second"):
            await fake.command(ANA, "pin", {"text": text}, **here)
        await fake.until(lambda: len(fake.followups) == 2)
        await fake.command(BO, "unpin", {"id": "1"}, **here)
        await fake.until(lambda: len(fake.followups) == 3)
        after_refusal = [p.text for p in await app.store.pins(channel_key=CHANNEL)]
        await fake.command(ANA, "unpin", {"id": "1"}, **here)
        await fake.command(MOD, "unpin", {"id": "2"}, **here)
        await fake.until(lambda: len(fake.followups) == 5)
        left = await app.store.pins(channel_key=CHANNEL)
    refused = fake.followups[2]
    assert refused["content"] == "Only Ana N, who pinned #1, or a channel admin can unpin it."
    assert after_refusal == ["Ana's first", "Ana's second"]
    assert sorted(f["content"] for f in fake.followups[3:]) == ["Unpinned #1.", "Unpinned #2."]
    assert left == []
