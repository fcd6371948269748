"""Prompts reuse the rows the previous prompt read; what changes in the database still shows.

The store keeps recently read messages in memory (``bot.store.sqlite.rowcache``): these tests check
that a prompt built from that memory is the prompt the database holds, whatever changed it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.core.models import Conversation, IncomingMessage, Role, StoredMessage
from bot.core.prompt.assembler import Prompt
from bot.store.sqlite.rowcache import RowCache
from bot.store.sqlite.store import SqliteStore
from bot.wiring import App, open_app
from tests.conftest import is_summary_request
from tests.support.fake_llm import FakeLLM

GENERAL = Conversation.console("general")


def said(text: str, message_id: str | None = None, addressed: bool = True) -> IncomingMessage:
    return IncomingMessage(GENERAL, "ana", "Ana", text, addressed=addressed, message_id=message_id)


def last_prompt(llm: FakeLLM) -> list[str]:
    bodies = [body for body in llm.chat_requests if not is_summary_request(body)]
    return [message["content"] for message in bodies[-1]["messages"][1:]]


async def build_through(app: App, through_id: int) -> Prompt:
    """The prompt that answering message ``through_id`` builds."""
    settings = app.engine.settings_for(GENERAL)
    return await app.engine.assembler.build(
        settings=settings,
        conversation_key=GENERAL.key,
        channel_key=GENERAL.channel_key,
        through_id=through_id,
        current_id=through_id,
        budget=app.engine.budget(settings),
    )


async def prompt_through(app: App, through_id: int) -> list[str]:
    prompt = await build_through(app, through_id)
    return [message["content"] for message in prompt.messages]


async def test_an_edit_after_a_prompt_was_built_shows_in_the_next(app: App, llm: FakeLLM) -> None:
    await app.engine.handle_message(said("the meeting is at 3", message_id="m1"))
    assert "[Ana] the meeting is at 3" in last_prompt(llm)  # read, and kept in memory
    assert await app.engine.edit_message(GENERAL, "m1", "the meeting is at 4")
    await app.engine.handle_message(said("when is it?"))
    prompt = last_prompt(llm)
    assert "[Ana] the meeting is at 4" in prompt
    assert "[Ana] the meeting is at 3" not in prompt


async def test_a_reset_by_another_process_shows_in_the_next_prompt(app: App, llm: FakeLLM) -> None:
    await app.engine.handle_message(said("my locker code is 4711"))
    assert "[Ana] my locker code is 4711" in last_prompt(llm)
    other = await SqliteStore.open(app.store.path)  # what `bot reset` does, from its process
    try:
        assert await other.reset(conversation=GENERAL, include_pins=False) == 2
    finally:
        await other.close()
    await app.engine.handle_message(said("what is my code?"))
    assert last_prompt(llm) == ["[Ana] what is my code?"]


async def test_warm_and_cold_prompts_are_the_same_after_edits_and_deletes(
    app: App, llm: FakeLLM
) -> None:
    for number in range(12):
        await app.engine.handle_message(said(f"note {number}", message_id=f"n{number}"))
    await app.engine.edit_message(GENERAL, "n3", "note three, edited")
    await app.engine.delete_message(GENERAL, "n5")
    last = await app.engine.record(said("and now?"))
    warm = await prompt_through(app, last.id)
    async with open_app(app.config) as restarted:  # a fresh process: nothing in memory
        cold = await prompt_through(restarted, last.id)
    assert warm == cold
    assert "[Ana] note three, edited" in warm
    assert "[Ana] note 5" not in warm
    assert warm[-1] == "[Ana] and now?"


async def test_a_read_under_way_during_an_edit_does_not_bring_the_old_text_back(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    store = await SqliteStore.open(path)
    try:
        stored = await store.add_message(
            conversation=GENERAL,
            role=Role.USER,
            author_id="ana",
            author_name="Ana",
            content="old text",
            tokens=5,
            message_id="m1",
            created_at=0.0,
        )
        store._rows.clear()  # as after a restart: the next read goes to the database
        read = asyncio.create_task(
            store.window_messages(conversation_key=GENERAL.key, ids=[stored.id])
        )
        await asyncio.sleep(0)  # the read is queued first
        await store.edit_message(
            conversation_key=GENERAL.key, message_id="m1", content="new text", tokens=5
        )
        await read
        again = await store.window_messages(conversation_key=GENERAL.key, ids=[stored.id])
        assert [row.content for row in again] == ["new text"]
    finally:
        await store.close()


def row(message_id: int, text: str) -> StoredMessage:
    return StoredMessage(message_id, message_id, Role.USER, "a", "A", text, 1, 0.0)


def test_memory_follows_the_last_prompt_and_is_bounded() -> None:
    cache = RowCache(max_chars=1_000)
    cache.keep("c", [row(i, "x" * 10) for i in range(1, 41)])  # 10 characters each
    cache.add("c", row(101, "x" * 10))
    cache.keep("c", [row(100, "x" * 10)])  # 101 came after it; 1-40 are older
    held = [r.id for r in cache.get_many("c", range(1, 102)) if r is not None]
    # More than 16 older rows: the newest 8 stay (the next prompts cut again only past 16).
    assert held == [*range(33, 41), 100, 101]
    assert cache.chars == 100
    assert cache.get_many("other", [100]) == [None]  # never another conversation's row
    cache.keep("d", [row(200, "y" * 500)])
    cache.keep(
        "e", [row(300, "z" * 410)]
    )  # 100 + 500 + 410 > 1,000: "c", used least recently, goes
    assert cache.get_many("c", [100]) == [None]
    assert cache.chars == 910


async def test_a_pushpin_after_a_message_was_in_a_prompt_reaches_the_next_prompts_rows(
    app: App, llm: FakeLLM
) -> None:
    await app.engine.handle_message(said("Ana owns billing", message_id="m1"))
    last = await app.engine.record(said("ok"))
    before = await build_through(app, last.id)
    assert [row.important for row in before.window if row.message_id == "m1"] == [False]
    assert await app.engine.mark_important(GENERAL, "m1", True)
    after = await build_through(app, last.id)
    assert [row.important for row in after.window if row.message_id == "m1"] == [True]


def test_a_window_held_whole_is_served_and_one_row_missing_is_not() -> None:
    cache = RowCache()
    cache.keep("c", [row(i, "x") for i in range(1, 11)])
    assert [r.id for r in cache.window("c", [3, 4, 9]) or []] == [3, 4, 9]
    assert cache.window("c", [3, 11]) is None  # 11 must be read: the caller asks the database
    assert cache.window("other", [3]) is None
    cache.add("c", row(11, "x"))
    assert [r.id for r in cache.window("c", [10, 11]) or []] == [10, 11]
