"""Every implementation of the store port, opened the same way, for tests that hold for
each: SQLite on a temporary file, PostgreSQL on a fresh database of the test server, and the
in-memory store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import pytest
from _pytest.mark import ParameterSet

from bot.core.ports.store import Store
from bot.store.memory import MemoryStore
from bot.store.sqlite.store import SqliteStore

StoreKind = Literal["sqlite", "postgres", "memory"]
KINDS: tuple[StoreKind, ...] = ("sqlite", "postgres", "memory")


def kind_params(kinds: Sequence[StoreKind]) -> list[ParameterSet]:
    """``kinds`` to parametrize with: PostgreSQL's starts a server, so it is in the slow tier."""
    return [
        pytest.param(kind, id=kind, marks=pytest.mark.slow if kind == "postgres" else ())
        for kind in kinds
    ]


KIND_PARAMS = kind_params(KINDS)
APP_KINDS: tuple[StoreKind, ...] = ("sqlite", "memory")
"""The stores :func:`app_store` hands the application (the wiring opens SQLite's)."""
BOT_KINDS: tuple[StoreKind, ...] = ("sqlite", "postgres")
"""The stores the ``stores`` marker names: those the bot opens from its config
(``storage.path``, ``storage.url``), so that a test restarting the bot finds its data again."""


@asynccontextmanager
async def opened_store(
    kind: StoreKind, folder: Path, request: pytest.FixtureRequest | None = None
) -> AsyncIterator[Store]:
    """A new, empty store of ``kind`` (SQLite: a file in ``folder``; PostgreSQL: a new
    database on the session's server, which needs the test's ``request``), closed
    afterwards."""
    store: Store
    if kind == "sqlite":
        store = await SqliteStore.open(str(folder / f"{kind}.sqlite3"))
    elif kind == "postgres":
        from bot.store.postgres.store import PostgresStore

        assert request is not None, "a PostgreSQL store needs the test's request"
        server = request.getfixturevalue("postgres_server")
        url = server.create_database()
        try:
            store = await PostgresStore.open(url)
        except BaseException:
            server.drop_database(url)
            raise
        try:
            yield store
        finally:
            await store.close()
            server.drop_database(url)
        return
    else:
        store = MemoryStore()
    try:
        yield store
    finally:
        await store.close()


def app_store(kind: StoreKind) -> Store | None:
    """What ``bot.wiring.open_app`` is handed for ``kind``: None (it opens the configured
    SQLite file) or a new in-memory store."""
    return MemoryStore() if kind == "memory" else None
