"""The SQLite store: one file, WAL, a busy timeout, migrations by ``PRAGMA user_version``.

:class:`SqliteStore` implements :class:`bot.core.ports.store.Store` on one aiosqlite
connection: every read and write runs on aiosqlite's thread, never on the event loop. WAL lets
a read see every committed write without waiting for a writer in another process. Each concern
lives in its own module (messages, turns, search, vectors, pins, profiles, summaries, usage,
admin, leases, settings, spend, prompt log); the schema and its migrations in :mod:`.schema`.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import suppress
from pathlib import Path
from typing import Literal

import aiosqlite

from bot.core.models import Conversation
from bot.core.ports.store import StorageError
from bot.store.backup import os_reason
from bot.store.sqlite import schema, search
from bot.store.sqlite.admin import Admin, file_id
from bot.store.sqlite.leases import Leases
from bot.store.sqlite.messages import Messages
from bot.store.sqlite.pins import Pins
from bot.store.sqlite.profiles import Profiles
from bot.store.sqlite.prompt_log import PromptLog
from bot.store.sqlite.schema import SCHEMA_VERSION, DatabaseError
from bot.store.sqlite.search import Search
from bot.store.sqlite.settings import Settings
from bot.store.sqlite.spend import Ledger
from bot.store.sqlite.summaries import Summaries
from bot.store.sqlite.turns import Turns
from bot.store.sqlite.usage import Usage
from bot.store.sqlite.vectors import Vectors

__all__ = ["SCHEMA_VERSION", "DatabaseError", "SqliteStore"]

_SYNCHRONOUS = {"full": "FULL", "normal": "NORMAL"}


class SqliteStore(
    Messages,
    Turns,
    Search,
    Vectors,
    Pins,
    Profiles,
    Summaries,
    Usage,
    Admin,
    Leases,
    Settings,
    Ledger,
    PromptLog,
):
    @classmethod
    async def open(
        cls,
        path: str,
        *,
        busy_timeout_ms: int = 5000,
        index: bool = True,
        synchronous: Literal["full", "normal"] = "full",
    ) -> SqliteStore:
        """Open (and migrate) the database. ``index``: messages stored through this
        connection enter recall's search index (and those stored without it are indexed
        now); off, storing a message does no indexing work at all (recall is off).
        ``synchronous``: full, every commit is on disk when it returns; normal, a power
        loss can drop the last commits."""
        if path != ":memory:":
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(
                    f"cannot open database {path}: {os_reason(exc, Path(path).parent)}"
                ) from exc
        try:
            # Refusals come from here: aiosqlite's thread outlives a failed connect.
            sqlite3.connect(path).close()
            db = await aiosqlite.connect(path, isolation_level=None)
        except Exception as exc:
            raise DatabaseError(f"cannot open database {path}: {exc}") from exc
        store = cls(db, path, index=index)
        try:
            await store._prepare(busy_timeout_ms, synchronous)
        except (sqlite3.Error, StorageError) as exc:
            await db.close()
            cause = exc.cause if isinstance(exc, StorageError) else str(exc)
            if "fts5" in cause:
                raise DatabaseError(
                    f"this Python's SQLite ({sqlite3.sqlite_version}) lacks FTS5, which recall's "
                    "search index needs; use a standard CPython build (or the Docker image)"
                ) from exc
            raise DatabaseError(f"cannot open database {path}: {cause}") from exc
        except Exception:
            await db.close()
            raise
        store._opened = True
        return store

    async def _prepare(self, busy_timeout_ms: int, synchronous: str) -> None:
        """Settings, checks and migrations, then the index caught up (when on)."""
        db = self._db
        await db.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await schema.check_version(db, self.path)  # before anything is written
        journal = await _into_wal(db, busy_timeout_ms / 1000)
        await db.execute(f"PRAGMA synchronous = {_SYNCHRONOUS[synchronous]}")
        await db.execute("PRAGMA foreign_keys = ON")
        damage = await self.integrity_check()
        if damage != "ok":
            raise DatabaseError(f"database {self.path} is damaged: {damage.splitlines()[0]}")
        async with self._writing():
            await schema.migrate(db, self.path)
        if self._index:
            async with self._transaction():
                if await search.unindexed(db):
                    await search.catch_up(db)
        if self.path != ":memory:" and next(iter(journal))[0] == "wal":
            self._file_id = file_id(self.path)
            with suppress(OSError):  # a read in WAL mode has made it
                self._wal_id = file_id(f"{self.path}-wal")

    async def reset(self, *, conversation: Conversation, include_pins: bool) -> int:
        key = conversation.key
        async with self._transaction():
            await search.forget(self._db, key)
            cursor = await self._db.execute("DELETE FROM messages WHERE conversation = ?", (key,))
            deleted = cursor.rowcount
            await self._db.execute("DELETE FROM summaries WHERE conversation = ?", (key,))
            await self._db.execute("DELETE FROM prompt_log WHERE conversation = ?", (key,))
            # Kept, with its generation moved on (a summary in flight is discarded); never made.
            await self._db.execute(
                "UPDATE conversations SET generation = generation + 1 WHERE key = ?", (key,)
            )
            if include_pins:
                await self._db.execute(
                    "DELETE FROM pins WHERE channel_key = ?", (conversation.channel_key,)
                )
        return deleted

    async def close(self) -> None:
        await self._db.close()


async def _into_wal(db: aiosqlite.Connection, within: float) -> list[sqlite3.Row]:
    """``PRAGMA journal_mode = WAL``, tried again for up to ``within`` seconds while another
    connection holds the file: switching a file out of its rollback journal takes it whole,
    and SQLite does not wait on a busy file for that (two processes starting together)."""
    loop = asyncio.get_running_loop()
    deadline, pause = loop.time() + within, 0.01
    while True:
        try:
            return list(await db.execute_fetchall("PRAGMA journal_mode = WAL"))
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or loop.time() >= deadline:
                raise
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.2)
