"""The prompt log (``prompt_log``): each channel's latest prompts; and the summaries' history."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.models import Conversation, Person, StoredMessage, Summary
from bot.core.ports.prompts import PromptRecord
from bot.store.prompt_log_sql import (
    PROMPT_COLUMNS,
    prompt_record,
    prompt_row,
    recall_needle,
    trim,
)
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.rows import SUMMARY_COLUMNS, summary

_INSERT = (
    f"INSERT INTO prompt_log ({PROMPT_COLUMNS})"  # noqa: S608
    f" VALUES ({', '.join('?' for _ in PROMPT_COLUMNS.split(','))})"
)
_TRIM = trim(lambda n: f"?{n}")


class PromptLog(Connection):
    async def log_prompt(self, *, record: PromptRecord, keep: int) -> None:
        async with self._transaction():
            await self._db.execute(_INSERT, prompt_row(record))
            await self._db.execute(_TRIM, (record.channel_key, keep))

    async def logged_prompts(self, *, channel_key: str, limit: int) -> Sequence[PromptRecord]:
        rows = await self._rows(
            f"SELECT id, {PROMPT_COLUMNS} FROM prompt_log WHERE channel_key = ?"  # noqa: S608
            " ORDER BY id DESC LIMIT ?",
            (channel_key, limit),
        )
        return [prompt_record(row) for row in rows]

    async def forget_prompts(self, *, person: Person) -> int:
        prefix = f"{person.platform}:{person.workspace}:"
        return await self._write(
            "DELETE FROM prompt_log WHERE person = ? AND substr(channel_key, 1, ?) = ?",
            (person.user_id, len(prefix), prefix),
        )

    async def drop_prompts(
        self, *, conversation: Conversation, message: StoredMessage, group: bool
    ) -> int:
        async with self._transaction():
            cursor = await self._db.execute(
                "DELETE FROM prompt_log WHERE channel_key = ? AND (question_id >= ? OR at >= ?)",
                (conversation.channel_key, message.id, message.created_at),
            )
            dropped = cursor.rowcount
            if group:
                prefix = conversation.workspace_prefix
                cursor = await self._db.execute(
                    "DELETE FROM prompt_log WHERE substr(channel_key, 1, ?) = ?"
                    " AND instr(recall, ?) > 0",
                    (len(prefix), prefix, recall_needle(conversation.key, message.id)),
                )
                dropped += cursor.rowcount
        return dropped

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        rows = await self._rows(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation = ?"  # noqa: S608
            " ORDER BY id DESC LIMIT ?",
            (conversation_key, limit),
        )
        return [summary(row) for row in rows]
