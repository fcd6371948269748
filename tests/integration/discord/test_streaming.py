"""Answers streamed into Discord as the model writes them, against the local fake Discord
(which records each message's edits with their times) and the local model server streaming
SSE: text visible before the model finishes, one edit a second at most per message, a 429
waited out, past 2,000 characters new messages cut at safe boundaries, typing only until the
first text, a stream cut part way shown and stored alike, two channels streaming at once."""

from __future__ import annotations

import itertools
import json
import re
import time

from bot.adapters.discord.render import MESSAGE_LIMIT, split_message
from bot.core.answering import INTERRUPTED
from bot.core.models import Role
from bot.wiring import App
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, RANDOM, StartBot
from tests.support.fake_discord import FakeDiscord, Person, Sent
from tests.support.fake_llm import Break, FakeLLM, Reply

FENCES = re.compile(r"^```", re.MULTILINE)
ANSWER = " ".join(f"word{i}" for i in range(30))
CHANNELS = (GENERAL, RANDOM)
MIN_GAP = 0.9  # seconds between two changes of one message, allowing for timer slack


async def ask(fake: FakeDiscord, text: str, channel_id: int = GENERAL, who: Person = BO) -> None:
    await fake.say(
        who, f"<@{BOT.id}> {text}", channel_id=channel_id, guild_id=GUILD, mentions=(BOT,)
    )


def versions(sent: Sent) -> list[tuple[float, str]]:
    """A message's contents as it was posted and then edited, with their times."""
    return [(sent.posted_at, str(sent.body.get("content") or "")), *sent.edits]


async def stored_answers(app: App, channel_id: int = GENERAL) -> list[str]:
    messages = await app.store.messages_between(
        conversation_key=f"discord:{GUILD}:{channel_id}", first_id=0, through_id=10**9
    )
    return [m.content for m in messages if m.role is Role.ASSISTANT]


async def test_the_reply_shows_early_and_is_edited_at_most_once_a_second(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    llm.script(Reply(ANSWER, piece_delay=0.1))  # about 3 s of writing
    async with start_bot():
        await ask(fake, "count for me")
        (sent,) = await fake.sent_count(1, quiet=0.5)
    assert sent.content == ANSWER
    finished_writing = llm.chat_records[-1].at + 30 * 0.1
    seen = versions(sent)
    first_at, first = seen[0]
    assert first and ANSWER.startswith(first) and len(first) < len(ANSWER)
    assert finished_writing - first_at > 1.5  # on Discord long before the model finished
    assert len(seen) >= 3  # grew in place while written
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(seen)]
    assert min(gaps) >= MIN_GAP, gaps
    texts = [text for _, text in seen]
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))
    assert len(fake.sent) == 1  # one message, edited: none posted then deleted


async def test_the_finished_answer_waits_its_turn_to_edit_the_message(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    """The model ends just after an edit: the finished text still comes a second later."""
    fake = discord_fake
    text = " ".join(ANSWER.split()[:13])
    llm.script(Reply(text, piece_delay=0.1))  # an edit about 1.1 s in, the end at 1.3 s
    async with start_bot():
        await ask(fake, "count for me")
        (sent,) = await fake.sent_count(1, quiet=0.5)
    seen = versions(sent)
    assert sent.content == text and len(seen) >= 2
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(seen)]
    assert min(gaps) >= MIN_GAP, gaps


