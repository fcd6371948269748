"""The prompt log (``prompt_log``): each channel's latest prompts; and the summaries' history."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.models import Summary
from bot.core.ports.prompts import PromptRecord
from bot.store.postgres.connection import Connection, text
from bot.store.prompt_log_sql import PROMPT_COLUMNS, prompt_record, prompt_row, trim
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

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        rows = await self._rows(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation = $1"  # noqa: S608
            " ORDER BY id DESC LIMIT $2",
            conversation_key,
            limit,
        )
        return [summary(row) for row in rows]
