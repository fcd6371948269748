"""Leases and the messages awaiting an answer (:class:`bot.core.ports.store.LeaseStore`).

Times come from SQLite's clock, the one clock every process on the file shares.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from bot.core.ports.leases import Awaiting
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.rows import MESSAGE_COLUMNS_M, message

NOW = "((julianday('now') - 2440587.5) * 86400.0)"
"""The database's time, in seconds since the epoch."""

_TAKE = (
    "INSERT INTO leases (name, holder, expires_at)"  # noqa: S608 (a constant expression)
    f" VALUES (:name, :holder, {NOW} + :seconds)"
    " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at"
    f" WHERE leases.holder = excluded.holder OR leases.expires_at <= {NOW}"
)
_ORPHANS = (
    "SELECT a.message_id FROM awaiting a"  # noqa: S608 (a constant expression)
    " LEFT JOIN leases l ON l.name = 'process:' || a.holder"
    f" WHERE a.platform = :platform AND a.holder != :holder"
    f" AND (l.name IS NULL OR l.expires_at <= {NOW})"
    " ORDER BY a.message_id LIMIT :limit"
)
_ADOPTED = (
    f"SELECT a.conversation, a.queued_at, a.shown_as, {MESSAGE_COLUMNS_M}"  # noqa: S608
    " FROM awaiting a"
    " JOIN messages m ON m.id = a.message_id"
    " WHERE a.message_id IN (SELECT value FROM json_each(:ids)) ORDER BY a.message_id"
)
_ANSWERS = (
    f"SELECT m.reply_to, {MESSAGE_COLUMNS_M} FROM messages m"  # noqa: S608
    " WHERE m.reply_to IN (SELECT value FROM json_each(:ids)) AND m.role = 'assistant'"
    " ORDER BY m.id"
)


class Leases(Connection):
    async def take_lease(self, *, name: str, holder: str, seconds: float) -> bool:
        params = {"name": name, "holder": holder, "seconds": float(seconds)}
        return await self._write(_TAKE, params, tracked=False) > 0

    async def drop_lease(self, *, name: str, holder: str) -> None:
        await self._write(
            "DELETE FROM leases WHERE name = ? AND holder = ?", (name, holder), tracked=False
        )

    async def first_awaiting(self, *, conversation_key: str) -> int | None:
        rows = await self._rows(
            "SELECT MIN(message_id) FROM awaiting WHERE conversation = ?", (conversation_key,)
        )
        return None if not rows or rows[0][0] is None else int(rows[0][0])

    async def showing(self, *, stored_id: int, message_id: str) -> None:
        await self._write(
            "UPDATE awaiting SET shown_as = ? WHERE message_id = ?", (message_id, stored_id)
        )

    async def answered(self, *, stored_id: int) -> None:
        await self._write("DELETE FROM awaiting WHERE message_id = ?", (stored_id,))

    async def wait_answered(self, *, conversation_key: str, within: float) -> None:
        await asyncio.sleep(within)  # another process's answers are not announced

    async def adopt_awaiting(self, *, platform: str, holder: str, limit: int) -> Sequence[Awaiting]:
        params = {"platform": platform, "holder": holder, "limit": limit}
        async with self._transaction():
            ids = [int(row[0]) for row in await self._rows(_ORPHANS, params)]
            if not ids:
                return []
            listed = "[" + ",".join(map(str, ids)) + "]"
            await self._db.execute(
                "UPDATE awaiting SET holder = ? WHERE message_id IN"
                " (SELECT value FROM json_each(?))",
                (holder, listed),
            )
            rows = await self._rows(_ADOPTED, {"ids": listed})
            answers = {
                int(row[0]): message(row[1:]) for row in await self._rows(_ANSWERS, {"ids": listed})
            }
        return [
            Awaiting(str(row[0]), question, answers.get(question.id), float(row[1]), row[2])
            for row in rows
            if (question := message(row[3:]))
        ]
