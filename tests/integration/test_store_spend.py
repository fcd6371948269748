"""What budgets sum before every answer: a channel's, a workspace's or a person's calls over
whole UTC days, read from the daily rollups the store keeps with each call, equal the calls'
own sums, on every store, for any bounds; a database of the schema before the rollups answers
the same once migrated; and the sums read the rollups by their key, not the calls."""

from __future__ import annotations

import dataclasses
import math
import random
import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from bot.core.models import Conversation
from bot.core.ports.spend import ModelCall, Spend
from bot.core.ports.store import Store
from bot.store.postgres.schema import MIGRATIONS as POSTGRES_MIGRATIONS
from bot.store.postgres.store import PostgresStore
from bot.store.spend_sql import CALL_COLUMNS, call_row
from bot.store.sqlite import schema
from bot.store.sqlite.store import SqliteStore
from tests.support import old_schemas
from tests.support.stores import KIND_PARAMS, opened_store

NOVEMBER = datetime(2026, 11, 1, tzinfo=UTC).timestamp()
DECEMBER = datetime(2026, 12, 1, tzinfo=UTC).timestamp()
JANUARY = datetime(2027, 1, 1, tzinfo=UTC).timestamp()
DAY = 86400.0
WORKSPACES = (("slack", "T1"), ("slack", "T10"), ("discord", "G1"))
MODELS = ("gpt-4o", "gpt-4o-mini", "Qwen", "text-embedding-3-small")


def conversations() -> list[Conversation]:
    found = []
    for platform, workspace in WORKSPACES:
        for channel in ("C1", "C10", "C2"):
            found.append(Conversation(platform, workspace, channel))
        found.append(Conversation(platform, workspace, "C1", "5.0"))  # a thread of C1
    return found


def ledger(seed: int, count: int = 400) -> list[ModelCall]:
    """Calls across November and December 2026: at random times, at midnights and month
    starts, just before them (less than a millisecond), and some for no conversation or no one."""
    rng = random.Random(seed)
    edges = [NOVEMBER + DAY * n for n in range(0, 62, 3)] + [DECEMBER, JANUARY - DAY]
    times = [rng.uniform(NOVEMBER, JANUARY) for _ in range(count)]
    times += edges + [math.nextafter(edge, 0) for edge in edges] + [e - 0.0004 for e in edges]
    calls = []
    for at in times:
        conversation = rng.choice([*conversations(), None])
        calls.append(
            ModelCall(
                at=at,
                conversation=conversation,
                person="" if conversation is None else rng.choice(("U1", "U2", "U10", "")),
                model=rng.choice(MODELS),
                purpose=rng.choice(("chat", "summary", "embedding")),
                prompt_tokens=rng.randrange(0, 9000),
                cached_tokens=rng.randrange(0, 100),
                completion_tokens=rng.randrange(0, 600),
                cost=rng.choice((0.0, 0.1, 0.2, 1e-7 * rng.randrange(1, 90000), rng.random())),
            )
        )
    return calls


def expected(
    calls: Sequence[ModelCall],
    since: float | None,
    until: float | None,
    scope: dict[str, str],
) -> list[tuple[Any, ...]]:
    """The sums ``spend`` should give, from the calls themselves."""
    by_model: dict[str, list[ModelCall]] = {}
    for call in calls:
        held = call.conversation
        found = {
            "channel_key": held.channel_key if held else "",
            "workspace": f"{held.platform}:{held.workspace}" if held else "",
            "person": call.person,
        }
        if any(found[name] != value for name, value in scope.items()):
            continue
        if (since is None or call.at >= since) and (until is None or call.at < until):
            by_model.setdefault(call.model, []).append(call)
    sums = []
    for model in sorted(by_model):
        group = by_model[model]
        cost = math.fsum(call.cost for call in group)
        sums.append(
            (
                model,
                len(group),
                sum(call.prompt_tokens for call in group),
                sum(call.cached_tokens for call in group),
                sum(call.completion_tokens for call in group),
                pytest.approx(cost, rel=1e-12, abs=1e-9),
            )
        )
    return sums


def scopes() -> list[dict[str, str]]:
    found: list[dict[str, str]] = []
    for conversation in conversations():
        if conversation.thread is None:
            found.append({"channel_key": conversation.channel_key})
    for platform, workspace in WORKSPACES:
        key = f"{platform}:{workspace}"
        found.append({"workspace": key})
        found += [{"workspace": key, "person": p} for p in ("U1", "U2", "U10", "", "U3")]
    return [*found, {"channel_key": ""}, {}]


BOUNDS = [
    (None, None),
    (DECEMBER, None),
    (NOVEMBER, DECEMBER),
    (DECEMBER - 3 * DAY, DECEMBER + 2 * DAY),
    (DECEMBER + 5 * DAY, DECEMBER + 6 * DAY),
    (None, DECEMBER),
    (DECEMBER + 0.5, None),
    (NOVEMBER + 3 * DAY - 0.5, DECEMBER + 3 * DAY + 0.5),
    (math.nextafter(DECEMBER, 0), None),
]
"""Whole UTC days (read from the rollups where a scope allows) and not (read from the calls)."""


def shown(found: Sequence[Spend]) -> list[tuple[Any, ...]]:
    return [dataclasses.astuple(s) for s in found]


@pytest.fixture(params=KIND_PARAMS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path, request) as opened:
        yield opened


async def test_sums_over_whole_days_equal_the_calls_own_for_every_scope_and_bound(
    store: Store,
) -> None:
    calls = ledger(seed=25)
    for call in calls:
        await store.record_call(call=call)
    for scope in scopes():
        for since, until in BOUNDS:
            found = await store.spend(since=since, until=until, **scope)
            assert shown(found) == expected(calls, since, until, scope), (scope, since, until)


