"""A reply far longer than a chat message (an endpoint that ignores ``max_tokens``): Discord
gets the start of it in a few messages and the whole text as one ``reply.md`` attachment
(multipart, through discord.py's real ``discord.File`` upload); memory keeps the whole text."""

from __future__ import annotations

import math

from bot.adapters.discord.render import MESSAGE_LIMIT
from bot.adapters.discord.translate import conversation_for
from bot.core.models import Role
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM

DEFAULT_CAP = 8000
HUGE = "\n\n".join(f"Paragraph {i}: " + " ".join(["word"] * 80) for i in range(250))


async def test_discord_sends_a_few_messages_and_the_whole_reply_as_a_file(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    assert len(HUGE) > 100_000
    llm.responder = lambda body: HUGE
    async with start_bot() as (app, _):
        assert app.config.llm.max_reply_chars == DEFAULT_CAP
        await discord_fake.say(
            BO, f"<@{BOT.id}> tell me everything", channel_id=GENERAL, guild_id=GUILD,
            mentions=(BOT,),
        )  # fmt: skip
        await discord_fake.until(lambda: any(s.files for s in discord_fake.sent))
        conversation = conversation_for(guild_id=GUILD, channel_id=GENERAL, parent_id=None)
        history = await app.store.messages_between(
            conversation_key=conversation.key, first_id=0, through_id=10**9
        )
    sent = discord_fake.sent
    texts = [s for s in sent if not s.files]
    (with_file,) = [s for s in sent if s.files]
    assert sent[-1] is with_file
    assert len(texts) <= math.ceil(DEFAULT_CAP / MESSAGE_LIMIT) + 1
    shown = "".join(s.content for s in texts)
    assert shown.startswith("Paragraph 0: word") and len(shown) <= DEFAULT_CAP
    assert with_file.files == [("reply.md", HUGE.encode())]
    assert "reply.md" in with_file.content
    assert all(s.allowed_mentions == {"parse": []} for s in sent)
    assert [(m.role, m.content) for m in history][-1] == (Role.ASSISTANT, HUGE)


async def test_without_attach_files_the_channel_is_told_and_memory_keeps_the_reply(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    llm.responder = lambda body: HUGE
    discord_fake.refuse_files = True
    async with start_bot():
        await discord_fake.say(
            BO, f"<@{BOT.id}> tell me everything", channel_id=GENERAL, guild_id=GUILD,
            mentions=(BOT,),
        )  # fmt: skip
        await discord_fake.until(
            lambda: any("could not be attached" in s.content for s in discord_fake.sent)
        )
    sent = discord_fake.sent
    assert sent[0].content.startswith("Paragraph 0: word")
    assert sent[-1].content == (
        "(The rest of this reply could not be attached; it is kept in memory.)"
    )
    assert len(sent) <= math.ceil(DEFAULT_CAP / MESSAGE_LIMIT) + 2
