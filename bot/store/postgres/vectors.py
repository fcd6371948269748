"""Messages' embedding vectors, for recall by meaning (dropped with the message, and by the
edit that changes its text)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.postgres.connection import Connection


class Vectors(Connection):
    async def save_vector(
        self, *, message_id: int, content: str, model: str, vector: bytes
    ) -> bool:
        """Store a message's embedding, unless the message is gone or its text changed."""
        count = await self._write(
            "INSERT INTO message_vectors (message_id, model, vector)"
            " SELECT id, $1, $2 FROM messages WHERE id = $3 AND content = $4"
            " ON CONFLICT (message_id) DO UPDATE SET model = excluded.model,"
            " vector = excluded.vector",
            model,
            vector,
            message_id,
            content,
        )
        return count > 0

    async def unembedded(
        self, *, before_id: int | None, model: str, limit: int
    ) -> Sequence[tuple[int, str]]:
        rows = await self._rows(
            "SELECT m.id, m.content FROM messages m WHERE m.id < $1 AND NOT EXISTS"
            " (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = $2)"
            " ORDER BY m.id DESC LIMIT $3",
            before_id if before_id is not None else 2**63 - 1,
            model,
            limit,
        )
        return [(int(row[0]), str(row[1])) for row in rows]

    async def vector(self, *, message_id: int, model: str) -> bytes | None:
        value = await self._pool.fetchval(
            "SELECT vector FROM message_vectors WHERE message_id = $1 AND model = $2",
            message_id,
            model,
        )
        return bytes(value) if value is not None else None

    async def vectors(
        self, *, conversation_key: str, before_id: int, model: str, limit: int
    ) -> Sequence[tuple[int, bytes]]:
        rows = await self._rows(
            "SELECT m.id, v.vector FROM messages m JOIN message_vectors v ON v.message_id = m.id"
            " WHERE m.conversation = $1 AND m.id < $2 AND v.model = $3"
            " ORDER BY m.id DESC LIMIT $4",
            conversation_key,
            before_id,
            model,
            limit,
        )
        return [(int(row[0]), bytes(row[1])) for row in rows]
