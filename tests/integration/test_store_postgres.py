"""What the PostgreSQL store adds to the contract: its schema and migrations, several
processes on one database, failures named without the password."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import asyncpg
import pytest

from bot.core.memory.terms import document_terms, query_terms
from bot.core.models import Conversation, Role
from bot.core.ports.settings import SettingChange
from bot.core.ports.spend import ModelCall
from bot.core.ports.store import CalibrationSample, Duplicate, NewSummary, StorageError
from bot.store.backup import BackupError
from bot.store.postgres.schema import MIGRATIONS, SCHEMA_VERSION, DatabaseError
from bot.store.postgres.store import PostgresStore
from tests.integration.test_store_migrations import PROMPT

GENERAL = Conversation("slack", "T1", "C1")


async def add(store: PostgresStore, text: str, message_id: str | None = None) -> int:
    stored = await store.add_message(
        conversation=GENERAL,
        role=Role.USER,
        author_id="U1",
        author_name="Ana",
        content=text,
        tokens=len(text.split()),
        message_id=message_id,
        created_at=1.0,
    )
    return stored.id


async def test_two_processes_opening_a_new_database_at_once_migrate_it_once(
    postgres_url: str,
) -> None:
    first, second = await asyncio.gather(
        PostgresStore.open(postgres_url), PostgresStore.open(postgres_url)
    )
    try:
        await add(first, "hello")
        assert await second.count_messages(conversation_key=GENERAL.key) == 1
        assert await second.integrity_check() == "ok"
    finally:
        await first.close()
        await second.close()
    db = await asyncpg.connect(postgres_url)
    try:
        assert await db.fetch("SELECT version FROM schema_version") == [(SCHEMA_VERSION,)]
    finally:
        await db.close()


async def test_a_database_from_a_newer_version_is_refused(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    await store.close()
    db = await asyncpg.connect(postgres_url)
    await db.execute("UPDATE schema_version SET version = $1", SCHEMA_VERSION + 1)
    await db.close()
    with pytest.raises(DatabaseError, match="newer version of the bot"):
        await PostgresStore.open(postgres_url)


async def test_a_database_that_cannot_be_opened_is_named_without_its_password(
    postgres_url: str,
) -> None:
    base, _, _ = postgres_url.rpartition("/")
    url = base.replace("postgres@", "postgres:s3cret-word@") + "/no_such_database"
    with pytest.raises(DatabaseError) as refused:
        await PostgresStore.open(url)
    assert "s3cret-word" not in str(refused.value)
    assert "postgres:***@" in str(refused.value)
    assert "no_such_database" in str(refused.value)


async def test_two_processes_storing_the_same_message_store_it_once(postgres_url: str) -> None:
    first, second = await PostgresStore.open(postgres_url), await PostgresStore.open(postgres_url)
    try:
        outcomes = await asyncio.gather(
            *(
                store_.add_message(
                    conversation=GENERAL,
                    role=Role.USER,
                    author_id="U1",
                    author_name="Ana",
                    content="once",
                    tokens=1,
                    message_id="m1",
                    created_at=1.0,
                )
                for store_ in (first, second, first, second)
            ),
            return_exceptions=True,
        )
        stored = [o for o in outcomes if not isinstance(o, BaseException)]
        duplicates = [o for o in outcomes if isinstance(o, Duplicate)]
        assert len(stored) == 1 and len(duplicates) == 3
        assert {d.existing.id for d in duplicates} == {stored[0].id}
        assert await first.count_messages(conversation_key=GENERAL.key) == 1
        assert await first.term_counts(conversation_key=GENERAL.key, terms=["once"]) == {"once": 1}
    finally:
        await first.close()
        await second.close()


def summary(text: str) -> NewSummary:
    return NewSummary(GENERAL.key, text, 1, 1, 1, 1, 1, 0, False, "m")


async def test_of_two_processes_summarising_at_once_one_summary_is_kept(postgres_url: str) -> None:
    first, second = await PostgresStore.open(postgres_url), await PostgresStore.open(postgres_url)
    try:
        await add(first, "hello")
        saved = await asyncio.gather(
            *(
                store_.save_summary(summary=summary(f"s{n}"), generation=0, previous_id=None)
                for n, store_ in enumerate((first, second, first, second))
            )
        )
        kept = [s for s in saved if s is not None]
        assert len(kept) == 1
        assert await second.latest_summary(conversation_key=GENERAL.key) == kept[0]
    finally:
        await first.close()
        await second.close()


async def test_messages_stored_with_the_index_off_are_found_once_it_is_on(
    postgres_url: str,
) -> None:
    store = await PostgresStore.open(postgres_url, index=False)
    await add(store, "the tangerine is ripe")
    await add(store, "我们明天去北京")
    await store.close()
    store = await PostgresStore.open(postgres_url)
    try:
        key = GENERAL.key
        assert await store.term_counts(conversation_key=key, terms=["tangerine"]) == {
            "tangerine": 1
        }
        for question in ("tangerine?", "北京怎么样"):
            found = await store.search_messages(
                conversation_key=key, terms=query_terms(question), before_id=10**9, limit=5
            )
            assert len(found) == 1, question
    finally:
        await store.close()


async def test_a_database_indexed_before_accents_were_folded_is_indexed_again_on_open(
    postgres_url: str,
) -> None:
    """Schema 1 kept a message's terms as written: ``zoë`` did not find ``Zoe``."""
    db = await asyncpg.connect(postgres_url)
    try:
        await db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        await db.execute("INSERT INTO schema_version (version) VALUES (1)")
        await db.execute(MIGRATIONS[0])
        await db.execute(
            "INSERT INTO conversations (key, channel_key, created_at) VALUES ($1, $2, 0)",
            GENERAL.key,
            GENERAL.channel_key,
        )
        for text in ("Zoe parks in bay 17", "Zoë joined the team"):
            terms = sorted(document_terms(text))
            await db.execute(
                "INSERT INTO messages (conversation, role, author_id, author_name, content,"
                " tokens, created_at, terms) VALUES ($1, 'user', 'U1', 'Ana', $2, 5, 0, $3)",
                GENERAL.key,
                text,
                terms,
            )
            await db.execute(
                "INSERT INTO search_terms (conversation, term, docs) SELECT $1, t, 1"
                " FROM unnest($2::text[]) AS t ON CONFLICT (conversation, term)"
                " DO UPDATE SET docs = search_terms.docs + 1",
                GENERAL.key,
                terms,
            )
    finally:
        await db.close()
    store = await PostgresStore.open(postgres_url)
    try:
        key = GENERAL.key
        found = await store.search_messages(
            conversation_key=key, terms=["zoë"], before_id=10**9, limit=5
        )
        counts = await store.term_counts(conversation_key=key, terms=["zoe", "zoë", "the"])
    finally:
        await store.close()
    assert sorted(m.content for m in found) == ["Zoe parks in bay 17", "Zoë joined the team"]
    assert counts == {"zoe": 1, "zoë": 1, "the": 1}  # counted once each, as written


