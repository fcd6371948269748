"""A channel's pins, and its workspace's (kept under ``Conversation.workspace_key``)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.models import Pin
from bot.store.postgres.connection import Connection, text

PINS = (
    "SELECT id, channel_key, text, tokens, author_name, created_at, author_id FROM pins"
    " WHERE channel_key = $1 ORDER BY id"
)
PINS_OF = (
    "SELECT id, channel_key, text, tokens, author_name, created_at, author_id FROM pins"
    " WHERE channel_key = ANY($1::text[]) ORDER BY id"
)
"""The pins of several channel keys (a channel's and its workspace's)."""


class Pins(Connection):
    async def add_pin(
        self, *, channel_key: str, text: str, tokens: int, author_id: str, author_name: str
    ) -> Pin:
        created_at = time.time()
        body, name = _clean(text), _clean(author_name)
        async with self._writing():
            new_id = await self._pool.fetchval(
                "INSERT INTO pins (channel_key, text, tokens, author_id, author_name, created_at)"
                " VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                channel_key,
                body,
                tokens,
                author_id,
                name,
                created_at,
            )
        return Pin(int(new_id), channel_key, body, tokens, name, created_at, author_id)

    async def remove_pin(self, *, channel_key: str, pin_id: int) -> bool:
        count = await self._write(
            "DELETE FROM pins WHERE channel_key = $1 AND id = $2", channel_key, pin_id
        )
        return count > 0

    async def pins(self, *, channel_key: str) -> Sequence[Pin]:
        rows = await self._rows(PINS, channel_key)
        return [Pin(*row) for row in rows]


_clean = text  # ``add_pin``'s parameter named ``text`` hides the function
