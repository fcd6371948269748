"""The SQLite store: schema, durability settings, reads that don't grow with history, and
prompts that show what the database holds, whoever changed it."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, Role
from bot.core.ports.spend import ModelCall
from bot.core.ports.store import NewSummary, StorageError
from bot.core.prompt.assembler import Prompt
from bot.store.sqlite.store import SCHEMA_VERSION, DatabaseError, SqliteStore
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, is_summary_request
from tests.integration.test_store_postgres import one_after_another
from tests.support.fake_llm import FakeLLM

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


def said(text: str, message_id: str | None = None, addressed: bool = True) -> IncomingMessage:
    return IncomingMessage(GENERAL, "ana", "Ana", text, addressed=addressed, message_id=message_id)


def plan_problems(db: sqlite3.Connection, statement: str) -> list[str]:
    """What in the plan of ``statement`` reads more than the rows it wants: a table scanned
    (not searched through an index) or rows sorted apart from their index (but a search's
    matches, which are ranked)."""
    plan = [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {statement}")]
    scans = [
        step
        for step in plan
        if step.startswith("SCAN ")
        and not any(ok in step for ok in (" INDEX ", "VIRTUAL TABLE", "CONSTANT ROW"))
    ]
    ranked = "MATCH" in statement and "ORDER BY bm25" in statement
    sorts = [step for step in plan if "TEMP B-TREE" in step and not ranked]
    return scans + sorts


async def test_the_reads_a_prompt_makes_go_through_indexes(
    make_config: ConfigFactory, tmp_path: Path
) -> None:
    """Every statement the store runs while a message is recorded and its prompt built (with
    pins, a profile, a summary, recall and important turns in play) is planned by index: none
    scans a table or sorts the history."""
    config = make_config(
        memory={
            "strategy": "hybrid",
            "max_context_tokens": 800,
            "recall_tokens": 200,
            "summary_threshold": 1.0,
        }
    )
    async with open_app(config) as app:
        await run_command(app.engine, CommandCall(GENERAL, "pin", "deploys on Fridays", "a", "A"))
        await run_command(app.engine, CommandCall(GENERAL, "remember", "likes tea", "ana", "Ana"))
        await app.engine.handle_message(said("the vault code is 4242", "fact"))
        for number in range(60):
            await app.engine.handle_message(said(f"note {number}", f"m{number}"))
        await app.engine.mark_important(GENERAL, "m3", True)
        await app.store.save_summary(summary("Ana owns billing."), generation=0, previous_id=None)
        statements: list[str] = []
        await app.store._db.set_trace_callback(statements.append)
        last = await app.engine.record(said("what about the vault?"))
        await build_through(app, last.id)
        # Sought when turns are left out and none recalled is newer (the assembler decides).
        await app.store.important_turns(
            conversation_key=GENERAL.key,
            through_id=last.id,
            after_turn=0,
            through_turn=last.id,
            turns=8,
        )
        await app.store._db.set_trace_callback(None)
    reads = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]
    assert any("message_index MATCH" in s for s in reads), "recall searched"
    assert any("messages_important_by_turn" in s for s in reads)
    assert any("FROM summaries" in s for s in reads) and any("FROM pins" in s for s in reads)
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    problems = {s: found for s in reads if (found := plan_problems(db, s))}
    db.close()
    assert problems == {}


async def test_the_plan_check_sees_a_missing_index(tmp_path: Path) -> None:
    store = await SqliteStore.open(str(tmp_path / "bot.sqlite3"))
    await store.close()
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    read = "SELECT id FROM messages WHERE conversation = 'k' ORDER BY id DESC LIMIT 5"
    assert plan_problems(db, read) == []
    for index in ("messages_by_conversation", "messages_by_turn", "messages_by_platform_id"):
        db.execute(f"DROP INDEX {index}")
    db.close()
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    assert plan_problems(db, read) == ["SCAN messages"]
    db.close()


async def test_the_database_is_read_and_written_by_a_plain_sqlite3_connection(
    tmp_path: Path,
) -> None:
    """No function of the bot's runs inside the database: the ``sqlite3`` shell (a
    connection without them) stores, edits and deletes messages, and the bot sees it."""
    path = tmp_path / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    try:
        first = await add(store, "the vault code is 4242")
        shell = sqlite3.connect(path, isolation_level=None)
        shell.execute(
            "INSERT INTO messages (conversation, role, author_id, author_name, content, tokens,"
            " created_at) VALUES (?, 'user', 'b', 'Bo', 'from the shell', 3, 0)",
            (GENERAL.key,),
        )
        shell.execute("UPDATE messages SET content = 'edited' WHERE id = ?", (first,))
        shell.execute("DELETE FROM messages WHERE content = 'from the shell'")
        shell.close()
        rows = await store.recent_messages(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=10
        )
        assert [row.content for row in rows] == ["edited"]
        assert await store.count_messages(conversation_key=GENERAL.key) == 1
    finally:
        await store.close()


async def test_settings_survive_a_reopen_with_their_changes(tmp_path: Path) -> None:
    path = str(tmp_path / "bot.sqlite3")
    store = await SqliteStore.open(path)
    for value, at in (("gpt-4o", 1.0), ("llama3", 2.0)):
        await store.change_setting(
            scope=GENERAL.key, key="model", value=value, by_id="a", by_name="Ana", at=at
        )
    await store.close()
    store = await SqliteStore.open(path)
    try:
        assert await store.settings_of(scopes=[GENERAL.key]) == {GENERAL.key: {"model": "llama3"}}
        changes = await store.setting_changes(scope=GENERAL.key, limit=5)
        assert [(c.old, c.new, c.by_name, c.at) for c in changes] == [
            ("gpt-4o", "llama3", "Ana", 2.0),
            (None, "gpt-4o", "Ana", 1.0),
        ]
    finally:
        await store.close()


async def test_processes_changing_one_setting_at_once_each_start_from_the_last(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "bot.sqlite3")
    first, second = await SqliteStore.open(path), await SqliteStore.open(path)
    try:
        await asyncio.gather(
            *(
                store.change_setting(
                    scope=GENERAL.key, key="model", value=f"m{n}", by_id="a", by_name="A", at=n
                )
                for n, store in enumerate([first, second] * 10)
            )
        )
        changes = list(reversed(await second.setting_changes(scope=GENERAL.key, limit=50)))
        assert len(changes) == 20 and changes[0].old is None
        assert one_after_another(changes)
        assert await first.settings_of(scopes=[GENERAL.key]) == {
            GENERAL.key: {"model": changes[-1].new}
        }
    finally:
        await first.close()
        await second.close()


async def test_a_setting_whose_change_cannot_be_logged_is_not_changed(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    try:
        await store.change_setting(
            scope=GENERAL.key, key="model", value="short", by_id="a", by_name="A", at=1.0
        )
        shell = sqlite3.connect(path)
        shell.execute(
            "CREATE TRIGGER short BEFORE INSERT ON setting_changes WHEN length(new.new) >= 10"
            " BEGIN SELECT RAISE(ABORT, 'too long'); END"
        )
        shell.commit()
        shell.close()
        with pytest.raises(StorageError, match="too long"):
            await store.change_setting(
                scope=GENERAL.key, key="model", value="far too long", by_id="a", by_name="A", at=2
            )
        assert await store.settings_of(scopes=[GENERAL.key]) == {GENERAL.key: {"model": "short"}}
        assert len(await store.setting_changes(scope=GENERAL.key, limit=10)) == 1
        assert (await store.health_problem() or "").startswith("cannot write")
    finally:
        await store.close()


def summary(text: str) -> NewSummary:
    return NewSummary(GENERAL.key, text, 3, 1, 1, 1, 1, 1, False, "m")


async def test_the_latest_summary_is_the_one_stored_whoever_stored_it(tmp_path: Path) -> None:
    """The latest summary is the newest one stored: by the bot itself or by another process
    (``bot reset`` and a second bot on the same file), even one that took an earlier one's id
    after a reset."""
    path = str(tmp_path / "bot.sqlite3")
    bot, other = await SqliteStore.open(path), await SqliteStore.open(path)
    try:
        await add(bot, "question")
        first = await bot.save_summary(summary("Ana owns billing."), generation=0, previous_id=None)
        assert first is not None
        assert await bot.latest_summary(conversation_key=GENERAL.key) == first
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


def last_prompt(llm: FakeLLM) -> list[str]:
    bodies = [body for body in llm.chat_requests if not is_summary_request(body)]
    return [message["content"] for message in bodies[-1]["messages"][1:]]


async def build_through(app: App, through_id: int) -> Prompt:
    """The prompt that answering message ``through_id`` builds."""
    settings = await app.engine.settings_for(GENERAL)
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
    assert "[Ana] the meeting is at 3" in last_prompt(llm)
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


async def test_a_prompt_is_the_same_before_and_after_a_restart_after_edits_and_deletes(
    app: App, llm: FakeLLM
) -> None:
    for number in range(12):
        await app.engine.handle_message(said(f"note {number}", message_id=f"n{number}"))
    await app.engine.edit_message(GENERAL, "n3", "note three, edited")
    await app.engine.delete_message(GENERAL, "n5")
    last = await app.engine.record(said("and now?"))
    running = await prompt_through(app, last.id)
    async with open_app(app.config) as restarted:
        fresh = await prompt_through(restarted, last.id)
    assert running == fresh
    assert "[Ana] note three, edited" in running
    assert "[Ana] note 5" not in running
    assert running[-1] == "[Ana] and now?"


async def test_a_read_under_way_during_an_edit_does_not_bring_the_old_text_back(
    tmp_path: Path,
) -> None:
    store = await SqliteStore.open(str(tmp_path / "bot.sqlite3"))
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


async def test_a_call_whose_totals_cannot_be_added_is_not_kept_either(tmp_path: Path) -> None:
    """The ledger and the conversation's lifetime totals move together, or neither does."""
    path = tmp_path / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    try:
        shell = sqlite3.connect(path)
        shell.execute(
            "CREATE TRIGGER refused BEFORE INSERT ON usage WHEN new.model = 'refused'"
            " BEGIN SELECT RAISE(ABORT, 'disk full'); END"
        )
        shell.commit()
        shell.close()
        call = ModelCall(1.0, GENERAL, "a", "refused", "chat", 10, 0, 2, 0.5)
        with pytest.raises(StorageError, match="disk full"):
            await store.record_call(call=call)
        assert await store.spend(since=None, until=None) == []
        assert await store.usage(conversation_key=GENERAL.key) == []
        assert (await store.health_problem() or "").startswith("cannot write")
        await store.record_call(call=ModelCall(2.0, GENERAL, "a", "m", "chat", 10, 0, 2, 0.5))
        assert [s.model for s in await store.spend(since=None, until=None)] == ["m"]
        assert await store.health_problem() is None
    finally:
        await store.close()


async def test_the_sums_of_spend_search_their_calls_by_index(tmp_path: Path) -> None:
    """A channel's, a workspace's, a person's and everyone's calls over a time range (what
    budgets will sum on every answer) are found through an index, not by reading them all."""
    path = tmp_path / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    statements: list[str] = []
    try:
        for at in range(50):
            await store.record_call(call=ModelCall(at, GENERAL, "a", "m", "chat", 10, 0, 2, 0.1))
        await store._db.set_trace_callback(statements.append)
        await store.spend(since=10, until=20, channel_key=GENERAL.channel_key)
        await store.spend(since=10, until=20, workspace="console:local")
        await store.spend(since=10, until=20, workspace="console:local", person="a")
        await store.spend(since=10, until=None)
        await store.spend_lines(since=10, until=20, channel_key=GENERAL.channel_key)
        await store._db.set_trace_callback(None)
    finally:
        await store.close()
    db = sqlite3.connect(path)
    plans = [[row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {s}")] for s in statements]
    db.close()
    found = [plan[0].split(" (")[0] for plan in plans]
    assert found == [
        f"SEARCH model_calls USING INDEX model_calls_by_{index}"
        for index in ("channel", "workspace", "person", "time", "channel")
    ]
