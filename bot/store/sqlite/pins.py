"""A channel's pins."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.models import Pin
from bot.store.sqlite.connection import Connection

PINS = (
    "SELECT id, channel_key, text, tokens, author_name, created_at, author_id FROM pins"
    " WHERE channel_key = ? ORDER BY id"
)


class Pins(Connection):
    async def add_pin(
        self, *, channel_key: str, text: str, tokens: int, author_id: str, author_name: str
    ) -> Pin:
        created_at = time.time()
        async with self._writing():
            row = await self._db.execute_insert(
                "INSERT INTO pins (channel_key, text, tokens, author_id, author_name, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (channel_key, text, tokens, author_id, author_name, created_at),
            )
        assert row is not None
        return Pin(int(row[0]), channel_key, text, tokens, author_name, created_at, author_id)

    async def remove_pin(self, *, channel_key: str, pin_id: int) -> bool:
        changed = await self._write(
            "DELETE FROM pins WHERE channel_key = ? AND id = ?", (channel_key, pin_id)
        )
        return changed > 0

    async def pins(self, *, channel_key: str) -> Sequence[Pin]:
        rows = await self._rows(PINS, (channel_key,))
        return [Pin(*row) for row in rows]
