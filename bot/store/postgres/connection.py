"""The asyncpg pool every part of the PostgreSQL store reads and writes through.

Each write is one statement or one transaction on a connection of the pool; a write the
server refuses (or a connection lost) becomes :class:`~bot.core.ports.store.StorageError`,
numbered by spell of failures, as SQLite's store does.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeAlias

import asyncpg

from bot.core.ports.store import StorageError

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

    from bot.store.postgres.announce import Announcements

    Db: TypeAlias = PoolConnectionProxy[asyncpg.Record]
    """A connection of the pool, as the store's modules are handed it."""

log = logging.getLogger("bot.store.postgres.store")

FAILURES: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
)
"""What a refused write or a lost connection raises."""


def text(value: str) -> str:
    """``value`` as PostgreSQL can store it: it refuses NUL characters in text, so each
    becomes U+FFFD (the replacement character)."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def changed(status: str) -> int:
    """How many rows a command's status (``UPDATE 3``, ``INSERT 0 1``) says it touched."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class Connection:
    """What every concern of :class:`~bot.store.postgres.store.PostgresStore` shares."""

    def __init__(
        self, pool: asyncpg.Pool, url: str, *, index: bool, announcements: Announcements
    ) -> None:
        self._pool = pool
        self.announcements = announcements
        self.path = url
        """The database's URL, its password hidden (what errors and logs name)."""
        self._index = index
        """Whether messages stored through this store enter the search index."""
        self.write_failure: str | None = None
        """Why the last write failed; None once one succeeds."""
        self._incident = 0
        self.on_write_failure: Callable[[], None] = lambda: None
        self._opened = False

    async def _rows(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return list(await self._pool.fetch(sql, *args))

    @asynccontextmanager
    async def _writing(self, *, tracked: bool = True) -> AsyncIterator[None]:
        """A write the server refuses becomes :class:`StorageError`. ``tracked``: whether the
        write counts towards the store's health (what the bot keeps does; a lease, which its
        caller retries and reports, does not)."""
        try:
            yield
        except FAILURES as exc:
            raise self._failed(exc, tracked=tracked) from exc
        if tracked and self.write_failure is not None:
            log.warning("writes to %s succeed again", self.path)
            self.write_failure = None

    def _failed(self, exc: BaseException, *, tracked: bool = True) -> StorageError:
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
    async def _transaction(self) -> AsyncIterator[Db]:
        """One transaction on a connection of the pool (rolled back when the block raises)."""
        async with self._writing(), self._pool.acquire() as db, db.transaction():
            yield db

    async def _write(self, sql: str, *args: Any, tracked: bool = True) -> int:
        async with self._writing(tracked=tracked):
            return changed(await self._pool.execute(sql, *args))

    async def _lock_conversation(self, db: Db, key: str) -> int | None:
        """Take the conversation's row (writers of one conversation wait for each other);
        its generation, or None when it has no row."""
        value = await db.fetchval(
            "SELECT generation FROM conversations WHERE key = $1 FOR UPDATE", key
        )
        return None if value is None else int(value)
