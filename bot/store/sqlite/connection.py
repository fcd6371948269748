"""The one aiosqlite connection every part of the store reads and writes through.

Writes hold one lock, so that a multi-statement transaction never interleaves with another
task's statements on the shared connection; a write SQLite refuses becomes
:class:`~bot.core.ports.store.StorageError`, numbered by spell of failures.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager, suppress
from typing import Any

import aiosqlite

from bot.core.ports.store import StorageError

log = logging.getLogger("bot.store.sqlite.store")


class Connection:
    """What every concern of :class:`~bot.store.sqlite.store.SqliteStore` shares."""

    def __init__(self, db: aiosqlite.Connection, path: str, *, index: bool) -> None:
        self._db = db
        self.path = path
        self._index = index
        """Whether messages stored through this connection enter the search index."""
        self._write_lock = asyncio.Lock()
        self.write_failure: str | None = None
        """Why the last write failed; None once one succeeds."""
        self._incident = 0
        self.on_write_failure: Callable[[], None] = lambda: None
        self._opened = False

    async def _rows(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[Any]:
        return list(await self._db.execute_fetchall(sql, params))

    @asynccontextmanager
    async def _writing(self, *, tracked: bool = True) -> AsyncIterator[None]:
        """Hold the write lock; a write SQLite refuses becomes :class:`StorageError`.
        ``tracked``: whether the write counts towards the store's health (what the bot keeps
        does; a lease, which its caller retries and reports, does not)."""
        async with self._write_lock:
            try:
                yield
            except sqlite3.Error as exc:
                await self._abandon()
                raise self._failed(exc, tracked=tracked) from exc
        if tracked and self.write_failure is not None:
            log.warning("writes to %s succeed again", self.path)
            self.write_failure = None

    async def _abandon(self) -> None:
        """Roll back what a failed statement left open (SQLite may keep a transaction open
        when its commit fails), so that a later commit cannot carry it in."""
        if self._db.in_transaction:
            with suppress(sqlite3.Error):
                await self._db.execute("ROLLBACK")

    def _failed(self, exc: sqlite3.Error, *, tracked: bool = True) -> StorageError:
        cause = str(exc) or type(exc).__name__
        if not tracked:  # the caller reports it; the store's health is left as it is
            return StorageError(self.path, cause, incident=self._incident)
        if self.write_failure is None:
            self._incident += 1
        self.write_failure = cause
        self.on_write_failure()
        if self._opened:  # while opening, the caller names the failure itself
            log.error("storage write to %s failed: %s", self.path, cause)
        return StorageError(self.path, cause, incident=self._incident)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[None]:
        async with self._writing():
            await self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                if self._db.in_transaction:
                    await self._db.execute("ROLLBACK")
                raise
            await self._db.execute("COMMIT")

    async def _write(
        self, sql: str, params: Sequence[Any] | dict[str, Any], *, tracked: bool = True
    ) -> int:
        async with self._writing(tracked=tracked):
            cursor = await self._db.execute(sql, params)
            return cursor.rowcount
