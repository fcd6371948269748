"""Every released database is taken forward: one of each earlier schema version, built from
that version's own SQL (tests/support/old_schemas.py) and holding messages, pins and a
summary, opens with today's store with all of them kept, searchable, settings and model calls
taken, and no Python function left in the database."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path

import pytest

from bot.core.memory.terms import query_terms
from bot.core.models import Conversation, Role
from bot.core.ports.prompts import PromptRecord
from bot.core.ports.spend import ModelCall
from bot.core.ports.store import CalibrationSample
from bot.store.sqlite.store import SCHEMA_VERSION, SqliteStore
from tests.support import old_schemas

GENERAL = Conversation.console("general")
MESSAGES = (
    (1, None, "user", "Ana", "the guest wifi password is tangerine-42"),
    (2, 1, "assistant", "bot", "noted: tangerine-42"),
    (3, None, "user", "Bo", "明天有客人来，访客WiFi密码是 xingyun-88。"),
)

PROMPT = PromptRecord(
    at=2.0,
    conversation_key=GENERAL.key,
    channel_key=GENERAL.channel_key,
    question_id=3,
    question="the locker code?",
    person="cy",
    model="m",
    tokens=9,
    budget=100,
    layers={"system": 5, "recent": 4},
    messages=({"role": "user", "content": "[Cy] the locker code?"},),
)


def old_database(path: Path, version: int) -> None:
    db = old_schemas.connect(path)
    old_schemas.build(db, version)
    db.execute("INSERT INTO conversations VALUES (?, ?, 0, 1.0)", (GENERAL.key, GENERAL.key))
    for id_, reply_to, role, author, content in MESSAGES:
        db.execute(
            "INSERT INTO messages (id, conversation, reply_to, role, author_id, author_name,"
            " content, tokens, platform_message_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 7,"
            " ?, 1.0)",
            (id_, GENERAL.key, reply_to, role, author.lower(), author, content, f"p{id_}"),
        )
    db.execute("INSERT INTO calibration VALUES ('llama3', 1.25, 4, 1.0)")
    db.execute(
        "INSERT INTO pins (channel_key, text, tokens, author_id, author_name, created_at)"
        " VALUES (?, 'deploys on Fridays', 4, 'ana', 'Ana', 1.0)",
        (GENERAL.channel_key,),
    )
    db.execute(
        "INSERT INTO summaries (conversation, content, tokens, covers_through_turn,"
        " message_count, first_message_id, last_message_id, compactions, rebuilt, model,"
        " created_at) VALUES (?, 'Ana runs the guest network.', 6, 1, 2, 1, 2, 1, 0, 'm', 1.0)",
        (GENERAL.key,),
    )
    db.close()


@pytest.mark.parametrize("version", range(1, len(old_schemas.MIGRATIONS) + 1))
async def test_a_database_of_each_earlier_version_opens_with_everything_kept(
    tmp_path: Path, version: int
) -> None:
    path = tmp_path / "bot.sqlite3"
    old_database(path, version)
    store = await SqliteStore.open(str(path))
    try:
        rows = await store.messages_after_turn(conversation_key=GENERAL.key, after_turn=0, limit=9)
        pins = await store.pins(channel_key=GENERAL.channel_key)
        latest = await store.latest_summary(conversation_key=GENERAL.key)
        english = await store.search_messages(
            conversation_key=GENERAL.key, terms=["tangerine"], before_id=10, limit=5
        )
        chinese = await store.search_messages(
            conversation_key=GENERAL.key, terms=query_terms("密码"), before_id=10, limit=5
        )
        counts = await store.term_counts(conversation_key=GENERAL.key, terms=["tangerine", "42"])
        stored = await store.count_messages(conversation_key=GENERAL.key)
        calibration = await store.calibration_samples()
        added = await store.add_message(
            conversation=GENERAL,
            role=Role.USER,
            author_id="cy",
            author_name="Cy",
            content="the locker code is 1111",
            tokens=5,
            message_id="p9",
            created_at=2.0,
        )
        locker = await store.search_messages(
            conversation_key=GENERAL.key, terms=["locker"], before_id=100, limit=5
        )
        await store.change_setting(
            scope=GENERAL.key, key="model", value="m", by_id="cy", by_name="Cy", at=2.0
        )
        settings = await store.settings_of(scopes=[GENERAL.key])
        await store.record_call(call=ModelCall(2.0, GENERAL, "cy", "m", "chat", 9, 3, 2, 0.25))
        spent = await store.spend(since=None, until=None, channel_key=GENERAL.channel_key)
        usage = await store.usage(conversation_key=GENERAL.key)
        await store.log_prompt(record=PROMPT, keep=3)
        logged = await store.logged_prompts(channel_key=GENERAL.channel_key, limit=3)
    finally:
        await store.close()
    assert [(m.id, m.turn_id, m.author_name, m.content) for m in rows] == [
        (id_, reply_to or id_, author, content) for id_, reply_to, _, author, content in MESSAGES
    ]
    assert [(p.text, p.author_name) for p in pins] == [("deploys on Fridays", "Ana")]
    assert latest is not None and latest.content == "Ana runs the guest network."
    assert sorted(m.id for m in english) == [1, 2]
    assert [m.id for m in chinese] == [3]
    assert counts == {"tangerine": 2, "42": 2} and stored == 3
    assert [m.id for m in locker] == [added.id]
    assert settings == {GENERAL.key: {"model": "m"}}
    assert [(s.model, s.requests, s.cached_tokens, s.cost) for s in spent] == [("m", 1, 3, 0.25)]
    assert [(u.model, u.requests, u.prompt_tokens) for u in usage] == [("m", 1, 9)]
    assert [(p.question, p.messages) for p in logged] == [(PROMPT.question, PROMPT.messages)]
    # A model's one ratio is carried over as a sample of 1,000 Latin tokens.
    assert calibration == [CalibrationSample("llama3", 1000, 0, 0, 1250)]
    shell = sqlite3.connect(path)  # no bot functions registered, as in the sqlite3 shell
    try:
        assert shell.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        triggers = [row[0] for row in shell.execute("SELECT sql FROM sqlite_master")]
        assert not [sql for sql in triggers if sql and "recall_" in sql]
        shell.execute("DELETE FROM messages WHERE id = 3")
        shell.commit()
    finally:
        shell.close()


@pytest.mark.parametrize("version", [0, 1], ids=["new file", "schema 1"])
async def test_two_processes_opening_a_database_at_once_migrate_it_once(
    tmp_path: Path, version: int
) -> None:
    """Replicas started together on one file: each store has its own connection, as each
    process would; the second must not run again a migration the first has made."""
    path = tmp_path / "bot.sqlite3"
    if version:
        old_database(path, version)
    first, second = await asyncio.gather(SqliteStore.open(str(path)), SqliteStore.open(str(path)))
    try:
        added = await first.add_message(
            conversation=GENERAL,
            role=Role.USER,
            author_id="cy",
            author_name="Cy",
            content="the locker code is 1111",
            tokens=5,
            message_id="p9",
            created_at=2.0,
        )
        found = await second.search_messages(
            conversation_key=GENERAL.key, terms=["locker"], before_id=100, limit=5
        )
        assert [m.id for m in found] == [added.id]
        assert await second.integrity_check() == "ok"
    finally:
        await first.close()
        await second.close()
    shell = sqlite3.connect(path)
    try:
        assert shell.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        shell.close()


def test_no_released_migration_was_edited() -> None:
    """Databases of earlier versions exist as those scripts made them: editing one would make
    this test (and every database built by the edited script) differ from them."""
    found = tuple(
        hashlib.sha256(script.encode()).hexdigest()[:12] for script in old_schemas.MIGRATIONS
    )
    assert found == old_schemas.RELEASED_SHA256
