"""👀 on a question while the bot answers it (``discord.status_reaction``), through discord.py
against the local fake Discord: added when the answer starts, removed once it is sent or has
failed, never when unset, and a reaction Discord refuses never holds up an answer."""

from __future__ import annotations

import logging

import pytest

from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, StartBot
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM, Reply

ANSWER = " ".join(f"word{i}" for i in range(12))


async def ask(fake: FakeDiscord, text: str) -> str:
    question = await fake.say(
        BO, f"<@{BOT.id}> {text}", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,)
    )
    return str(question["id"])


def reaction_requests(fake: FakeDiscord) -> list[int]:
    """Where the reaction calls come among all the bot's requests."""
    return [i for i, (_, path) in enumerate(fake.requests) if "/reactions/" in path]


async def test_eyes_are_on_the_question_while_it_is_answered(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    llm.script(Reply(ANSWER, piece_delay=0.1), Reply.server_error())
    async with start_bot(status_reaction="👀"):
        question = await ask(fake, "count for me")
        await fake.until(lambda: bool(fake.reactions))
        assert fake.reactions == [("add", GENERAL, question, "👀")]
        assert all(s.content != ANSWER for s in fake.shown())  # still answering
        await fake.until(lambda: len(fake.reactions) == 2)
        (sent,) = fake.shown()
        assert sent.content == ANSWER
        assert fake.reactions[1] == ("remove", GENERAL, question, "👀")
        last_edit = max(i for i, (m, _) in enumerate(fake.requests) if m == "PATCH")
        assert reaction_requests(fake)[1] > last_edit  # taken back once the answer is whole

        failed = await ask(fake, "and again")  # the model fails: an error reply, then removed
        await fake.until(lambda: len(fake.reactions) == 4)
        await fake.sent_count(2)
    assert fake.reactions[2:] == [("add", GENERAL, failed, "👀"), ("remove", GENERAL, failed, "👀")]


async def test_no_reaction_unless_configured(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    llm.script(Reply(ANSWER, piece_delay=0.02))
    async with start_bot():
        await ask(discord_fake, "count for me")
        (sent,) = await discord_fake.sent_count(1, quiet=0.3)
    assert sent.content == ANSWER
    assert discord_fake.reactions == [] and reaction_requests(discord_fake) == []


async def test_a_refused_reaction_is_logged_once_and_the_answers_go_on(
    start_bot: StartBot,
    discord_fake: FakeDiscord,
    llm: FakeLLM,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = discord_fake
    fake.refuse_reactions = True  # no Add Reactions permission
    with caplog.at_level(logging.DEBUG, logger="bot.adapters.status"):
        async with start_bot(status_reaction="👀"):
            await ask(fake, "first")
            await fake.sent_count(1)
            await ask(fake, "second")
            sent = await fake.sent_count(2)
    assert [s.content for s in sent] == ["echo: [Bo] first", "echo: [Bo] second"]
    assert fake.reactions == []
    assert len(reaction_requests(fake)) == 2  # each answer tried to add it; none to remove
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "status reaction 👀" in warned[0].getMessage()
