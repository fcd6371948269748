"""Leases and the messages awaiting an answer (:class:`bot.core.ports.store.LeaseStore`).

Times come from the server's clock, the one clock every process on the database shares.
Adopting skips rows another process is adopting at that moment (``SKIP LOCKED``), so that two
processes sweeping at once take different messages.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.ports.leases import Awaiting
from bot.store.postgres.announce import CHANNEL
from bot.store.postgres.connection import Connection
from bot.store.sqlite.rows import MESSAGE_COLUMNS_M, message

NOW = "extract(epoch FROM clock_timestamp())::double precision"
"""The server's time, in seconds since the epoch."""

_TAKE = f"""
INSERT INTO leases (name, holder, expires_at) VALUES ($1, $2, {NOW} + $3)
ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
WHERE leases.holder = excluded.holder OR leases.expires_at <= {NOW}
RETURNING holder
"""  # noqa: S608 (a constant expression)
_ADOPT = f"""
WITH orphans AS (
    SELECT a.message_id FROM awaiting a
    WHERE a.platform = $1 AND a.holder != $2 AND NOT EXISTS (
        SELECT 1 FROM leases l WHERE l.name = 'process:' || a.holder AND l.expires_at > {NOW}
    )
    ORDER BY a.message_id LIMIT $3 FOR UPDATE SKIP LOCKED
)
UPDATE awaiting a SET holder = $2 FROM orphans o WHERE a.message_id = o.message_id
RETURNING a.message_id, a.conversation, a.queued_at, a.shown_as
"""  # noqa: S608 (a constant expression)
_ANSWERED = f"""
WITH gone AS (DELETE FROM awaiting WHERE message_id = $1 RETURNING conversation)
SELECT pg_notify('{CHANNEL}', conversation) FROM gone
"""  # noqa: S608 (a constant channel)
_QUESTIONS = (
    f"SELECT {MESSAGE_COLUMNS_M} FROM messages m"  # noqa: S608 (constant columns)
    " WHERE m.id = ANY($1::bigint[])"
)
_ANSWERS = (
    f"SELECT m.reply_to, {MESSAGE_COLUMNS_M} FROM messages m"  # noqa: S608 (constant columns)
    " WHERE m.reply_to = ANY($1::bigint[]) AND m.role = 'assistant' ORDER BY m.id DESC"
)


class Leases(Connection):
    async def take_lease(self, *, name: str, holder: str, seconds: float) -> bool:
        async with self._writing(tracked=False):
            taken = await self._pool.fetchval(_TAKE, name, holder, float(seconds))
        return taken is not None

    async def drop_lease(self, *, name: str, holder: str) -> None:
        await self._write(
            "DELETE FROM leases WHERE name = $1 AND holder = $2", name, holder, tracked=False
        )

    async def first_awaiting(self, *, conversation_key: str) -> int | None:
        value = await self._pool.fetchval(
            "SELECT MIN(message_id) FROM awaiting WHERE conversation = $1", conversation_key
        )
        return None if value is None else int(value)

    async def showing(self, *, stored_id: int, message_id: str) -> None:
        await self._write(
            "UPDATE awaiting SET shown_as = $1 WHERE message_id = $2", message_id, stored_id
        )

    async def answered(self, *, stored_id: int) -> None:
        await self._write(_ANSWERED, stored_id)

    async def wait_answered(self, *, conversation_key: str, within: float) -> None:
        await self.announcements.wait(conversation_key, within)

    async def adopt_awaiting(self, *, platform: str, holder: str, limit: int) -> Sequence[Awaiting]:
        async with self._transaction() as db:
            adopted = await db.fetch(_ADOPT, platform, holder, limit)
            if not adopted:
                return []
            ids = [int(row[0]) for row in adopted]
            questions = {row[0]: message(row) for row in await db.fetch(_QUESTIONS, ids)}
            answers = {int(row[0]): message(row[1:]) for row in await db.fetch(_ANSWERS, ids)}
        return [
            Awaiting(
                str(row[1]), questions[row[0]], answers.get(int(row[0])), float(row[2]), row[3]
            )
            for row in sorted(adopted, key=lambda row: int(row[0]))
        ]
