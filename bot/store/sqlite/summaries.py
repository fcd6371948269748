"""Each conversation's rolling summaries (the latest is the one in use)."""

from __future__ import annotations

import time

from bot.core.models import Summary
from bot.core.ports.store import NewSummary
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.rows import SUMMARY_COLUMNS, summary

LATEST_SUMMARY = (
    f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation = ?"  # noqa: S608
    " ORDER BY id DESC LIMIT 1"
)


class Summaries(Connection):
    async def latest_summary(self, *, conversation_key: str) -> Summary | None:
        rows = await self._rows(LATEST_SUMMARY, (conversation_key,))
        return next((summary(row) for row in rows), None)

    async def save_summary(
        self, summary: NewSummary, *, generation: int, previous_id: int | None
    ) -> Summary | None:
        created_at = time.time()
        key = summary.conversation_key
        async with self._transaction():
            current = await self._rows("SELECT generation FROM conversations WHERE key = ?", (key,))
            latest = await self._rows(
                "SELECT id FROM summaries WHERE conversation = ? ORDER BY id DESC LIMIT 1",
                (key,),
            )
            if (
                next((row[0] for row in current), 0) != generation
                or next((row[0] for row in latest), None) != previous_id
            ):
                return None
            row = await self._db.execute_insert(
                "INSERT INTO summaries (conversation, content, tokens, covers_through_turn,"
                " message_count, first_message_id, last_message_id, compactions, rebuilt,"
                " model, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    summary.content,
                    summary.tokens,
                    summary.covers_through_turn,
                    summary.message_count,
                    summary.first_message_id,
                    summary.last_message_id,
                    summary.compactions,
                    int(summary.rebuilt),
                    summary.model,
                    created_at,
                ),
            )
        assert row is not None
        return Summary(
            id=int(row[0]),
            conversation_key=key,
            content=summary.content,
            tokens=summary.tokens,
            covers_through_turn=summary.covers_through_turn,
            message_count=summary.message_count,
            first_message_id=summary.first_message_id,
            last_message_id=summary.last_message_id,
            compactions=summary.compactions,
            rebuilt=summary.rebuilt,
            model=summary.model,
            created_at=created_at,
        )
