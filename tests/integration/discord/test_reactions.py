"""📌 reactions through discord.py's raw reaction events, against the local fake Discord."""

from __future__ import annotations

from typing import Any

from bot.wiring import App
from tests.conftest import is_summary_request
from tests.support.discord_bot import ANA, BO, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord, Person, eventually
from tests.support.fake_llm import FakeLLM

KEY = f"discord:{GUILD}:{GENERAL}"
WHERE = {"channel_id": GENERAL, "guild_id": GUILD}
CY = Person(7004, "Cy")


def last_turns(llm: FakeLLM) -> list[str]:
    body = [b for b in llm.chat_requests if not is_summary_request(b)][-1]
    return [m["content"] for m in body["messages"][1:]]


async def marked(app: App, message: dict[str, Any]) -> bool:
    found = await app.store.find_message(conversation_key=KEY, message_id=message["id"])
    return found is not None and found.important


async def test_a_pushpin_keeps_a_message_in_the_window_until_it_is_taken_back(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    asked = 0

    async def chatter_then_ask() -> list[str]:
        nonlocal asked
        for i in range(12):
            await fake.say(CY, f"chatter {i} " + "blah " * 30, **WHERE)
        await fake.say(ANA, f"<@{BOT.id}> anything to note?", mentions=(BOT,), **WHERE)
        asked += 1
        await fake.sent_count(asked)
        return last_turns(llm)

    async with start_bot(memory={"strategy": "full", "max_context_tokens": 500}) as (app, _):
        note = await fake.say(BO, "Ana owns billing", **WHERE)
        await eventually(
            lambda: app.store.find_message(conversation_key=KEY, message_id=note["id"])
        )
        await fake.react(ANA, fake.message(BO, "never seen", **WHERE), "📌")  # unknown: ignored
        await fake.react(ANA, note, "👍")  # not a pin
        await fake.react(BOT, note, "📌")  # the bot's own reaction does not count
        assert "[Bo] Ana owns billing" not in await chatter_then_ask()
        assert not await marked(app, note)

        await fake.react(ANA, note, "📌")
        await eventually(lambda: marked(app, note))
        assert "[Bo] Ana owns billing" in await chatter_then_ask()

        await fake.react(ANA, note, "📌", added=False)
        await eventually(lambda: _not(marked(app, note)))
        assert "[Bo] Ana owns billing" not in await chatter_then_ask()


async def _not(value: Any) -> bool:
    return not await value
