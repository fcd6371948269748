"""A platform message is stored once per conversation, enforced by the database: across
connections (processes) on one file, and in databases made before the rule, which keep the
first copy of each duplicate."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from bot.core.models import Conversation, Role
from bot.core.ports.store import Duplicate
from bot.store.sqlite.store import SqliteStore
from tests.support import old_schemas

GENERAL = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "5.0")


async def add(store: SqliteStore, conversation: Conversation, text: str, message_id: str) -> int:
    stored = await store.add_message(
        conversation=conversation,
        role=Role.USER,
        author_id="U1",
        author_name="Ana",
        content=text,
        tokens=3,
        message_id=message_id,
        created_at=1.0,
    )
    return stored.id


async def test_two_connections_storing_the_same_message_store_it_once(tmp_path: Path) -> None:
    path = str(tmp_path / "bot.sqlite3")
    first, second = await SqliteStore.open(path), await SqliteStore.open(path)
    try:
        results = await asyncio.gather(
            add(first, GENERAL, "hello", "5.0"),
            add(second, GENERAL, "hello", "5.0"),
            return_exceptions=True,
        )
        # The thread's copy of its root is another conversation's message: it is stored.
        await add(second, THREAD, "hello", "5.0")
        assert await first.count_messages(conversation_key=GENERAL.key) == 1
        assert await first.count_messages(conversation_key=THREAD.key) == 1
    finally:
        await first.close()
        await second.close()
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(refused) == 1 and isinstance(refused[0], Duplicate)
    kept = next(r for r in results if isinstance(r, int))
    assert refused[0].existing.id == kept


def schema_8_database(path: Path) -> None:
    """A database as the version before the rule made it, holding duplicates: a question
    stored twice (answered as its second copy) and a chatter line stored three times."""
    db = old_schemas.connect(path)
    old_schemas.build(db, 8)
    rows = [
        (1, None, "user", "question?", "1.1"),
        (2, None, "user", "chatter", "1.2"),
        (3, None, "user", "question?", "1.1"),
        (4, 3, "assistant", "the answer", "9.1"),
        (5, None, "user", "chatter", "1.2"),
        (6, None, "user", "chatter", "1.2"),
        (7, None, "user", "no platform id", None),
        (8, None, "user", "no platform id", None),
    ]
    db.execute("INSERT INTO conversations VALUES (?, ?, 0, 1.0)", (GENERAL.key, GENERAL.key))
    for id_, reply_to, role, content, platform_id in rows:
        db.execute(
            "INSERT INTO messages (id, conversation, reply_to, role, author_id, author_name,"
            " content, tokens, platform_message_id, created_at) VALUES (?, ?, ?, ?, 'U1', 'Ana',"
            " ?, 3, ?, 1.0)",
            (id_, GENERAL.key, reply_to, role, content, platform_id),
        )
    db.close()


async def test_a_database_with_duplicates_migrates_keeping_the_first_copy(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    schema_8_database(path)
    store = await SqliteStore.open(str(path))
    try:
        kept = await store.messages_after_turn(conversation_key=GENERAL.key, after_turn=0, limit=20)
        results = await asyncio.gather(
            add(store, GENERAL, "chatter", "1.2"), return_exceptions=True
        )
        assert await store.integrity_check() == "ok"
    finally:
        await store.close()
    assert [(m.id, m.turn_id, m.content) for m in kept] == [
        (1, 1, "question?"),
        (2, 2, "chatter"),
        (4, 1, "the answer"),  # now the answer to the copy kept
        (7, 7, "no platform id"),
        (8, 8, "no platform id"),
    ]
    assert isinstance(results[0], Duplicate)
    db = sqlite3.connect(path)
    try:
        index = db.execute("SELECT rowid FROM message_index ORDER BY rowid").fetchall()
    finally:
        db.close()
    assert index == [(1,), (2,), (4,), (7,), (8,)]  # the search index lost the copies too
