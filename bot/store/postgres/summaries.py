"""Each conversation's rolling summaries (the latest is the one in use)."""

from __future__ import annotations

import time

from bot.core.models import Summary
from bot.core.ports.store import NewSummary
from bot.store.postgres.connection import Connection, text
from bot.store.sqlite.rows import SUMMARY_COLUMNS, summary

LATEST_SUMMARY = (
    f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation = $1"  # noqa: S608
    " ORDER BY id DESC LIMIT 1"
)
_INSERT = (
    "INSERT INTO summaries (conversation, content, tokens, covers_through_turn,"
    " message_count, first_message_id, last_message_id, compactions, rebuilt,"
    " model, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id"
)


class Summaries(Connection):
    async def latest_summary(self, *, conversation_key: str) -> Summary | None:
        rows = await self._rows(LATEST_SUMMARY, conversation_key)
        return next((summary(row) for row in rows), None)

    async def save_summary(
        self, *, summary: NewSummary, generation: int, previous_id: int | None
    ) -> Summary | None:
        """Refused when the conversation was reset or summarised meanwhile, by this process
        or another: the conversation's row is held while that is checked."""
        created_at = time.time()
        key = summary.conversation_key
        content = text(summary.content)
        async with self._transaction() as db:
            current = await self._lock_conversation(db, key)
            if current is None:  # no row to hold: hold the key instead
                await db.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key)
            latest = await db.fetchval(
                "SELECT id FROM summaries WHERE conversation = $1 ORDER BY id DESC LIMIT 1", key
            )
            if (current or 0) != generation or latest != previous_id:
                return None
            new_id = await db.fetchval(
                _INSERT,
                key,
                content,
                summary.tokens,
                summary.covers_through_turn,
                summary.message_count,
                summary.first_message_id,
                summary.last_message_id,
                summary.compactions,
                int(summary.rebuilt),
                summary.model,
                created_at,
            )
        return Summary(
            id=int(new_id),
            conversation_key=key,
            content=content,
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
