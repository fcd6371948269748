"""A SQLite database copied into PostgreSQL (``bot migrate-store``), ids kept, resumable.

Each table is copied in the order of its primary key, a batch per transaction (PostgreSQL's
``COPY``), so that what the target holds of a table is always a prefix of the source's: a copy
interrupted anywhere (Ctrl-C, a kill, a lost connection) goes on after the greatest key the
target holds, without a duplicate and without bookkeeping of its own. Messages are copied with
their search terms (what :func:`bot.store.postgres.search.catch_up` would compute) and each
batch adds them to the conversations' term counts in its transaction. Before copying, the
target's rows are checked to be that prefix (its last row equal to the source's, as many rows
up to it): a database holding anything else is refused. The meta values, tokenizer
calibration samples and handled requests (bookkeeping a bot run may have written into the
target) are made equal to the source's, and the ledger's daily rollups are made again from the
calls copied (the same sums as the source's, integers). Afterwards the identity sequences
continue past the source's greatest ids (those of deleted rows too: ids are never reused), and
each table's rows are counted on both sides.

The source is read in one transaction that holds SQLite's write lock: one snapshot, and a bot
started meanwhile cannot write to it. A process that has the file open (the bot) is told by
the lock every SQLite connection holds on the file's shared memory (``-shm``) while open.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import struct
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite

from bot.core.wording import counted
from bot.store.postgres import search
from bot.store.postgres.connection import text
from bot.store.spend_sql import POSTGRES_DAY, POSTGRES_PICOS, backfill
from bot.store.sqlite.store import SqliteStore

if TYPE_CHECKING:
    from bot.store.postgres.connection import Db

Key = tuple[Any, ...]


@dataclass(frozen=True)
class Table:
    name: str
    key: tuple[str, ...]
    columns: tuple[str, ...]
    """What is copied, the key's columns first; the same names on both sides."""
    text_key: bool = True
    """Its key is text (ordered by code point on both sides), else an integer."""
    where: str = ""
    """Which of the source's rows are copied (all when empty)."""

    @property
    def key_list(self) -> str:
        return ", ".join(self.key)


def _table(name: str, key: str, columns: str, *, where: str = "") -> Table:
    keys = tuple(key.split())
    return Table(name, keys, tuple(columns.split()), text_key=keys != ("id",), where=where)


TABLES: tuple[Table, ...] = (
    _table("conversations", "key", "key channel_key generation created_at"),
    _table(
        "messages",
        "id",
        "id conversation reply_to role author_id author_name content tokens"
        " platform_message_id created_at importance marks",
    ),
    Table(
        "message_vectors",
        ("message_id",),
        ("message_id", "model", "vector"),
        text_key=False,
        where="message_id IN (SELECT id FROM messages)",  # none left by a message gone
    ),
    _table("pins", "id", "id channel_key text tokens author_id author_name created_at"),
    _table(
        "summaries",
        "id",
        "id conversation content tokens covers_through_turn message_count first_message_id"
        " last_message_id compactions rebuilt model created_at",
    ),
    _table(
        "usage",
        "conversation model purpose",
        "conversation model purpose requests prompt_tokens completion_tokens estimated",
    ),
    _table("profile_facts", "id", "id platform workspace user_id text tokens source created_at"),
    _table("profile_forgets", "platform workspace user_id", "platform workspace user_id forgot_at"),
    _table("settings", "scope key", "scope key value by_id by_name at"),
    _table("setting_changes", "id", "id scope key old new by_id by_name at"),
    _table(
        "model_calls",
        "id",
        "id at conversation channel_key workspace person model purpose prompt_tokens"
        " cached_tokens completion_tokens cost estimated",
    ),
    _table(
        "prompt_log",
        "id",
        "id at conversation channel_key question_id question person model tokens budget layers"
        " messages recall",
    ),
)
"""The data, in the order it is copied (a vector after its message)."""

BOOKKEEPING: tuple[Table, ...] = (
    _table("meta", "key", "key value"),
    _table(
        "calibration_samples",
        "id",
        "id model latin_tokens cjk_tokens other_tokens reported_tokens observed_at",
    ),
    _table("handled_requests", "request_id", "request_id handled_at"),
)
"""Made equal to the source's, whatever the target held (a bot run writes them too)."""

