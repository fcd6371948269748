"""The SQLite store: schema, durability settings, and reads that don't grow with history."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.core.models import Conversation, IncomingMessage, Role
from bot.core.ports.store import NewSummary
from bot.store.sqlite.store import _LATEST_SUMMARY_KEY, SCHEMA_VERSION, DatabaseError, SqliteStore
from bot.wiring import open_app
from tests.conftest import ConfigFactory

GENERAL = Conversation.console("general")


async def add(store: SqliteStore, text: str, reply_to: int | None = None) -> int:
    message = await store.add_message(
        conversation=GENERAL,
        role=Role.ASSISTANT if reply_to else Role.USER,
        author_id="a",
        author_name="Ana",
        content=text,
        tokens=len(text),
        message_id=None,
        created_at=0.0,
        reply_to=reply_to,
    )
    return message.id


async def test_a_new_database_is_migrated_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    await store.close()
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_database_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    sqlite3.connect(path).execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(
        DatabaseError, match=r"written by a newer version of the bot \(schema \d+; this one knows"
    ):
        await SqliteStore.open(str(path))


async def test_messages_survive_a_reopen_with_their_turns(tmp_path: Path) -> None:
    path = str(tmp_path / "bot.sqlite3")
    store = await SqliteStore.open(path)
    question = await add(store, "question")
    await add(store, "answer", reply_to=question)
    await store.close()
    store = await SqliteStore.open(path)
    rows = await store.recent_messages(
        conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=10
    )
    await store.close()
    assert [(r.content, r.turn_id) for r in rows] == [("answer", question), ("question", question)]


async def test_building_a_prompt_reads_through_the_index(tmp_path: Path) -> None:
    store = await SqliteStore.open(str(tmp_path / "bot.sqlite3"))
    await store.close()
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    plan = " ".join(
        row[3]
        for row in db.execute(
            "EXPLAIN QUERY PLAN SELECT id FROM messages WHERE conversation = ? AND id > ?"
            " AND id <= ? AND COALESCE(reply_to, id) > ? ORDER BY id DESC LIMIT 256",
            ("k", 0, 10, 0),
        )
    )
    assert "messages_by_conversation" in plan
    assert "TEMP B-TREE" not in plan  # no sort of the whole history


def summary(text: str) -> NewSummary:
    return NewSummary(GENERAL.key, text, 3, 1, 1, 1, 1, 1, False, "m")


async def test_the_latest_summary_is_the_one_stored_whoever_stored_it(tmp_path: Path) -> None:
    """The bot keeps the summary it read last and reads it again only when a newer one is
    stored: by itself or by another process (``bot reset`` and a second bot on the same file),
    even when that one took the id of the one kept."""
    path = str(tmp_path / "bot.sqlite3")
    bot, other = await SqliteStore.open(path), await SqliteStore.open(path)
    try:
        await add(bot, "question")
        first = await bot.save_summary(summary("Ana owns billing."), generation=0, previous_id=None)
        assert first is not None
        assert await bot.latest_summary(conversation_key=GENERAL.key) == first
        assert await bot.latest_summary(conversation_key=GENERAL.key) is first  # kept
        second = await other.save_summary(
            summary("Ana owns billing; Bo owns search."), generation=0, previous_id=first.id
        )
        assert second is not None
        assert await bot.latest_summary(conversation_key=GENERAL.key) == second
        await other.reset(conversation=GENERAL, include_pins=False)
        assert await bot.latest_summary(conversation_key=GENERAL.key) is None
        third = await other.save_summary(summary("Cy joined."), generation=1, previous_id=None)
        assert third is not None and third.id == first.id  # the id came back after the reset
        assert await bot.latest_summary(conversation_key=GENERAL.key) == third
        await other.reset(conversation=GENERAL, include_pins=False)
        fourth = await other.save_summary(summary("Di left."), generation=2, previous_id=None)
        assert fourth is not None and fourth.id == third.id  # and again, with no read between
        assert await bot.latest_summary(conversation_key=GENERAL.key) == fourth
    finally:
        await bot.close()
        await other.close()


async def test_a_prompt_knows_the_latest_summary_from_the_index(tmp_path: Path) -> None:
    store = await SqliteStore.open(str(tmp_path / "bot.sqlite3"))
    await store.close()
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    plan = " ".join(
        row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {_LATEST_SUMMARY_KEY}", ("k",))
    )
    assert "COVERING INDEX summaries_by_conversation" in plan  # the summary's text is not read


async def test_stored_counts_follow_a_change_of_chat_model_encoding(
    make_config: ConfigFactory,
) -> None:
    text = "数据库密码轮换周期是九十天" * 20
    async with open_app(make_config(llm={"chat_model": "gpt-4", "summary_model": "gpt-4"})) as app:
        first = await app.engine.record(IncomingMessage(GENERAL, "a", "Ana", text, addressed=False))
    async with open_app(make_config()) as app:  # gpt-4o-mini: o200k_base
        rows = await app.store.recent_messages(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=10
        )
        assert rows[0].tokens == app.engine.tokenizer.count(rows[0].rendered)
        assert rows[0].tokens < first.tokens


async def test_prompt_reads_do_not_wait_for_another_process_writing(tmp_path: Path) -> None:
    """A long write elsewhere (an import, a backup restore) holds the write lock; the reads a
    prompt is built from go on, seeing what was committed, and see the write once it is."""
    path = str(tmp_path / "bot.sqlite3")
    store = await SqliteStore.open(path, busy_timeout_ms=60_000)
    try:
        first = await add(store, "committed before")
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute(
            "INSERT INTO messages (conversation, role, author_id, author_name, content, tokens,"
            " created_at) VALUES (?, 'user', 'b', 'Bo', 'written elsewhere', 3, 0)",
            (GENERAL.key,),
        )
        costs = await asyncio.wait_for(
            store.turn_costs(
                conversation_key=GENERAL.key,
                through_id=10**9,
                after_turn=0,
                before_turn=None,
                limit=10,
            ),
            timeout=5,  # the busy timeout is a minute: waiting would fail here
        )
        assert [turn.ids for turn in costs] == [(first,)]
        other.execute("COMMIT")
        rows = await store.recent_messages(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=10
        )
        assert [row.content for row in rows] == ["written elsewhere", "committed before"]
        other.close()
    finally:
        await store.close()


async def test_an_in_memory_database_serves_every_read() -> None:
    store = await SqliteStore.open(":memory:")
    try:
        question = await add(store, "question")
        await add(store, "answer", reply_to=question)
        costs = await store.turn_costs(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, before_turn=None, limit=10
        )
        assert [turn.ids for turn in costs] == [(question, question + 1)]
        rows = await store.window_messages(conversation_key=GENERAL.key, ids=list(costs[0].ids))
        assert [(r.content, r.turn_id) for r in rows] == [
            ("question", question),
            ("answer", question),
        ]
    finally:
        await store.close()
