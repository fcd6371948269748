"""A message is stored when it arrives, before the bot shows it is typing: a slow or
rate-limited typing request neither delays it nor lets a later message overtake it."""

from __future__ import annotations

from tests.support.discord_bot import ANA, BO, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord


async def test_messages_are_stored_in_arrival_order_while_typing_is_rate_limited(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    here = {"channel_id": GENERAL, "guild_id": GUILD}
    async with start_bot() as (app, _):
        fake.rate_limit_once("POST", r"/channels/\d+/typing")
        await fake.say(ANA, f"<@{BOT.id}> first, to the bot", mentions=(BOT,), **here)
        await fake.say(BO, "second, chatter", **here)
        await fake.sent_count(1)
        stored = await app.store.messages_between(
            conversation_key=f"discord:{GUILD}:{GENERAL}", first_id=0, through_id=10**9
        )
    assert [m.content for m in stored] == [
        "first, to the bot",
        "second, chatter",
        "echo: [Ana N] first, to the bot",
    ]