async def test_a_429_on_an_edit_is_waited_out_and_the_stream_goes_on(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    llm.script(Reply(ANSWER, piece_delay=0.12))  # about 3.6 s of writing
    async with start_bot():
        fake.rate_limit_once("PATCH", rf"/channels/{GENERAL}/messages/\d+")
        await ask(fake, "count for me")
        (sent,) = await fake.sent_count(1, quiet=0.5)
    assert fake.rate_limited == [f"PATCH /channels/{GENERAL}/messages/{sent.message['id']}"]
    (limited_at,) = fake.rate_limited_at
    after = [(at, text) for at, text in sent.edits if at > limited_at]
    assert after[0][0] - limited_at >= 0.05  # the retry_after the 429 gave
    # Edits went on while the model wrote, not only the finished answer at the end.
    assert any(text != ANSWER for _, text in after), after
    assert sent.content == ANSWER


def long_answer() -> str:
    sentence = " ".join(["explain the change carefully."] * 8)
    prose = "\n\n".join(f"Step {i}: {sentence}" for i in range(6))
    code = "\n".join(f"    total += item_{i}  # keep a running sum" for i in range(45))
    return f"{prose}\n\n```python\ndef total():\n{code}\n```\n\nThat is all.\n\n{prose}"


async def test_a_long_answer_streams_on_in_new_messages_cut_at_safe_boundaries(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    text = long_answer()
    expected = [part.text for part in split_message(text)]
    assert 2 * MESSAGE_LIMIT < len(text) < 8000 and len(expected) >= 3
    llm.script(Reply(text, piece_delay=0.004))  # about 3 s of writing
    async with start_bot() as (app, _):
        await ask(fake, "explain")
        await fake.until(lambda: [s.content for s in fake.shown()] == expected)
        sent = await fake.sent_count(len(expected), quiet=0.5)
        assert await stored_answers(app) == [text]
    assert [s.content for s in sent] == expected
    # Later messages were posted while the model wrote, then grew.
    assert sum(versions(s)[0][1] != s.content for s in sent) >= 2
    for message in fake.sent:
        for _, shown in versions(message):
            assert len(shown) <= MESSAGE_LIMIT
            assert len(FENCES.findall(shown)) % 2 == 0, shown
    assert all(s.allowed_mentions == {"parse": []} for s in fake.sent)


async def test_typing_stops_once_the_first_text_shows(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    """discord.py types again every 5 s while typing is on: an answer written for 6 s after
    its first word shows whether it was turned off."""
    fake = discord_fake
    llm.script(Reply("first " + " ".join(["more"] * 12), delay=0.3, piece_delay=0.5))
    async with start_bot():
        await ask(fake, "take your time")
        (sent,) = await fake.sent_count(1, quiet=0.5)
    assert fake.typing == [GENERAL]  # once, on the question
    assert fake.typing_at[0] < sent.posted_at
    assert sent.edits[-1][0] - sent.posted_at > 5.5


async def test_a_stream_cut_part_way_keeps_its_text_marked_and_stores_what_is_shown(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    llm.script(Reply(ANSWER, piece_delay=0.1, breaks=Break(after=15, how="drop")))
    async with start_bot() as (app, _):
        await ask(fake, "count for me")
        await fake.until(lambda: any(INTERRUPTED in s.content for s in fake.shown()))
        (sent,) = await fake.sent_count(1, quiet=0.5)
        stored = await stored_answers(app)
    start = " ".join(ANSWER.split()[:15])
    assert sent.content == f"{start}\n\n{INTERRUPTED}"
    assert stored == [sent.content]
    assert sent.edits  # shown as it came, before the cut
    assert all(start.startswith(text) for _, text in versions(sent)[:-1])


async def test_a_slow_stream_in_one_channel_does_not_hold_up_another(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake

    def respond(body: dict[str, object]) -> Reply:
        slow = "slowly" in json.dumps(body["messages"])
        return Reply(ANSWER, piece_delay=0.15 if slow else 0.005)

    llm.responder = respond
    async with start_bot():
        await ask(fake, "answer slowly")
        await fake.until(lambda: len(fake.shown()) == 1)  # the slow one is streaming
        asked = time.monotonic()
        await ask(fake, "answer quickly", channel_id=RANDOM)
        await fake.until(lambda: any(s.content == ANSWER for s in fake.shown()))
        quick_done = time.monotonic()
        slow, quick = (next(s for s in fake.shown() if s.channel_id == c) for c in CHANNELS)
        assert quick.content == ANSWER and slow.content != ANSWER  # still writing
        await fake.until(lambda: slow.content == ANSWER)
    assert quick_done - asked < 2
    assert quick.posted_at < slow.edits[-1][0]
