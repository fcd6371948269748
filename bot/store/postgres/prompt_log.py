"""The prompt log (``prompt_log``): each channel's latest prompts; and the summaries' history."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.models import Conversation, Person, StoredMessage, Summary
from bot.core.ports.prompts import PromptRecord
from bot.store.postgres.connection import Connection, changed, text
from bot.store.prompt_log_sql import (
    PROMPT_COLUMNS,
    prompt_record,
    prompt_row,
    recall_needle,
    trim,
)
from bot.store.sqlite.rows import SUMMARY_COLUMNS, summary

_INSERT = (
    f"INSERT INTO prompt_log ({PROMPT_COLUMNS})"  # noqa: S608
    f" VALUES ({', '.join(f'${n}' for n in range(1, len(PROMPT_COLUMNS.split(',')) + 1))})"
)
_TRIM = trim(lambda n: f"${n}")


class PromptLog(Connection):
    async def log_prompt(self, *, record: PromptRecord, keep: int) -> None:
        row = tuple(
            text(value) if isinstance(value, str) else value for value in prompt_row(record)
        )
        async with self._transaction() as db:
            await db.execute(_INSERT, *row)
            await db.execute(_TRIM, record.channel_key, keep)

    async def logged_prompts(self, *, channel_key: str, limit: int) -> Sequence[PromptRecord]:
        rows = await self._rows(
            f"SELECT id, {PROMPT_COLUMNS} FROM prompt_log WHERE channel_key = $1"  # noqa: S608
            " ORDER BY id DESC LIMIT $2",
            channel_key,
            limit,
        )
        return [prompt_record(tuple(row)) for row in rows]

    async def forget_prompts(self, *, person: Person) -> int:
        return await self._write(
            "DELETE FROM prompt_log WHERE person = $1 AND starts_with(channel_key, $2)",
            text(person.user_id),
            f"{person.platform}:{person.workspace}:",
        )

    async def drop_prompts(
        self, *, conversation: Conversation, message: StoredMessage, group: bool
    ) -> int:
        async with self._transaction() as db:
            dropped = changed(
                await db.execute(
                    "DELETE FROM prompt_log WHERE channel_key = $1"
                    " AND (question_id >= $2 OR at >= $3)",
                    conversation.channel_key,
                    message.id,
                    float(message.created_at),
                )
            )
            if group:
                dropped += changed(
                    await db.execute(
                        "DELETE FROM prompt_log WHERE starts_with(channel_key, $1)"
                        " AND strpos(recall, $2) > 0",
                        conversation.workspace_prefix,
                        recall_needle(conversation.key, message.id),
                    )
                )
        return dropped

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        rows = await self._rows(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation = $1"  # noqa: S608
            " ORDER BY id DESC LIMIT $2",
            conversation_key,
            limit,
        )
        return [summary(row) for row in rows]