async def test_a_calibration_ratio_of_schema_3_is_carried_over_as_a_sample(
    postgres_url: str,
) -> None:
    db = await asyncpg.connect(postgres_url)
    try:
        await db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        await db.execute("INSERT INTO schema_version (version) VALUES (3)")
        for script in MIGRATIONS[:3]:
            await db.execute(script)
        await db.execute("INSERT INTO calibration VALUES ('llama3', 1.25, 4, 1.0)")
    finally:
        await db.close()
    store = await PostgresStore.open(postgres_url)
    try:
        kept = await store.calibration_samples()
    finally:
        await store.close()
    assert kept == [CalibrationSample("llama3", 1000, 0, 0, 1250)]


async def test_a_refused_write_is_a_storage_error_numbered_by_spell(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    noticed: list[int] = []
    store.on_write_failure = lambda: noticed.append(1)
    admin = await asyncpg.connect(postgres_url)
    try:
        await admin.execute("ALTER TABLE pins ADD CONSTRAINT short CHECK (length(text) < 10)")
        pin = {"channel_key": "slack:T1:C1", "tokens": 1, "author_id": "U1", "author_name": "A"}
        with pytest.raises(StorageError) as first:
            await store.add_pin(text="far too long a pin", **pin)
        with pytest.raises(StorageError) as again:
            await store.add_pin(text="still far too long", **pin)
        assert first.value.incident == again.value.incident == 1
        assert "postgres" in first.value.path and len(noticed) == 2
        assert (await store.health_problem() or "").startswith("cannot write")
        await store.add_pin(text="short", **pin)
        assert await store.health_problem() is None
        with pytest.raises(StorageError) as later:
            await store.add_pin(text="too long once more", **pin)
        assert later.value.incident == 2
    finally:
        await admin.close()
        await store.close()


async def test_a_backup_points_to_pg_dump_and_the_pool_is_counted(
    postgres_url: str, tmp_path: Path
) -> None:
    store = await PostgresStore.open(postgres_url, pool_size=3)
    try:
        with pytest.raises(BackupError, match="pg_dump"):
            await store.backup(target=tmp_path / "copy")
        in_use, most = await store.connections()
        assert most == 3 and 0 <= in_use <= most
        assert await store.synchronous() == "full"
    finally:
        await store.close()


async def test_messages_stored_after_an_import_take_new_ids(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    try:
        records = [
            {"type": "conversation", "key": GENERAL.key, "channel_key": GENERAL.channel_key,
             "generation": 0, "created_at": 1.0},
            {"type": "message", "id": 40, "conversation": GENERAL.key, "reply_to": None,
             "role": "user", "author_id": "U1", "author_name": "Ana", "content": "imported",
             "tokens": 1, "platform_message_id": "m40", "created_at": 1.0},
        ]  # fmt: skip
        await store.import_records(records=records)
        assert await add(store, "after") > 40
        found = await store.search_messages(
            conversation_key=GENERAL.key, terms=["imported"], before_id=10**9, limit=5
        )
        assert [m.id for m in found] == [40]
    finally:
        await store.close()


async def test_an_answer_in_one_process_wakes_the_one_waiting_on_it_at_once(
    postgres_url: str,
) -> None:
    waiting, answering = (
        await PostgresStore.open(postgres_url),
        await PostgresStore.open(postgres_url),
    )
    try:
        where = Conversation("slack", "T1", "C1")
        stored = await answering.add_message(
            conversation=where,
            role=Role.USER,
            author_id="U1",
            author_name="Ana",
            content="first",
            tokens=1,
            message_id="1.0",
            created_at=1.0,
            awaited_by="answering",
        )
        await waiting.wait_answered(conversation_key=where.key, within=0.05)  # now listening
        loop = asyncio.get_running_loop()
        began = loop.time()
        wait = asyncio.create_task(waiting.wait_answered(conversation_key=where.key, within=30))
        await asyncio.sleep(0.1)
        await answering.answered(stored_id=stored.id)
        await asyncio.wait_for(wait, 10)
        assert loop.time() - began < 5  # woken, not timed out
        assert await waiting.first_awaiting(conversation_key=where.key) is None
    finally:
        await waiting.close()
        await answering.close()


def one_after_another(changes: list[SettingChange]) -> bool:
    """Whether each change (oldest first) starts from what the one before it set."""
    return all(later.old == earlier.new for earlier, later in itertools.pairwise(changes))


async def test_processes_changing_one_setting_at_once_each_start_from_the_last(
    postgres_url: str,
) -> None:
    first, second = await PostgresStore.open(postgres_url), await PostgresStore.open(postgres_url)
    try:
        await asyncio.gather(
            *(
                store_.change_setting(
                    scope=GENERAL.key, key="model", value=f"m{n}", by_id="U1", by_name="A", at=n
                )
                for n, store_ in enumerate([first, second] * 10)
            )
        )
        changes = list(reversed(await first.setting_changes(scope=GENERAL.key, limit=50)))
        assert len(changes) == 20 and changes[0].old is None
        assert one_after_another(changes)
        assert await second.settings_of(scopes=[GENERAL.key]) == {
            GENERAL.key: {"model": changes[-1].new}
        }
    finally:
        await first.close()
        await second.close()


async def test_a_setting_whose_change_cannot_be_logged_is_not_changed(postgres_url: str) -> None:
    store = await PostgresStore.open(postgres_url)
    admin = await asyncpg.connect(postgres_url)
    try:
        await store.change_setting(
            scope=GENERAL.key, key="model", value="short", by_id="U1", by_name="A", at=1.0
        )
        await admin.execute(
            "ALTER TABLE setting_changes ADD CONSTRAINT short CHECK (length(new) < 10)"
        )
        with pytest.raises(StorageError):
            await store.change_setting(
                scope=GENERAL.key, key="model", value="far too long", by_id="U1", by_name="A", at=2
            )
        assert await store.settings_of(scopes=[GENERAL.key]) == {GENERAL.key: {"model": "short"}}
        assert len(await store.setting_changes(scope=GENERAL.key, limit=10)) == 1
        assert (await store.health_problem() or "").startswith("cannot write")
    finally:
        await admin.close()
        await store.close()


async def test_a_database_of_schema_5_keeps_its_messages_and_takes_settings_and_prompts(
    postgres_url: str,
) -> None:
    db = await asyncpg.connect(postgres_url)
    try:
        await db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        await db.execute("INSERT INTO schema_version (version) VALUES (5)")
        for script in MIGRATIONS[:5]:
            await db.execute(script)
    finally:
        await db.close()
    store = await PostgresStore.open(postgres_url)
    try:
        await add(store, "kept")
        await store.change_setting(
            scope=GENERAL.key, key="model", value="m", by_id="U1", by_name="A", at=1.0
        )
        assert await store.settings_of(scopes=[GENERAL.key]) == {GENERAL.key: {"model": "m"}}
        await store.log_prompt(record=PROMPT, keep=3)
        (logged,) = await store.logged_prompts(channel_key=PROMPT.channel_key, limit=3)
        assert logged.messages == PROMPT.messages
        assert await store.integrity_check() == "ok"
    finally:
        await store.close()


async def test_a_call_whose_totals_cannot_be_added_is_not_kept_either(postgres_url: str) -> None:
    """The ledger and the conversation's lifetime totals move together, or neither does."""
    store = await PostgresStore.open(postgres_url)
    admin = await asyncpg.connect(postgres_url)
    try:
        await admin.execute("ALTER TABLE usage ADD CONSTRAINT refused CHECK (model <> 'refused')")
        call = ModelCall(1.0, GENERAL, "U1", "refused", "chat", 10, 0, 2, 0.5)
        with pytest.raises(StorageError):
            await store.record_call(call=call)
        assert await store.spend(since=None, until=None) == []
        assert await store.usage(conversation_key=GENERAL.key) == []
        assert (await store.health_problem() or "").startswith("cannot write")
        await store.record_call(call=ModelCall(2.0, GENERAL, "U1", "m", "chat", 10, 0, 2, 0.5))
        assert [s.model for s in await store.spend(since=None, until=None)] == ["m"]
    finally:
        await admin.close()
        await store.close()