ROLLUPS = _table(
    "spend_days",
    "kind key person day model",
    "kind key person day model requests prompt_tokens cached_tokens completion_tokens cost",
)
"""Not copied: made from the calls copied, as PostgreSQL's migration made them; counted."""

IDENTITIES = (
    "messages",
    "pins",
    "summaries",
    "profile_facts",
    "setting_changes",
    "calibration_samples",
    "model_calls",
    "prompt_log",
)


class MigrationError(Exception):
    """The copy cannot start or go on; the message (one line) says why."""


class SourceInUse(MigrationError):
    """Another process has the SQLite file open."""


class SourceMissing(MigrationError):
    """No SQLite file there (migrate-store never makes one)."""


def check_free(path: str) -> None:
    """:class:`SourceMissing` or :class:`SourceInUse`, unless the file is there for us."""
    if not Path(path).is_file():
        raise SourceMissing(f"no SQLite database at {path} (storage.path, or --from PATH)")
    if (pid := holder(path)) is not None:
        raise _in_use(path, pid)


def holder(path: str) -> int | None:
    """The process id of another process that has the SQLite database ``path`` open (0 when
    it cannot be known), or None. Every connection in WAL mode holds a shared lock on the
    "DMS" byte of the ``-shm`` file (offset 128, SQLite's unix VFS) for as long as it is
    open; asking for the lock (``F_GETLK``) takes nothing."""
    if not sys.platform.startswith("linux"):  # struct flock's layout is Linux's here
        return None
    import fcntl

    try:
        fd = os.open(f"{path}-shm", os.O_RDONLY)
    except OSError:
        return None  # no shared memory: nobody has it open in WAL mode
    try:
        asked = struct.pack("hhqqi", fcntl.F_WRLCK, os.SEEK_SET, 128, 1, 0)
        found = fcntl.fcntl(fd, fcntl.F_GETLK, asked)
    except OSError:
        return None
    finally:
        os.close(fd)
    kind, _, _, _, pid = struct.unpack("hhqqi", found)
    return None if kind == fcntl.F_UNLCK else max(pid, 0)


def _after(table: Table, after: Key | None) -> tuple[str, list[Any]]:
    """The source's condition for the rows past ``after``, with ``table.where``."""
    parts, params = [table.where] if table.where else [], []
    if after is not None:
        marks = ", ".join("?" for _ in table.key)
        parts.append(f"({table.key_list}) > ({marks})")
        params = list(after)
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


