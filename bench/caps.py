"""What checking the budgets costs an answer, as the month's ledger grows.

Before each answer the bot sums the ledger for every cap in force (channel, person and
workspace, per day and per month: six sums) and, after it, again for the 80 % notice. This
fills a real SQLite file (and, with ``--postgres``, a throwaway PostgreSQL server) with
``--calls`` model calls spread over the current month in one workspace (50 channels, 200
people), with the daily rollups those calls make (filled by the statements the migration that
made them runs), then times ``Caps.check`` and the notice (``Check.noted``) with all six caps
set.

    .venv/bin/python bench/caps.py --calls 10000 100000 --postgres
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.caps import Caps, period_bounds
from bot.core.cost import Meter
from bot.core.models import Conversation
from bot.core.ports.spend import ModelCall
from bot.core.ports.store import Store
from bot.core.settings import SettingsSource
from bot.store.postgres.store import PostgresStore
from bot.store.spend_sql import (
    CALL_COLUMNS,
    POSTGRES_DAY,
    POSTGRES_PICOS,
    SQLITE_DAY,
    SQLITE_PICOS,
    backfill,
    call_row,
)
from bot.store.sqlite.store import SqliteStore
from tests.support.core import unit_config
from tests.support.postgres import PostgresServer

CHANNELS = 50
PEOPLE = 200
CAP = {"day": "$1000", "month": "$100000 or 900M tokens"}


def calls(count: int, now: float, seed: int) -> list[tuple[object, ...]]:
    """``count`` calls between the month's start and ``now``, as ledger rows."""
    rng = random.Random(seed)
    start, _ = period_bounds(now, "month")
    rows = []
    for _ in range(count):
        channel = Conversation("slack", "T1", f"C{rng.randrange(CHANNELS)}")
        call = ModelCall(
            at=rng.uniform(start, now),
            conversation=channel,
            person=f"U{rng.randrange(PEOPLE)}",
            model=rng.choice(("gpt-4o-mini", "text-embedding-3-small")),
            purpose=rng.choice(("chat", "summary", "embedding")),
            prompt_tokens=rng.randrange(100, 8000),
            cached_tokens=0,
            completion_tokens=rng.randrange(0, 500),
            cost=rng.uniform(0, 0.01),
        )
        rows.append(call_row(call))
    return rows


async def fill_sqlite(path: Path, rows: list[tuple[object, ...]]) -> SqliteStore:
    store = await SqliteStore.open(str(path))
    marks = ", ".join("?" * len(rows[0]))
    db = store._db  # the bench fills the table in one transaction, not 100,000
    insert = f"INSERT INTO model_calls ({CALL_COLUMNS}) VALUES ({marks})"  # noqa: S608
    await db.executemany(insert, rows)
    await db.executescript(backfill(SQLITE_DAY, SQLITE_PICOS))  # the rollups, as migrated
    await db.commit()
    await db.execute("ANALYZE")
    return store


async def fill_postgres(url: str, rows: list[tuple[object, ...]]) -> PostgresStore:
    store = await PostgresStore.open(url)
    columns = [c.strip() for c in CALL_COLUMNS.split(",")]
    async with store._pool.acquire() as db:  # COPY, as for the SQLite file above
        await db.copy_records_to_table("model_calls", records=rows, columns=columns)
        await db.execute(backfill(POSTGRES_DAY, POSTGRES_PICOS))  # the rollups, as migrated
        await db.execute("ANALYZE model_calls, spend_days")
    return store


async def measure(store: Store, now: float, checks: int) -> tuple[float, float, float]:
    """Median and p99 ms of a check before an answer, and median ms of the notice after."""
    config = unit_config(budgets={"channel": CAP, "person": CAP, "workspace": CAP})
    caps = Caps(meter=Meter(ledger=store, clock=lambda: now), config=config.budgets)
    source = SettingsSource(config, store)
    before, after = [], []
    rng = random.Random(1)
    for _ in range(checks):
        channel = Conversation("slack", "T1", f"C{rng.randrange(CHANNELS)}")
        person = f"U{rng.randrange(PEOPLE)}"
        settings = await source.for_conversation(channel)
        started = time.perf_counter()
        check = await caps.check(channel, person, settings)
        middle = time.perf_counter()
        await check.noted("answer")
        before.append((middle - started) * 1000)
        after.append((time.perf_counter() - middle) * 1000)
    before.sort()
    p99 = before[int(len(before) * 0.99) - 1]
    return statistics.median(before), p99, statistics.median(after)


async def run(args: argparse.Namespace) -> None:
    now = time.time()
    server = PostgresServer.start(durable=True) if args.postgres else None
    print(f"{'store':<10} {'calls':>8} {'check p50 ms':>13} {'p99 ms':>8} {'notice p50 ms':>14}")
    try:
        for index, count in enumerate(args.calls):
            rows = calls(count, now, seed=index)
            with tempfile.TemporaryDirectory() as folder:
                stores: list[tuple[str, Store]] = [
                    ("sqlite", await fill_sqlite(Path(folder) / "bench.sqlite3", rows))
                ]
                if server is not None:
                    url = server.url("postgres")
                    postgres = await fill_postgres(url, rows)
                    stores.append(("postgres", postgres))
                for name, store in stores:
                    p50, p99, notice = await measure(store, now, args.checks)
                    print(f"{name:<10} {count:>8,} {p50:>13.2f} {p99:>8.2f} {notice:>14.2f}")
                    if name == "postgres":
                        await postgres._pool.execute("TRUNCATE model_calls, spend_days")
                    await store.close()
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--checks", type=int, default=300)
    parser.add_argument("--postgres", action="store_true", help="also a throwaway PostgreSQL")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
