"""The prompt log (``prompt_log``): each channel's latest prompts; and the summaries' history."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.models import Summary
from bot.core.ports.prompts import PromptRecord
from bot.store.prompt_log_sql import PROMPT_COLUMNS, prompt_record, prompt_row, trim
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

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        rows = await self._rows(
            f"SELECT {SUMMARY_COLUMNS} FROM summaries WHERE conversation = ?"  # noqa: S608
            " ORDER BY id DESC LIMIT ?",
            (conversation_key, limit),
        )
        return [summary(row) for row in rows]