class Source:
    """The SQLite database, read in one transaction that holds its write lock."""

    def __init__(self, db: aiosqlite.Connection, path: str) -> None:
        self._db = db
        self.path = path

    @classmethod
    async def open(cls, path: str) -> Source:
        """The database at ``path``, checked and migrated by the SQLite store first;
        :class:`SourceMissing` when there is none, :class:`SourceInUse` when another
        process has it open."""
        check_free(path)
        store = await SqliteStore.open(path, index=False)  # DatabaseError: damaged, newer
        await store.close()
        db = await aiosqlite.connect(path, isolation_level=None)
        try:
            await db.execute("PRAGMA busy_timeout = 1000")
            await db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError:
            await db.close()
            raise _in_use(path, holder(path) or 0) from None
        return cls(db, path)

    async def close(self) -> None:
        await self._db.close()  # the transaction ends with it, having written nothing

    async def _value(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = list(await self._db.execute_fetchall(sql, params))
        return rows[0][0] if rows else None

    async def count(self, table: Table, *, through: Key | None = None) -> int:
        """The rows to copy (those up to ``through``: key at most that)."""
        where, params = _after(table, None)
        if through is not None:
            marks = ", ".join("?" for _ in table.key)
            where += (" AND " if where else " WHERE ") + f"({table.key_list}) <= ({marks})"
            params = list(through)
        return int(await self._value(f"SELECT COUNT(*) FROM {table.name}{where}", params))  # noqa: S608

    async def rows(self, table: Table, *, after: Key | None, limit: int) -> list[tuple[Any, ...]]:
        """The next ``limit`` rows past ``after``, in key order."""
        where, params = _after(table, after)
        sql = (
            f"SELECT {', '.join(table.columns)} FROM {table.name}{where}"  # noqa: S608
            f" ORDER BY {table.key_list} LIMIT ?"
        )
        return [tuple(row) for row in await self._db.execute_fetchall(sql, [*params, limit])]

    async def row(self, table: Table, key: Key) -> tuple[Any, ...] | None:
        match = " AND ".join(f"{column} = ?" for column in table.key)
        sql = f"SELECT {', '.join(table.columns)} FROM {table.name} WHERE {match}"  # noqa: S608
        rows = list(await self._db.execute_fetchall(sql, list(key)))
        return tuple(rows[0]) if rows else None

    async def greatest_id(self, table: str) -> int:
        """The greatest id the table has ever given (AUTOINCREMENT remembers deleted ones)."""
        kept = await self._value("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,))
        largest = await self._value(f"SELECT MAX(id) FROM {table}")  # noqa: S608
        return max(int(kept or 0), int(largest or 0))


class Target:
    """The PostgreSQL database, on one connection."""

    def __init__(self, db: Db, name: str) -> None:
        self._db = db
        self.name = name
        """Its URL without the password."""

    def _order(self, table: Table, *, descending: bool) -> str:
        collate = ' COLLATE "C"' if table.text_key else ""  # code point order, as SQLite's
        way = " DESC" if descending else ""
        return ", ".join(f"{column}{collate}{way}" for column in table.key)

    async def count(self, table: Table) -> int:
        return int(await self._db.fetchval(f"SELECT COUNT(*) FROM {table.name}"))  # noqa: S608

    async def last_key(self, table: Table) -> Key | None:
        order = self._order(table, descending=True)
        sql = f"SELECT {table.key_list} FROM {table.name} ORDER BY {order} LIMIT 1"  # noqa: S608
        row = await self._db.fetchrow(sql)
        return None if row is None else tuple(row)

    async def row(self, table: Table, key: Key) -> tuple[Any, ...] | None:
        match = " AND ".join(f"{column} = ${n}" for n, column in enumerate(table.key, 1))
        sql = f"SELECT {', '.join(table.columns)} FROM {table.name} WHERE {match}"  # noqa: S608
        row = await self._db.fetchrow(sql, *key)
        return None if row is None else tuple(row)

    async def write(self, batch: Batch) -> None:
        """One batch, in one transaction (messages' term counts with them)."""
        async with self._db.transaction():
            await self._db.copy_records_to_table(
                batch.table, records=batch.records, columns=batch.columns
            )
            await search.add_counts(self._db, batch.counts)

    async def replace(self, table: Table, rows: list[tuple[Any, ...]]) -> int:
        """Make the table's rows of these keys equal to ``rows``; how many changed."""
        width = len(table.key)
        held = {
            tuple(r[:width]): tuple(r)
            for r in await self._db.fetch(f"SELECT {', '.join(table.columns)} FROM {table.name}")  # noqa: S608
        }
        changed = [row for row in map(_stored, rows) if held.get(row[:width]) != row]
        if changed:
            names = ", ".join(table.columns)
            marks = ", ".join(f"${n}" for n in range(1, len(table.columns) + 1))
            sets = ", ".join(f"{c} = excluded.{c}" for c in table.columns[width:])
            await self._db.executemany(
                f"INSERT INTO {table.name} ({names}) VALUES ({marks})"  # noqa: S608
                f" ON CONFLICT ({table.key_list}) DO UPDATE SET {sets}",
                changed,
            )
        return len(changed)

    async def rebuild_rollups(self) -> None:
        """The ledger's daily rollups, made again from the calls the target holds."""
        async with self._db.transaction():
            await self._db.execute("DELETE FROM spend_days")
            await self._db.execute(backfill(POSTGRES_DAY, POSTGRES_PICOS))

    async def continue_ids(self, table: str, greatest: int) -> None:
        """New rows' ids follow ``greatest`` and every id the table holds."""
        await self._db.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"  # noqa: S608
            f" GREATEST((SELECT COALESCE(MAX(id), 0) FROM {table}), $1::bigint) + 1, false)",
            greatest,
        )


def _stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A source row as PostgreSQL stores it (no NUL characters in text)."""
    return tuple(text(value) if isinstance(value, str) else value for value in row)


@dataclass(frozen=True)
class Batch:
    """Rows as they are written: messages with their search terms, and the terms counted."""

    table: str
    columns: list[str]
    records: list[tuple[Any, ...]]
    counts: dict[str, Counter[str]]

    @classmethod
    def of(cls, table: Table, rows: list[tuple[Any, ...]]) -> Batch:
        columns = list(table.columns)
        records = [_stored(row) for row in rows]
        counts: dict[str, Counter[str]] = {}
        if table.name == "messages":
            key, content = columns.index("conversation"), columns.index("content")
            records = [(*row, search.terms_of(row[content])) for row in records]
            for row in records:  # counted per spelling, found folded (as the store does)
                counts.setdefault(row[key], Counter()).update(search.counted_terms(row[content]))
            columns.append("terms")
        return cls(table.name, columns, records, counts)


def _in_use(path: str, pid: int) -> SourceInUse:
    who = f"process {pid}" if pid else "another process"
    return SourceInUse(
        f"{path} is open in {who} (is the bot running?): stop it, then run this again"
    )


@dataclass(frozen=True)
class Counted:
    table: str
    source: int
    target: int


@dataclass(frozen=True)
class Migrated:
    copied: int
    """Rows written this time (0: the target held everything already)."""
    counts: list[Counted]

    @property
    def mismatched(self) -> list[Counted]:
        return [c for c in self.counts if c.source != c.target]


@dataclass(frozen=True)
class _Plan:
    after: dict[str, Key | None]
    remaining: int


async def _plan(source: Source, target: Target) -> _Plan:
    """Where each table's copy goes on from; refused when the target holds other data."""
    after: dict[str, Key | None] = {}
    remaining = 0
    for table in TABLES:
        held = await target.count(table)
        last = await target.last_key(table) if held else None
        if last is not None:
            ours = await source.row(table, last)
            same = ours is not None and _stored(ours) == await target.row(table, last)
            if not same or await source.count(table, through=last) != held:
                raise MigrationError(
                    f"{target.name} already holds {table.name} that are not in {source.path}"
                    f" ({counted(held, 'row')} there): migrate into an empty database"
                )
        after[table.name] = last
        remaining += await source.count(table) - held
    return _Plan(after, remaining)


async def migrate(
    source: Source,
    target: Target,
    *,
    batch: int,
    sized: Callable[[int], None] = lambda total: None,
    advance: Callable[[int], None] = lambda count: None,
) -> Migrated:
    """Copy what the target lacks of the source, then count both sides' rows."""
    plan = await _plan(source, target)
    sized(plan.remaining)
    copied = 0
    for table in TABLES:
        copied += await _copy(source, target, table, plan.after[table.name], batch, advance)
    for table in BOOKKEEPING:
        copied += await target.replace(table, await source.rows(table, after=None, limit=-1))
    await target.rebuild_rollups()
    for name in IDENTITIES:
        await target.continue_ids(name, await source.greatest_id(name))
    counts = [
        Counted(table.name, await source.count(table), await target.count(table))
        for table in (*TABLES, *BOOKKEEPING, ROLLUPS)
    ]
    return Migrated(copied, counts)


async def _copy(
    source: Source,
    target: Target,
    table: Table,
    after: Key | None,
    batch: int,
    advance: Callable[[int], None],
) -> int:
    """The table's rows past ``after``, a batch per transaction; the next batch is read and
    made ready (its search terms computed, in a thread) while one is written."""
    width, copied = len(table.key), 0

    async def read(after: Key | None) -> tuple[Key | None, Batch | None]:
        rows = await source.rows(table, after=after, limit=batch)
        if not rows:
            return None, None
        return rows[-1][:width], await asyncio.to_thread(Batch.of, table, rows)

    last, ready = await read(after)
    while ready is not None:
        following = asyncio.ensure_future(read(last))
        try:
            await target.write(ready)
        except BaseException:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
            raise
        copied += len(ready.records)
        advance(len(ready.records))
        last, ready = await following
    return copied