async def test_a_day_is_summed_alike_from_its_rollups_and_from_its_calls(store: Store) -> None:
    """The same calls summed over a whole day (the rollups) and over the same day less a
    millisecond before its first call (the calls) give the very same numbers, cost too."""
    channel = Conversation("slack", "T1", "C1")
    rng = random.Random(7)
    for n in range(200):
        cost = rng.random() / 100
        call = ModelCall(DECEMBER + 60 + n, channel, "U1", "m", "chat", 10, 1, 2, cost)
        await store.record_call(call=call)
    for scope in ({"channel_key": channel.channel_key}, {"workspace": "slack:T1"}):
        whole = await store.spend(since=DECEMBER, until=DECEMBER + DAY, **scope)
        scanned = await store.spend(since=DECEMBER + 0.001, until=DECEMBER + DAY - 1, **scope)
        assert whole == scanned and whole[0].requests == 200


async def schema_16_database(path: Path, calls: Sequence[ModelCall]) -> None:
    """A SQLite file of schema 16 (before the rollups) holding ``calls``."""
    db = old_schemas.connect(path)  # the functions early versions' triggers call
    for script in schema.MIGRATIONS[:16]:
        for statement in schema.statements(script):
            db.execute(statement)
    db.execute("PRAGMA user_version = 16")
    marks = ", ".join("?" for _ in CALL_COLUMNS.split(","))
    db.executemany(
        f"INSERT INTO model_calls ({CALL_COLUMNS}) VALUES ({marks})",  # noqa: S608
        [call_row(call) for call in calls],
    )
    db.close()


def rollups(path: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT * FROM spend_days ORDER BY kind, key, person, day, model"
        ).fetchall()
    finally:
        db.close()


async def test_a_sqlite_database_of_schema_16_answers_the_same_once_migrated(
    tmp_path: Path,
) -> None:
    """Its calls are rolled up by the migration into the rows the calls recorded one by one
    make; the sums read from them equal the calls'; and calls recorded later add to them."""
    calls = ledger(seed=16)
    old, new = tmp_path / "old.sqlite3", tmp_path / "new.sqlite3"
    await schema_16_database(old, calls[:-20])
    migrated = await SqliteStore.open(str(old))
    recorded = await SqliteStore.open(str(new))
    try:
        for call in calls[-20:]:
            await migrated.record_call(call=call)
        for call in calls:
            await recorded.record_call(call=call)
        for scope in scopes():
            for since, until in BOUNDS:
                found = await migrated.spend(since=since, until=until, **scope)
                assert shown(found) == expected(calls, since, until, scope), (scope, since)
    finally:
        await migrated.close()
        await recorded.close()
    assert rollups(old) == rollups(new) != []


async def test_a_postgresql_database_of_schema_8_answers_the_same_once_migrated(
    postgres_url: str, tmp_path: Path
) -> None:
    calls = ledger(seed=8)
    db = await asyncpg.connect(postgres_url)
    try:
        await db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        await db.execute("INSERT INTO schema_version (version) VALUES (8)")
        for script in POSTGRES_MIGRATIONS[:8]:
            await db.execute(script)
        await db.copy_records_to_table(
            "model_calls",
            records=[call_row(call) for call in calls],
            columns=[c.strip() for c in CALL_COLUMNS.split(",")],
        )
    finally:
        await db.close()
    store = await PostgresStore.open(postgres_url)
    recorded = await SqliteStore.open(str(tmp_path / "recorded.sqlite3"))
    try:
        for call in calls:
            await recorded.record_call(call=call)
        for scope in scopes():
            for since, until in BOUNDS:
                found = await store.spend(since=since, until=until, **scope)
                assert shown(found) == expected(calls, since, until, scope), (scope, since)
        held = await store._pool.fetch(
            'SELECT * FROM spend_days ORDER BY kind, key COLLATE "C", person COLLATE "C",'
            ' day, model COLLATE "C"'
        )
    finally:
        await store.close()
        await recorded.close()
    assert [tuple(row) for row in held] == rollups(tmp_path / "recorded.sqlite3")


async def test_the_sums_budgets_make_read_the_rollups_by_their_key(tmp_path: Path) -> None:
    """A channel's, a workspace's and a person's spend since a UTC midnight (what each cap
    sums before and after every answer) searches the rollups by their primary key: a day's
    rows, not its calls."""
    path = tmp_path / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    statements: list[str] = []
    try:
        for call in ledger(seed=3, count=100):
            await store.record_call(call=call)
        await store._db.set_trace_callback(statements.append)
        await store.spend(since=DECEMBER, until=None, channel_key="slack:T1:C1")
        await store.spend(since=DECEMBER, until=JANUARY, workspace="slack:T1")
        await store.spend(since=DECEMBER, until=None, workspace="slack:T1", person="U1")
        await store._db.set_trace_callback(None)
    finally:
        await store.close()
    db = sqlite3.connect(path)
    plans = [[row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {s}")] for s in statements]
    db.close()
    assert [plan[0] for plan in plans] == [
        "SEARCH spend_days USING PRIMARY KEY (kind=? AND key=? AND person=? AND day>?)",
        "SEARCH spend_days USING PRIMARY KEY (kind=? AND key=? AND person=? AND day>? AND day<?)",
        "SEARCH spend_days USING PRIMARY KEY (kind=? AND key=? AND person=? AND day>?)",
    ]
