"""``bot migrate-store``: a SQLite database the real store wrote, copied into PostgreSQL and
read back through the PostgreSQL store; interrupted and resumed; refused where it must be.

Every test here uses the PostgreSQL test server, so it is in the slow tier.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import asyncpg
import pytest
import yaml

from bot.cli import _parser
from bot.commands_cli.migrate import migrate_store
from bot.config import Config, parse_config
from bot.core.memory.terms import query_terms
from bot.core.models import Conversation, FactSource, Person, Role
from bot.core.ports.prompts import PromptRecord, RecallNote
from bot.core.ports.spend import ModelCall
from bot.core.ports.store import CalibrationSample, NewSummary, Store, UsageTotals
from bot.store.postgres.store import PostgresStore
from bot.store.sqlite.store import SqliteStore
from tests.conftest import config_dict
from tests.integration.test_store_spend import ledger
from tests.support.big_sqlite import fill
from tests.support.paths import ROOT

CHANNEL = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "1700000000.0001")
DISCORD = Conversation("discord", "G1", "D1")
ANA = Person("slack", "T1", "U1")
VECTOR = bytes(range(256)) * 6
SAMPLES = (
    CalibrationSample("llama3", 900, 100, 0, 1190),
    CalibrationSample("llama3", 400, 0, 0, 430),
)
CALLS = (
    ModelCall(1700000000.5, THREAD, "U1", "gpt-4o", "chat", 1200, 1024, 80, 0.1 + 0.2),
    ModelCall(1700086400.0, DISCORD, "U7", "llama3", "chat", 300, 0, 40, 0.0, estimated=True),
    ModelCall(1700086401.0, None, "", "text-embedding-3-small", "embedding", 50, 0, 0, 1e-06),
)

ROLLUPS = "SELECT * FROM spend_days ORDER BY kind, key, person, day, model"
ROLLUPS_IN_POSTGRES = (
    ROLLUPS.replace("key,", 'key COLLATE "C",')
    .replace("person,", 'person COLLATE "C",')
    .replace("model", 'model COLLATE "C"')
)
"""In code point order, as SQLite sorts them."""

PROMPT = PromptRecord(
    at=1700000001.0,
    conversation_key=THREAD.key,
    channel_key=THREAD.channel_key,
    question_id=4,
    question="when does the rota start? 访客",
    person="U2",
    model="gpt-4o",
    tokens=90,
    budget=4000,
    layers={"system": 30, "pins": 5, "profile": 0, "summary": 0, "recall": 20, "recent": 33},
    messages=({"role": "system", "content": "be brief"}, {"role": "user", "content": "[Ana] 访客"}),
    recall=(RecallNote(3, THREAD.key, "Ana", "the rota starts on friday", 1.0, "words: rota"),),
)


def config(path: Path) -> Config:
    return parse_config(config_dict("http://127.0.0.1:9/v1", path), {})


async def run(path: Path, *args: str) -> int:
    """The command, in this process, as ``bot migrate-store ARGS`` with ``path`` configured."""
    parsed = _parser().parse_args(["migrate-store", *args])
    return await migrate_store(parsed, config(path))


async def say(
    store: Store,
    conversation: Conversation,
    text: str,
    *,
    role: Role = Role.USER,
    message_id: str | None = None,
    reply_to: int | None = None,
    importance: int = 0,
) -> int:
    stored = await store.add_message(
        conversation=conversation,
        role=role,
        author_id="B1" if role is Role.ASSISTANT else "U1",
        author_name="Ana",
        content=text,
        tokens=len(text.split()),
        message_id=message_id,
        created_at=1.0,
        reply_to=reply_to,
        importance=importance,
    )
    return stored.id


SETTINGS = (  # scope, key, value, in the order they are changed
    (CHANNEL.key, "model", "gpt-4o"),
    (CHANNEL.key, "recall", "off"),
    (CHANNEL.key, "model", "llama3"),
    (CHANNEL.key, "recall", None),
    (THREAD.key, "model", "qwen"),
    (DISCORD.key, "memory_group", "ops"),
)


async def a_kept_database(path: Path) -> dict[str, int]:
    """What a bot leaves in SQLite: three conversations (one a thread), answers, pins, a
    summary, profile facts (one forgotten), usage, model calls (one for no conversation),
    calibration samples, vectors, settings and their changes, a logged prompt; a deleted
    message. Returns ids the tests look for."""
    store = await SqliteStore.open(str(path))
    try:
        ids = {"root": await say(store, CHANNEL, "Who owns the billing service?", message_id="1.1")}
        ids["answer"] = await say(
            store, CHANNEL, "Ana owns billing.", role=Role.ASSISTANT, reply_to=ids["root"]
        )
        ids["chinese"] = await say(store, CHANNEL, "访客WiFi密码是多少", message_id="1.2")
        ids["thread"] = await say(store, THREAD, "the rota starts on friday", message_id="2.1")
        ids["important"] = await say(
            store, DISCORD, "release freeze on Dec 15", message_id="9", importance=2
        )
        gone = await say(store, DISCORD, "a message deleted later", message_id="10")
        await store.delete_message(conversation_key=DISCORD.key, message_id="10")
        ids["gone"] = gone
        await store.mark_message(channel_key=CHANNEL.channel_key, message_id="1.2", delta=1)
        await store.add_pin(
            channel_key=CHANNEL.channel_key, text="Deploys on Tuesdays", tokens=3,
            author_id="U1", author_name="Ana",
        )  # fmt: skip
        await store.save_summary(
            summary=NewSummary(CHANNEL.key, "Facts:\n- FACT Ana owns billing", 7, ids["answer"],
                               2, ids["root"], ids["answer"], 1, False, "gpt-4o-mini"),
            generation=0, previous_id=None,
        )  # fmt: skip
        await store.add_profile_fact(
            person=ANA, text="owns billing", tokens=2, source=FactSource.USER
        )
        dropped = await store.add_profile_fact(
            person=ANA, text="likes tea", tokens=2, source=FactSource.SUMMARY
        )
        await store.remove_profile_facts(person=ANA, fact_id=dropped.id)
        for purpose, prompt, completion in (("chat", 120, 30), ("summary", 900, 80)):
            await store.record_usage(
                conversation_key=CHANNEL.key, model="gpt-4o-mini", purpose=purpose,
                prompt_tokens=prompt, completion_tokens=completion,
            )  # fmt: skip
        await store.add_calibration_sample(sample=SAMPLES[0], keep=64)
        await store.add_calibration_sample(sample=SAMPLES[1], keep=64)
        for key in ("root", "chinese", "thread"):
            content = {"root": "Who owns the billing service?", "chinese": "访客WiFi密码是多少",
                       "thread": "the rota starts on friday"}[key]  # fmt: skip
            assert await store.save_vector(
                message_id=ids[key], content=content, model="emb", vector=VECTOR
            )
        for call in CALLS:
            await store.record_call(call=call)
        await store.log_prompt(record=PROMPT, keep=5)
        await store.set_meta(key="token_encoding", value="o200k_base")
        assert await store.claim_request(request_id="req-1", keep_seconds=3600)
        for at, (scope, key, value) in enumerate(SETTINGS, 1):
            await store.change_setting(
                scope=scope, key=key, value=value, by_id="U1", by_name="Ana", at=float(at)
            )
    finally:
        await store.close()
    return ids


async def test_everything_is_read_back_through_the_postgresql_store(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.sqlite3"
    ids = await a_kept_database(path)
    before = await SqliteStore.open(str(path))
    assert await run(path, "--to", postgres_url) == 0
    out = capsys.readouterr()
    assert "messages" in out.out and "verified:" in out.err
    rows = {line.split()[0]: line.split()[1:] for line in out.out.splitlines()[1:]}
    assert (rows["settings"], rows["setting_changes"]) == (["3", "3"], ["6", "6"])
    assert rows["model_calls"] == ["3", "3"]
    assert rows["prompt_log"] == ["1", "1"]
    store = await PostgresStore.open(postgres_url)
    try:
        for conversation in (CHANNEL, THREAD, DISCORD):
            key = conversation.key
            assert await store.recent_messages(
                conversation_key=key, through_id=10**9, after_turn=0, limit=50
            ) == await before.recent_messages(
                conversation_key=key, through_id=10**9, after_turn=0, limit=50
            )
            assert await store.latest_summary(conversation_key=key) == await before.latest_summary(
                conversation_key=key
            )
            assert await store.usage(conversation_key=key) == await before.usage(
                conversation_key=key
            )
        recent = await store.recent_messages(
            conversation_key=CHANNEL.key, through_id=10**9, after_turn=0, limit=50
        )
        answer = next(m for m in recent if m.id == ids["answer"])
        assert answer.turn_id == ids["root"]  # the reply link kept
        assert next(m for m in recent if m.id == ids["chinese"]).important  # its 📌
        assert [p.text for p in await store.pins(channel_key=CHANNEL.channel_key)] == [
            "Deploys on Tuesdays"
        ]
        summary = await store.latest_summary(conversation_key=CHANNEL.key)
        assert summary is not None and summary.last_message_id == ids["answer"]
        assert [f.text for f in await store.profile_facts(person=ANA)] == ["owns billing"]
        assert await store.profile_forgot_at(person=ANA) == await before.profile_forgot_at(
            person=ANA
        )
        assert await store.usage(conversation_key=CHANNEL.key) == [
            UsageTotals("gpt-4o-mini", "chat", 1, 120, 30),
            UsageTotals("gpt-4o-mini", "summary", 1, 900, 80),
        ]
        assert await store.calibration_samples() == list(SAMPLES)
        for where in ({}, {"channel_key": THREAD.channel_key}, {"workspace": "discord:G1"}):
            assert await store.spend(since=None, until=None, **where) == await before.spend(
                since=None, until=None, **where
            )
        assert await store.spend_lines(since=None, until=None) == await before.spend_lines(
            since=None, until=None
        )
        assert [
            (s.model, s.cached_tokens, s.cost)
            for s in await store.spend(since=None, until=None, channel_key=THREAD.channel_key)
        ] == [("gpt-4o", 1024, 0.3)]  # fmt: skip (summed in picodollars: not 0.1 + 0.2)
        assert await store.vector(message_id=ids["thread"], model="emb") == VECTOR
        assert [i for i, _ in await store.vectors(
            conversation_key=CHANNEL.key, before_id=10**9, model="emb", limit=10
        )] == [ids["chinese"], ids["root"]]  # fmt: skip
        assert await store.get_meta(key="token_encoding") == "o200k_base"
        assert not await store.claim_request(request_id="req-1", keep_seconds=3600)
        scopes = [CHANNEL.key, THREAD.key, DISCORD.key]
        assert await store.settings_of(scopes=scopes) == {
            CHANNEL.key: {"model": "llama3"},
            THREAD.key: {"model": "qwen"},
            DISCORD.key: {"memory_group": "ops"},
        }
        for scope in scopes:
            assert await store.setting_changes(
                scope=scope, limit=10
            ) == await before.setting_changes(scope=scope, limit=10)
        assert await store.scopes_where(prefix="discord:", key="memory_group", value="ops") == [
            DISCORD.key
        ]
        for words, found in (("who owns billing", "root"), ("密码", "chinese")):
            terms = query_terms(words)
            hits = await store.search_messages(
                conversation_key=CHANNEL.key, terms=terms, before_id=10**9, limit=5
            )
            assert hits and hits[0].id == ids[found], words
            assert await store.term_counts(
                conversation_key=CHANNEL.key, terms=terms
            ) == await before.term_counts(conversation_key=CHANNEL.key, terms=terms)
        # New rows continue after the source's ids, the deleted message's too.
        assert await say(store, DISCORD, "a new message") > ids["gone"]
        pin = await store.add_pin(
            channel_key=DISCORD.channel_key, text="x", tokens=1, author_id="U", author_name="U"
        )
        assert pin.id == 2
        made = await store.change_setting(  # a new id, past the copied changes
            scope=CHANNEL.key, key="model", value="m", by_id="U1", by_name="Ana", at=9.0
        )
        assert (made.old, made.new) == ("llama3", "m")
        assert (await store.setting_changes(scope=CHANNEL.key, limit=1))[0] == made
        newer = CalibrationSample("llama3", 10, 0, 0, 11)
        await store.add_calibration_sample(sample=newer, keep=2)  # a new id, past the copied
        assert await store.calibration_samples() == [SAMPLES[1], newer]
        await store.record_call(call=CALLS[0])  # a new id, past the copied calls
        assert len(await store.spend_lines(since=None, until=None)) == len(CALLS)
        (thread,) = await store.spend(since=None, until=None, channel_key=THREAD.channel_key)
        assert thread.requests == 2
        copied = await before.logged_prompts(channel_key=CHANNEL.channel_key, limit=5)
        assert await store.logged_prompts(channel_key=CHANNEL.channel_key, limit=5) == copied
        await store.log_prompt(record=PROMPT, keep=5)  # a new id, past the copied prompt's
        assert [p.id > copied[0].id for p in await store.logged_prompts(
            channel_key=CHANNEL.channel_key, limit=5
        )] == [True, False]  # fmt: skip
    finally:
        await store.close()
        await before.close()


async def test_the_ledgers_daily_rollups_in_postgresql_are_sqlites(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """What budgets read (the rollups) is made in PostgreSQL from the calls copied, row for
    row as SQLite kept it, and a rerun leaves it so (not added twice)."""
    path = tmp_path / "bot.sqlite3"
    await a_kept_database(path)
    store = await SqliteStore.open(str(path))
    try:
        for call in ledger(seed=9, count=200):
            await store.record_call(call=call)
        kept = await store._rows(ROLLUPS)
    finally:
        await store.close()
    for _ in range(2):
        assert await run(path, "--to", postgres_url) == 0
        out = capsys.readouterr().out
        counts = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
        assert counts["spend_days"] == [str(len(kept))] * 2
        db = await asyncpg.connect(postgres_url)
        try:
            held = await db.fetch(ROLLUPS_IN_POSTGRES)
        finally:
            await db.close()
        assert [tuple(row) for row in held] == [tuple(row) for row in kept]


async def test_a_rerun_of_a_finished_migration_copies_nothing_and_says_so(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.sqlite3"
    await a_kept_database(path)
    assert await run(path, "--to", postgres_url) == 0
    first = capsys.readouterr()
    assert await run(path, "--to", postgres_url) == 0
    again = capsys.readouterr()
    assert "nothing to copy" in again.err and "already holds everything" in again.err
    assert again.out == first.out  # the same counts
    assert "copied" not in again.err


async def test_a_target_holding_other_data_is_refused_in_one_line(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.sqlite3"
    await a_kept_database(path)
    other = await PostgresStore.open(postgres_url)
    await say(other, CHANNEL, "written by a bot on PostgreSQL")
    await other.close()
    assert await run(path, "--to", postgres_url) == 1
    said = capsys.readouterr()
    refusal = [line for line in said.err.splitlines() if line.startswith("bot migrate-store:")]
    assert refusal == [
        f"bot migrate-store: {postgres_url} already holds conversations that are not in {path}"
        " (1 row there): migrate into an empty database"
    ]
    assert said.out == ""
    check = await PostgresStore.open(postgres_url)
    try:
        assert await check.count_messages(conversation_key=CHANNEL.key) == 1  # nothing added
    finally:
        await check.close()


async def test_an_unreachable_server_is_one_line_without_the_password_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.sqlite3"
    await a_kept_database(path)
    url = "postgresql://bot:hunter2-secret@127.0.0.1:9/bot"
    assert await run(path, "--to", url) == 2
    said = capsys.readouterr()
    assert "hunter2" not in said.err + said.out
    (line,) = said.err.splitlines()
    assert line.startswith(
        "bot migrate-store: cannot open database postgresql://bot:***@127.0.0.1:9/bot: "
    )


def count_rows(url: str, table: str) -> int:
    async def count() -> int:
        db = await asyncpg.connect(url)
        try:
            return int(await db.fetchval(f"SELECT COUNT(*) FROM {table}"))  # noqa: S608
        finally:
            await db.close()

    return asyncio.run(count())


def migrate_process(path: Path, url: str) -> subprocess.Popen[str]:
    """``bot migrate-store`` as a process, 100 rows a batch, a progress line for each."""
    settings = path.with_name("config.yaml")
    settings.write_text(yaml.safe_dump(config_dict("http://127.0.0.1:9/v1", path)))
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "migrate-store", "--config", str(settings), "--to", url,
         "--batch-size", "100"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "BOT_PROGRESS_SECONDS": "0"},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def copied(line: str) -> int:
    """The rows a progress line (``migrate-store: 1,200/13,000 rows ...``) counts, else 0."""
    if not line.startswith("migrate-store: "):
        return 0
    return int(line.split()[1].split("/")[0].replace(",", ""))


def stop_after(process: subprocess.Popen[str], rows: int, sig: int) -> str:
    """Signal ``process`` once its progress shows ``rows`` copied; all it said."""
    assert process.stderr is not None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if copied(line) >= rows:
            process.send_signal(sig)
            break
    _, rest = process.communicate(timeout=60)
    return "".join(seen) + rest


def test_an_interrupted_migration_goes_on_where_it_stopped(
    tmp_path: Path, postgres_url: str
) -> None:
    big = fill(tmp_path / "big.sqlite3", messages=6000, vector_every=7)
    killed = migrate_process(big.path, postgres_url)
    stop_after(killed, 1000, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    held = count_rows(postgres_url, "messages")
    assert 0 < held < big.messages
    stopped = migrate_process(big.path, postgres_url)
    said = stop_after(stopped, 1000, signal.SIGINT)
    assert stopped.returncode == 130, said
    assert "interrupted; what was copied is kept: run it again to go on" in said
    assert held < count_rows(postgres_url, "messages") < big.messages
    finished = migrate_process(big.path, postgres_url)
    out, err = finished.communicate(timeout=120)
    assert finished.returncode == 0, err
    assert "verified:" in err
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
    assert rows["messages"] == ["6,000", "6,000"]
    assert rows["message_vectors"] == [f"{big.vectors:,}"] * 2
    assert count_rows(postgres_url, "(SELECT DISTINCT id FROM messages) AS d") == big.messages
    assert terms_agree(big.path, postgres_url)


def terms_agree(path: Path, url: str) -> bool:
    """Each conversation's term counts in PostgreSQL equal what SQLite's index counts (once
    SQLite's own index has caught up): no batch was counted twice."""

    async def compare() -> bool:
        sqlite = await SqliteStore.open(str(path))  # indexes what the fast fill left out
        postgres = await PostgresStore.open(url)
        try:
            for key in ("slack:T1:C0", "slack:T1:C3:170002.0001"):
                terms = query_terms("billing rota 发布 数据库 note")
                mine = await postgres.term_counts(conversation_key=key, terms=terms)
                if mine != await sqlite.term_counts(conversation_key=key, terms=terms):
                    return False
                assert mine["billing"] > 0
        finally:
            await sqlite.close()
            await postgres.close()
        return True

    return asyncio.run(compare())


async def test_a_table_whose_counts_differ_fails_the_verification_naming_it(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bot.sqlite3"
    await a_kept_database(path)
    other = await PostgresStore.open(postgres_url)
    await other.set_meta(key="written_on_postgresql", value="yes")
    await other.close()
    assert await run(path, "--to", postgres_url) == 1
    said = capsys.readouterr()
    assert said.err.splitlines()[-1] == (
        "bot migrate-store: the counts differ: meta (1 in SQLite, 2 in PostgreSQL)"
    )
    assert ["meta", "1", "2", "differs"] in [line.split() for line in said.out.splitlines()]
