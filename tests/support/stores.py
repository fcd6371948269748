"""Both implementations of the store port, opened the same way, for tests that hold for
either: SQLite on a temporary file, and the in-memory store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

from bot.core.ports.store import Store
from bot.store.memory import MemoryStore
from bot.store.sqlite.store import SqliteStore

StoreKind = Literal["sqlite", "memory"]
KINDS: tuple[StoreKind, ...] = ("sqlite", "memory")


@asynccontextmanager
async def opened_store(kind: StoreKind, folder: Path) -> AsyncIterator[Store]:
    """A new, empty store of ``kind`` (SQLite: a file in ``folder``), closed afterwards."""
    store: Store
    if kind == "sqlite":
        store = await SqliteStore.open(str(folder / f"{kind}.sqlite3"))
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
