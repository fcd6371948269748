"""The PostgreSQL store: an asyncpg pool, migrations keyed on ``schema_version``.

:class:`PostgresStore` implements :class:`bot.core.ports.store.Store` as SQLite's store does,
for several processes sharing one database: each write that touches a conversation takes the
conversation's row first, so that two processes writing one conversation serialize cleanly.
Each concern lives in its own module (messages, turns, search, vectors, pins, profiles,
summaries, usage, admin, leases, settings, spend, prompt log); the schema and its migrations
in :mod:`.schema`.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import asyncpg

from bot.core.models import Conversation
from bot.store.postgres import schema, search
from bot.store.postgres.admin import Admin
from bot.store.postgres.announce import Announcements
from bot.store.postgres.connection import FAILURES
from bot.store.postgres.leases import Leases
from bot.store.postgres.messages import Messages
from bot.store.postgres.pins import Pins
from bot.store.postgres.profiles import Profiles
from bot.store.postgres.prompt_log import PromptLog
from bot.store.postgres.schema import SCHEMA_VERSION, DatabaseError
from bot.store.postgres.search import Search
from bot.store.postgres.settings import Settings
from bot.store.postgres.spend import Ledger
from bot.store.postgres.summaries import Summaries
from bot.store.postgres.turns import Turns
from bot.store.postgres.usage import Usage
from bot.store.postgres.vectors import Vectors

OPEN_FAILURES: tuple[type[BaseException], ...] = (*FAILURES, ValueError)
"""What a connection refused, or a url asyncpg cannot read, raises."""

__all__ = ["SCHEMA_VERSION", "DatabaseError", "PostgresStore", "open_pool", "reason", "shown"]


def shown(url: str) -> str:
    """``url`` as logs and errors show it: its password replaced by ``***``."""
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return "<a database url that cannot be read>"
    if not password:
        return url
    user, _, host = parts.netloc.rpartition("@")
    name = user.split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{name}:***@{host}"))


async def open_pool(url: str, *, pool_size: int) -> asyncpg.Pool:
    """A pool on the database at ``url``, its schema migrated; :class:`DatabaseError` naming
    the url without its password when it cannot be had."""
    where = shown(url)
    try:
        pool = await asyncpg.create_pool(url, min_size=1, max_size=pool_size)
    except OPEN_FAILURES as exc:
        raise DatabaseError(f"cannot open database {where}: {reason(exc, url)}") from exc
    try:
        async with pool.acquire() as db:
            await schema.migrate(db, where)
    except DatabaseError:
        await pool.close()
        raise
    except FAILURES as exc:
        await pool.close()
        raise DatabaseError(f"cannot open database {where}: {reason(exc, url)}") from exc
    except BaseException:
        await pool.close()
        raise
    return pool


class PostgresStore(
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
    async def open(cls, url: str, *, pool_size: int = 10, index: bool = True) -> PostgresStore:
        """Connect (and migrate) the database at ``url``. ``index``: messages stored through
        this store enter recall's search index (and those stored without it are indexed
        now); off, storing a message does no indexing work at all (recall is off)."""
        where = shown(url)
        pool = await open_pool(url, pool_size=pool_size)
        store = cls(pool, where, index=index, announcements=Announcements(url))
        try:
            if index:
                async with pool.acquire() as db, db.transaction():
                    if await search.unindexed(db):
                        await search.catch_up(db)
        except FAILURES as exc:
            await pool.close()
            raise DatabaseError(f"cannot open database {where}: {reason(exc, url)}") from exc
        except BaseException:
            await pool.close()
            raise
        store._opened = True
        return store

    async def reset(self, *, conversation: Conversation, include_pins: bool) -> int:
        key = conversation.key
        async with self._transaction() as db:
            await self._lock_conversation(db, key)
            await db.execute("DELETE FROM search_terms WHERE conversation = $1", key)
            status = await db.execute("DELETE FROM messages WHERE conversation = $1", key)
            await db.execute("DELETE FROM summaries WHERE conversation = $1", key)
            await db.execute("DELETE FROM prompt_log WHERE conversation = $1", key)
            # Kept, with its generation moved on (a summary in flight is discarded).
            await db.execute(
                "UPDATE conversations SET generation = generation + 1 WHERE key = $1", key
            )
            if include_pins:
                await db.execute(
                    "DELETE FROM pins WHERE channel_key = $1", conversation.channel_key
                )
        return int(status.rsplit(" ", 1)[-1])

    async def close(self) -> None:
        await self.announcements.close()
        await self._pool.close()


def reason(exc: BaseException, url: str) -> str:
    """Why ``exc`` happened, without the password (a driver may quote the url)."""
    reason = str(exc) or type(exc).__name__
    try:
        password = urlsplit(url).password
    except ValueError:
        password = None
    return reason.replace(password, "***") if password else reason
