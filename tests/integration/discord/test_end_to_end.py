"""The adapter end to end: discord.py's real code against a local fake Discord, the engine,
real SQLite and the local OpenAI-compatible server."""

from __future__ import annotations

from typing import Any

from tests.conftest import is_summary_request
from tests.support.discord_bot import (
    ANA,
    BO,
    BOT,
    GENERAL,
    GUILD,
    OTHER_BOT,
    RANDOM,
    RELEASE_THREAD,
    StartBot,
    team_guild,
)
from tests.support.fake_discord import FakeDiscord, eventually
from tests.support.fake_llm import FakeLLM, count_prompt_tokens


def chat_bodies(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


def turns(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"][1:]]


async def test_two_channels_and_a_thread_get_their_own_prompts_with_shared_pins(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot() as (app, platform):
        assert platform.connected
        assert fake.identify is not None and fake.identify["intents"] & (1 << 15)
        await fake.command(
            ANA, "pin", {"text": "Releases ship on Fridays"}, channel_id=GENERAL, guild_id=GUILD
        )
        await fake.until(lambda: len(fake.followups) == 1)
        assert "Pinned #1" in fake.followups[0]["content"]
        await fake.say(ANA, "the release is v2.3", channel_id=GENERAL, guild_id=GUILD)
        await fake.say(
            BO,
            f"<@{BOT.id}> which version ships?",
            channel_id=GENERAL,
            guild_id=GUILD,
            mentions=(BOT,),
        )
        sent = await fake.sent_count(1)
        general = chat_bodies(llm)[-1]
        assert "Releases ship on Fridays" in general["messages"][0]["content"]
        assert turns(general) == ["[Ana N] the release is v2.3", "[Bo] which version ships?"]
        assert sent[0].channel_id == GENERAL
        assert sent[0].content == "echo: [Bo] which version ships?"
        assert sent[0].allowed_mentions == {"parse": []}
        assert "message_reference" in sent[0].body
        assert GENERAL in fake.typing

        await fake.say(
            BO, f"<@{BOT.id}> hello random", channel_id=RANDOM, guild_id=GUILD, mentions=(BOT,)
        )
        await fake.sent_count(2)
        random = chat_bodies(llm)[-1]
        assert turns(random) == ["[Bo] hello random"]
        assert "Releases ship on Fridays" not in random["messages"][0]["content"]
        assert fake.sent[1].channel_id == RANDOM

        await fake.say(
            ANA,
            f"<@{BOT.id}> thread question",
            channel_id=RELEASE_THREAD,
            guild_id=GUILD,
            mentions=(BOT,),
        )
        await fake.sent_count(3)
        thread = chat_bodies(llm)[-1]
        assert "Releases ship on Fridays" in thread["messages"][0]["content"]
        assert turns(thread) == ["[Ana N] thread question"]
        assert fake.sent[2].channel_id == RELEASE_THREAD

        for body in chat_bodies(llm):
            tokens = count_prompt_tokens("gpt-4o-mini", body["messages"])
            assert tokens <= app.config.memory.max_context_tokens
        keys = {row.key for row in await app.store.conversations()}
        assert keys >= {
            f"discord:{GUILD}:{GENERAL}",
            f"discord:{GUILD}:{RANDOM}",
            f"discord:{GUILD}:{GENERAL}:{RELEASE_THREAD}",
        }


async def test_dms_replies_and_answer_channels_are_answered_and_bots_are_not_input(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot(answer_channels=[RANDOM]) as (app, _):
        await fake.say(ANA, "hi in private", channel_id=8001, guild_id=None)
        await fake.sent_count(1)
        assert fake.sent[0].channel_id == 8001
        assert turns(chat_bodies(llm)[-1]) == ["[Ana] hi in private"]

        await fake.say(
            OTHER_BOT, f"<@{BOT.id}> beep", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,)
        )
        bots_own = fake.message(BOT, "an earlier answer", channel_id=GENERAL, guild_id=GUILD)
        await fake.dispatch("MESSAGE_CREATE", bots_own)
        await fake.say(BO, "a reply to you", channel_id=GENERAL, guild_id=GUILD, reply_to=bots_own)
        await fake.sent_count(2)
        assert turns(chat_bodies(llm)[-1]) == ["[Bo] a reply to you"]

        await fake.say(BO, "no mention needed here", channel_id=RANDOM, guild_id=GUILD)
        await fake.sent_count(3)
        assert fake.sent[2].channel_id == RANDOM
        general = f"discord:{GUILD}:{GENERAL}"
        assert await app.store.count_messages(conversation_key=general) == 2
        assert len(chat_bodies(llm)) == 3


async def test_record_addressed_keeps_only_what_is_addressed(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot(record="addressed") as (app, _):
        await fake.say(ANA, "chatter the bot should not keep", channel_id=GENERAL, guild_id=GUILD)
        await fake.say(BO, f"<@{BOT.id}> hi", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,))
        await fake.sent_count(1)
        assert turns(chat_bodies(llm)[-1]) == ["[Bo] hi"]
        general = f"discord:{GUILD}:{GENERAL}"
        assert await app.store.count_messages(conversation_key=general) == 2


async def test_edits_and_deletions_update_memory(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    key = f"discord:{GUILD}:{GENERAL}:{RELEASE_THREAD}"
    async with start_bot() as (app, _):
        where = {"channel_id": RELEASE_THREAD, "guild_id": GUILD}
        typo = await fake.say(ANA, "the budget is 5k", **where)
        gone = await fake.say(BO, "something to delete", **where)

        async def stored() -> list[str]:
            found = [
                await app.store.find_message(conversation_key=key, message_id=m["id"])
                for m in (typo, gone)
            ]
            return [m.content if m else "-" for m in found]

        await eventually(lambda: _equals(stored(), ["the budget is 5k", "something to delete"]))
        await fake.edit(typo, "the budget is 7k")
        await fake.delete(gone)
        await eventually(lambda: _equals(stored(), ["the budget is 7k", "-"]))
        # The bot's own messages come back as edits too: never user input.
        await fake.edit(fake.message(BOT, "echo", **where), "edited by the bot")
        await fake.say(ANA, f"<@{BOT.id}> budget?", mentions=(BOT,), **where)
        await fake.sent_count(1)
        assert turns(chat_bodies(llm)[-1]) == ["[Ana N] the budget is 7k", "[Ana N] budget?"]
        assert await app.store.count_messages(conversation_key=key) == 3


async def test_deleting_the_bots_answer_removes_it_from_memory(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    key = f"discord:{GUILD}:{GENERAL}"
    async with start_bot() as (app, _):
        where = {"channel_id": GENERAL, "guild_id": GUILD}
        await fake.say(ANA, f"<@{BOT.id}> first question", mentions=(BOT,), **where)
        (answer,) = await fake.sent_count(1)
        await eventually(
            lambda: app.store.find_message(conversation_key=key, message_id=answer.message["id"])
        )
        await fake.delete({**answer.message, "guild_id": str(GUILD)})
        await eventually(lambda: _gone(app, key, answer.message["id"]))
        await fake.say(ANA, f"<@{BOT.id}> second", mentions=(BOT,), **where)
        await fake.sent_count(2)
        assert turns(chat_bodies(llm)[-1]) == ["[Ana N] first question", "[Ana N] second"]


async def _gone(app: Any, key: str, message_id: str) -> bool:
    return await app.store.find_message(conversation_key=key, message_id=message_id) is None


async def _equals(value: Any, expected: list[str]) -> bool:
    return bool(await value == expected)


async def test_a_small_budget_keeps_each_channel_within_it(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    budget = 400
    async with start_bot(memory={"strategy": "full", "max_context_tokens": budget}):
        for i in range(12):
            for channel in (GENERAL, RANDOM):
                who = ANA if i % 2 else BO
                await fake.say(
                    who,
                    f"<@{BOT.id}> note {i} in {channel} " + "filler " * 15,
                    channel_id=channel,
                    guild_id=GUILD,
                    mentions=(BOT,),
                )
            await fake.sent_count(2 * (i + 1))
    bodies = chat_bodies(llm)
    assert len(bodies) == 24
    for body in bodies:
        assert count_prompt_tokens("gpt-4o-mini", body["messages"]) <= budget
        channel = turns(body)[-1].split(" in ")[1].split()[0]
        assert all(f" in {channel} " in t for t in turns(body) if t.startswith("["))
    last = turns(bodies[-1])
    assert last[-1].startswith("[Ana N] note 11 in")
    assert not any("note 0 " in t for t in last)


async def test_mentioning_the_bots_own_role_addresses_it_and_other_roles_do_not(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake, guild = discord_fake, team_guild()
    async with start_bot() as (app, _):
        # Discord's autocomplete offers the bot's role for its name as well as the bot itself.
        own = f"<@&{guild.bot_role_id}>"
        await fake.say(
            ANA, f"{own} what is due?", channel_id=GENERAL, guild_id=GUILD,
            role_mentions=(guild.bot_role_id,),
        )  # fmt: skip
        await fake.sent_count(1)
        assert turns(chat_bodies(llm)[-1]) == ["[Ana N] what is due?"]  # the role markup gone
        team = f"<@&{guild.team_role_id}>"
        await fake.say(
            BO, f"{team} standup moved", channel_id=GENERAL, guild_id=GUILD,
            role_mentions=(guild.team_role_id,),
        )  # fmt: skip
        general = f"discord:{GUILD}:{GENERAL}"

        async def stored_three() -> bool:
            return await app.store.count_messages(conversation_key=general) == 3

        await eventually(stored_three)
        assert len(chat_bodies(llm)) == 1  # remembered, not answered
        assert len(fake.sent) == 1


async def test_a_message_the_gateway_delivers_twice_is_stored_and_answered_once(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    async with start_bot() as (app, _):
        question = fake.message(
            ANA, f"<@{BOT.id}> only once", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,)
        )
        await fake.dispatch("MESSAGE_CREATE", question)
        await fake.dispatch("MESSAGE_CREATE", question)  # replayed after a resume
        await fake.say(BO, f"<@{BOT.id}> next", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,))
        await fake.sent_count(2)
        await fake.until(lambda: len(chat_bodies(llm)) >= 2)
        stored = await app.store.messages_after_turn(
            conversation_key=f"discord:{GUILD}:{GENERAL}", after_turn=0, limit=10
        )
    assert [m.content for m in stored if m.role.value == "user"] == ["only once", "next"]
    assert len(chat_bodies(llm)) == 2
    assert [s.content for s in fake.sent] == ["echo: [Ana N] only once", "echo: [Bo] next"]
