"""Stopping the Discord adapter while a reply is being made: the reply still reaches Discord
(the client closes only once the replies in flight are sent, within the grace)."""

from __future__ import annotations

from tests.support.discord_bot import ANA, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM, Reply


async def test_a_reply_finishing_during_the_shutdown_grace_is_sent(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    llm.script(Reply(text="late, but sent", delay=1.0))
    async with start_bot() as (app, platform):
        here = {"channel_id": GENERAL, "guild_id": GUILD}
        await fake.say(ANA, f"<@{BOT.id}> a slow one", mentions=(BOT,), **here)
        await fake.until(lambda: len(llm.chat_requests) == 1)  # the model is answering
        await platform.stop()
        assert [sent.content for sent in fake.sent] == ["late, but sent"]
        (answer,) = fake.sent
        found = await app.store.find_message(
            conversation_key=f"discord:{GUILD}:{GENERAL}", message_id=answer.message["id"]
        )
        assert found is not None and found.content == "late, but sent"  # linked to the sent one
