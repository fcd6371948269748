"""An in-memory store (:class:`MemoryStore`): the core's unit tests run against it, and the
port's contract tests run against it and SQLite alike."""

from bot.store.memory.store import MemoryStore

__all__ = ["MemoryStore"]
