"""Bad model output on Discord: a lone surrogate in the reply is shown (and kept) as U+FFFD,
a body that is not a chat completion gets the honest "could not read", and the next message
is answered as usual."""

from __future__ import annotations

from bot.adapters.discord.translate import conversation_for
from bot.core.models import Role
from tests.integration.reliability.test_model_output import SHOWN, SURROGATE, UNREADABLE
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM, Reply


async def test_discord_answers_whatever_the_model_sends(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    llm.script(SURROGATE, Reply(raw_body='{"choices":"nope"}'))
    async with start_bot() as (app, _):
        for count, text in enumerate(("first", "second", "third"), 1):
            await discord_fake.say(
                BO, f"<@{BOT.id}> {text}", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,)
            )
            sent = await discord_fake.sent_count(count)
        conversation = conversation_for(guild_id=GUILD, channel_id=GENERAL, parent_id=None)
        history = await app.store.messages_between(
            conversation_key=conversation.key, first_id=0, through_id=10**9
        )
    assert sent[0].content == SHOWN
    assert sent[1].content.startswith(UNREADABLE)
    assert sent[2].content == "echo: [Bo] third"
    assert [(m.role, m.content) for m in history] == [
        (Role.USER, "first"),
        (Role.ASSISTANT, SHOWN),
        (Role.USER, "second"),
        (Role.USER, "third"),
        (Role.ASSISTANT, "echo: [Bo] third"),
    ]
