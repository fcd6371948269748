"""What operators and the bot's bookkeeping ask of the database: health, backup, export and
import, conversations listed, requests claimed, meta values, token recounts."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.core.models import Role, render_content
from bot.core.ports.store import ConversationInfo
from bot.store import archive
from bot.store import backup as backups
from bot.store.sqlite import search
from bot.store.sqlite.connection import Connection


def file_id(path: str) -> tuple[int, int]:
    status = os.stat(path)
    return status.st_dev, status.st_ino


def file_problem(path: str, opened: tuple[int, int], wal: tuple[int, int] | None) -> str | None:
    """A database file (or its WAL) deleted or replaced under the open connection: what
    it commits from then on is lost when the process ends. A WAL deleted under the bot may be
    made anew by a connection's first read, so the WAL is told by its inode, not its name."""
    try:
        if file_id(path) != opened:
            return f"{path} was replaced while open"
    except OSError:
        return f"{path} was deleted while open"
    try:
        same_wal = wal is None or file_id(f"{path}-wal") == wal
    except OSError:
        same_wal = False
    if not same_wal:
        return f"{path}-wal was deleted while open: what is written since dies with the bot"
    return None


class Admin(Connection):
    _file_id: tuple[int, int] | None = None  # the file's device and inode, once open
    _wal_id: tuple[int, int] | None = None  # and its WAL's

    async def conversations(self) -> list[ConversationInfo]:
        rows = await self._rows(
            "SELECT c.key, c.messages,"
            " (SELECT COALESCE(SUM(tokens), 0) FROM messages m WHERE m.conversation = c.key),"
            " (SELECT COUNT(*) FROM pins p WHERE p.channel_key = c.channel_key),"
            " (SELECT MAX(created_at) FROM messages m WHERE m.conversation = c.key)"
            " FROM conversations c ORDER BY c.key"
        )
        return [ConversationInfo(*row) for row in rows]

    async def known_keys(self) -> set[str]:
        """Every conversation's key, the channel of every pin and every scope with settings
        or changes (a channel may hold only those)."""
        rows = await self._rows(
            "SELECT key FROM conversations UNION SELECT channel_key FROM pins"
            " UNION SELECT scope FROM settings UNION SELECT scope FROM setting_changes"
        )
        return {str(row[0]) for row in rows}

    async def claim_request(self, request_id: str, *, keep_seconds: float) -> bool:
        now = time.time()
        async with self._transaction():
            await self._db.execute(
                "DELETE FROM handled_requests WHERE handled_at < ?", (now - keep_seconds,)
            )
            cursor = await self._db.execute(
                "INSERT INTO handled_requests (request_id, handled_at) VALUES (?, ?)"
                " ON CONFLICT DO NOTHING",
                (request_id, now),
            )
            claimed = cursor.rowcount > 0
        return claimed

    async def get_meta(self, key: str) -> str | None:
        rows = await self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return next((str(row[0]) for row in rows), None)

    async def set_meta(self, key: str, value: str) -> None:
        await self._write(
            "INSERT INTO meta (key, value) VALUES (?, ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    async def meta_once(self, *, key: str, value: str) -> str:
        await self._write(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (key, value)
        )
        kept = await self.get_meta(key)
        return value if kept is None else kept

    async def retokenize(self, count: Callable[[str], int]) -> int:
        """Recount every stored token count (after the chat model's encoding changed)."""
        async with self._transaction():
            rows = await self._rows("SELECT id, role, author_name, content FROM messages")
            await self._db.executemany(
                "UPDATE messages SET tokens = ? WHERE id = ?",
                [(count(render_content(Role(r[1]), r[2], r[3])), r[0]) for r in rows],
            )
            for table, column in (
                ("pins", "text"),
                ("summaries", "content"),
                ("profile_facts", "text"),
            ):
                texts = await self._rows(
                    f"SELECT id, {column} FROM {table}"  # noqa: S608 (constant names)
                )
                await self._db.executemany(
                    f"UPDATE {table} SET tokens = ? WHERE id = ?",  # noqa: S608
                    [(count(r[1]), r[0]) for r in texts],
                )
        return len(rows)

    async def backup(
        self, target: Path, pages: Callable[[int, int], None] = lambda done, total: None
    ) -> None:
        """A consistent copy of the database at ``target``, taken while the bot runs;
        ``pages``: copied and total, after each step."""
        async with self._write_lock:
            await backups.backup(self._db, target, pages)

    async def export_records(self, *, channel_key: str | None) -> list[dict[str, Any]]:
        """One channel's conversations, messages, pins and summaries, and its people's
        profiles (all, when None)."""
        async with self._write_lock:
            return await archive.export_records(self._db, channel_key=channel_key)

    async def export_each(
        self,
        *,
        channel_key: str | None,
        write: Callable[[list[dict[str, Any]]], None],
        sized: Callable[[int], None] = lambda total: None,
    ) -> int:
        """:meth:`export_records` a chunk at a time (``bot export``)."""
        async with self._write_lock:
            return await archive.export_each(
                self._db, channel_key=channel_key, write=write, sized=sized
            )

    async def import_records(
        self,
        records: list[dict[str, Any]],
        advance: Callable[[int], None] = lambda count: None,
    ) -> archive.Imported:
        """Import an export (see :func:`bot.store.archive.import_records`); the imported
        messages enter the search index in the same transaction, where recall is on."""
        async with self._write_lock:
            return await archive.import_records(
                self._db, records, advance, index=search.catch_up if self._index else None
            )

    async def health_problem(self) -> str | None:
        """Why the database is not fit to keep messages right now, or None."""
        if self.write_failure is not None:
            return f"cannot write: {self.write_failure}"
        if not await self.ping():
            return "does not answer"
        return (
            None if self._file_id is None else file_problem(self.path, self._file_id, self._wal_id)
        )

    async def connections(self) -> tuple[int, int] | None:
        return None  # one connection, no pool

    async def ping(self) -> bool:
        """Whether the database answers a query."""
        try:
            await self._db.execute_fetchall("SELECT 1 FROM meta LIMIT 1")
        except Exception:
            return False
        return True

    async def synchronous(self) -> str:
        """How the connection syncs its commits: ``full``, ``normal`` (or ``off``)."""
        rows = await self._rows("PRAGMA synchronous")
        return {0: "off", 1: "normal", 2: "full", 3: "extra"}[next(iter(rows))[0]]

    async def integrity_check(self) -> str:
        rows = await self._rows("PRAGMA quick_check")
        return str(next(iter(rows))[0])
