"""What operators and the bot's bookkeeping ask of the database: health, export and import,
conversations listed, requests claimed, meta values, token recounts.

A PostgreSQL database is backed up with PostgreSQL's own tools (``pg_dump``, or the server's
continuous archiving): :meth:`Admin.backup` says so rather than copy it another way.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bot.core.models import Role, render_content
from bot.core.ports.store import ConversationInfo
from bot.store import archive
from bot.store.backup import BackupError
from bot.store.postgres import records, schema
from bot.store.postgres.connection import Connection, text


class Admin(Connection):
    async def conversations(self) -> list[ConversationInfo]:
        rows = await self._rows(
            "SELECT c.key, COUNT(m.id), COALESCE(SUM(m.tokens), 0),"
            " (SELECT COUNT(*) FROM pins p WHERE p.channel_key = c.channel_key),"
            " MAX(m.created_at)"
            " FROM conversations c LEFT JOIN messages m ON m.conversation = c.key"
            " GROUP BY c.key, c.channel_key ORDER BY c.key"
        )
        return [ConversationInfo(str(r[0]), int(r[1]), int(r[2]), int(r[3]), r[4]) for r in rows]

    async def known_keys(self) -> set[str]:
        rows = await self._rows(
            "SELECT key FROM conversations UNION SELECT channel_key FROM pins"
            " UNION SELECT scope FROM settings UNION SELECT scope FROM setting_changes"
        )
        return {str(row[0]) for row in rows}

    async def claim_request(self, *, request_id: str, keep_seconds: float) -> bool:
        now = time.time()
        async with self._transaction() as db:
            await db.execute(
                "DELETE FROM handled_requests WHERE handled_at < $1", now - keep_seconds
            )
            claimed = await db.fetchval(
                "INSERT INTO handled_requests (request_id, handled_at) VALUES ($1, $2)"
                " ON CONFLICT DO NOTHING RETURNING true",
                request_id,
                now,
            )
        return bool(claimed)

    async def get_meta(self, *, key: str) -> str | None:
        value = await self._pool.fetchval("SELECT value FROM meta WHERE key = $1", key)
        return str(value) if value is not None else None

    async def set_meta(self, *, key: str, value: str) -> None:
        await self._write(
            "INSERT INTO meta (key, value) VALUES ($1, $2)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            key,
            text(value),
        )

    async def meta_once(self, *, key: str, value: str) -> str:
        await self._write(
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            key,
            text(value),
        )
        kept = await self.get_meta(key=key)
        return value if kept is None else kept

    async def retokenize(self, *, count: Callable[[str], int]) -> int:
        """Recount every stored token count (after the chat model's encoding changed)."""
        async with self._transaction() as db:
            rows = await db.fetch("SELECT id, role, author_name, content FROM messages")
            await db.executemany(
                "UPDATE messages SET tokens = $1 WHERE id = $2",
                [(count(render_content(Role(r[1]), r[2], r[3])), r[0]) for r in rows],
            )
            for table, column in (
                ("pins", "text"),
                ("summaries", "content"),
                ("profile_facts", "text"),
            ):
                texts = await db.fetch(f"SELECT id, {column} FROM {table}")  # noqa: S608
                await db.executemany(
                    f"UPDATE {table} SET tokens = $1 WHERE id = $2",  # noqa: S608
                    [(count(r[1]), r[0]) for r in texts],
                )
        return len(rows)

    async def backup(
        self, *, target: Path, pages: Callable[[int, int], None] = lambda done, total: None
    ) -> None:
        raise BackupError(
            f"{self.path} is a PostgreSQL database: back it up with PostgreSQL's own tools"
            f" (pg_dump -Fc -f {target} <database url>), or export it with `bot export`"
        )

    async def export_records(self, *, channel_key: str | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        await self.export_each(channel_key=channel_key, write=found.extend)
        return found

    async def export_each(
        self,
        *,
        channel_key: str | None,
        write: Callable[[list[dict[str, Any]]], None],
        sized: Callable[[int], None] = lambda total: None,
    ) -> int:
        async with self._pool.acquire() as db:
            return await records.export_each(db, channel_key=channel_key, write=write, sized=sized)

    async def import_records(
        self,
        *,
        records: list[dict[str, Any]],
        advance: Callable[[int], None] = lambda count: None,
    ) -> archive.Imported:
        """Import an export (as :func:`bot.store.archive.import_records` does into SQLite);
        the imported messages enter the search index in the same transaction, where recall
        is on."""
        async with self._writing(), self._pool.acquire() as db:
            return await _import(db, records, advance, index=self._index)

    async def health_problem(self) -> str | None:
        """Why the database is not fit to keep messages right now, or None."""
        if self.write_failure is not None:
            return f"cannot write: {self.write_failure}"
        if not await self.ping():
            return "does not answer"
        return None

    async def ping(self) -> bool:
        try:
            await self._pool.fetchval("SELECT 1 FROM meta LIMIT 1")
        except Exception:
            return False
        return True

    async def synchronous(self) -> str:
        """``off`` when commits return before they reach the disk (``synchronous_commit``
        off), else ``full``."""
        value = await self._pool.fetchval("SHOW synchronous_commit")
        return "off" if value == "off" else "full"

    async def integrity_check(self) -> str:
        """``ok`` when the schema is this version's and the database answers a query."""
        async with self._pool.acquire() as db:
            found = await schema.version(db)
            await db.fetchval("SELECT COUNT(*) FROM meta")
        if found != schema.SCHEMA_VERSION:
            return f"schema version {found}, expected {schema.SCHEMA_VERSION}"
        return "ok"

    async def connections(self) -> tuple[int, int] | None:
        """Connections of the pool in use, and the most it opens."""
        size, idle = self._pool.get_size(), self._pool.get_idle_size()
        return size - idle, self._pool.get_max_size()


_import = records.import_records
