"""Messages' embedding vectors, for recall by meaning (dropped with the message, or by a
plain SQL trigger when its text changes)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.store.sqlite.connection import Connection


class Vectors(Connection):
    async def save_vector(
        self, *, message_id: int, content: str, model: str, vector: bytes
    ) -> bool:
        """Store a message's embedding, unless the message is gone or its text changed."""
        changed = await self._write(
            "INSERT OR REPLACE INTO message_vectors (message_id, model, vector)"
            " SELECT id, ?, ? FROM messages WHERE id = ? AND content = ?",
            (model, vector, message_id, content),
        )
        return changed > 0

    async def unembedded(
        self, *, before_id: int | None, model: str, limit: int
    ) -> Sequence[tuple[int, str]]:
        """``(id, content)`` of the newest messages (of any conversation) before ``before_id``
        without a ``model`` vector."""
        rows = await self._rows(
            "SELECT m.id, m.content FROM messages m WHERE m.id < ? AND NOT EXISTS"
            " (SELECT 1 FROM message_vectors v WHERE v.message_id = m.id AND v.model = ?)"
            " ORDER BY m.id DESC LIMIT ?",
            (before_id if before_id is not None else 2**63 - 1, model, limit),
        )
        return [(int(row[0]), str(row[1])) for row in rows]

    async def vector(self, *, message_id: int, model: str) -> bytes | None:
        rows = await self._rows(
            "SELECT vector FROM message_vectors WHERE message_id = ? AND model = ?",
            (message_id, model),
        )
        return next((bytes(row[0]) for row in rows), None)

    async def vectors(
        self, *, conversation_key: str, before_id: int, model: str, limit: int
    ) -> Sequence[tuple[int, bytes]]:
        """``(message id, vector)`` of the newest ``limit`` embedded messages before
        ``before_id``."""
        rows = await self._rows(
            "SELECT m.id, v.vector FROM messages m JOIN message_vectors v ON v.message_id = m.id"
            " WHERE m.conversation = ? AND m.id < ? AND v.model = ? ORDER BY m.id DESC LIMIT ?",
            (conversation_key, before_id, model, limit),
        )
        return [(int(row[0]), bytes(row[1])) for row in rows]
