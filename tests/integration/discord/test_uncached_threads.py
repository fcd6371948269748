"""A thread discord.py has not cached (archived, say) is still a thread of its channel: its
messages, deletions and 📌 reach the thread's memory, through discord.py's real code against
the local fake Discord."""

from __future__ import annotations

import pytest

from bot.wiring import App
from tests.conftest import is_summary_request
from tests.support.discord_bot import ANA, ARCHIVED_THREAD, BO, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord, eventually
from tests.support.fake_llm import FakeLLM

THREAD_KEY = f"discord:{GUILD}:{GENERAL}:{ARCHIVED_THREAD}"
WHERE = {"channel_id": ARCHIVED_THREAD, "guild_id": GUILD}


async def stored(app: App, message_id: str) -> bool:
    found = await app.store.find_message(conversation_key=THREAD_KEY, message_id=message_id)
    return found is not None


async def test_an_uncached_thread_keeps_its_memory_under_its_channel(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot() as (app, _):
        await fake.command(
            ANA, "pin", {"text": "Releases ship on Fridays"}, channel_id=GENERAL, guild_id=GUILD
        )
        await fake.until(lambda: len(fake.followups) == 1)
        note = await fake.say(ANA, "the old plan was v1.9", **WHERE)
        typo = await fake.say(BO, "v1.8 actually, no wait", **WHERE)
        await fake.say(ANA, f"<@{BOT.id}> what was the plan?", mentions=(BOT,), **WHERE)
        sent = await fake.sent_count(1)
        assert sent[0].channel_id == ARCHIVED_THREAD
        body = [b for b in llm.chat_requests if not is_summary_request(b)][-1]
        assert "Releases ship on Fridays" in body["messages"][0]["content"]  # the channel's pins
        assert [m["content"] for m in body["messages"][1:]] == [
            "[Ana N] the old plan was v1.9",
            "[Bo] v1.8 actually, no wait",
            "[Ana N] what was the plan?",
        ]
        assert await stored(app, note["id"])

        await fake.delete(typo)
        await eventually(lambda: _gone(app, typo["id"]))
        await fake.react(BO, note, "📌")

        async def marked() -> bool:
            found = await app.store.find_message(conversation_key=THREAD_KEY, message_id=note["id"])
            return found is not None and found.important

        await eventually(marked)
        keys = {row.key for row in await app.store.conversations()}
        assert f"discord:{GUILD}:{ARCHIVED_THREAD}" not in keys  # never a channel of its own
        asked = [r for r in fake.requests if r == ("GET", f"/channels/{ARCHIVED_THREAD}")]
        assert len(asked) == 1  # asked once, then remembered


async def _gone(app: App, message_id: str) -> bool:
    return not await stored(app, message_id)


async def test_a_channel_discord_will_not_describe_is_answered_as_a_channel(
    start_bot: StartBot, discord_fake: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    fake = discord_fake
    unknown = 6999  # not in the server's state, and GET /channels/6999 answers 404
    async with start_bot() as (app, _):
        await fake.say(
            ANA, f"<@{BOT.id}> hello?", channel_id=unknown, guild_id=GUILD, mentions=(BOT,)
        )
        sent = await fake.sent_count(1)
        assert sent[0].channel_id == unknown
        keys = {row.key for row in await app.store.conversations()}
        assert f"discord:{GUILD}:{unknown}" in keys
    assert f"cannot tell whether channel {unknown} is a thread" in caplog.text
