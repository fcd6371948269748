"""The ledger of model calls (``model_calls``), summed by model or by UTC day."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.ports.spend import ModelCall, Spend, SpendLine
from bot.store.spend_sql import (
    CALL_COLUMNS,
    SQLITE_PICOS,
    SUMS,
    add_to_rollup,
    call_row,
    rollup_rows,
    rollup_scope,
    rollup_sum,
    spend_sums,
    spent,
    sums,
    where,
)
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.usage import ADD_USAGE

_DAY = "strftime('%Y-%m-%d', at, 'unixepoch')"
"""A call's UTC day."""
_MARKS = ", ".join("?" for _ in CALL_COLUMNS.split(","))
_ADD_TO_ROLLUP = add_to_rollup(["?"] * 9, SQLITE_PICOS)
_SPEND_SUMS = spend_sums(SQLITE_PICOS)


def _mark(_: int) -> str:
    return "?"


class Ledger(Connection):
    async def record_call(self, *, call: ModelCall) -> None:
        """The call, its rollups and its conversation's totals, in one transaction."""
        async with self._transaction():
            await self._db.execute(
                f"INSERT INTO model_calls ({CALL_COLUMNS}) VALUES ({_MARKS})",  # noqa: S608
                call_row(call),
            )
            await self._db.executemany(_ADD_TO_ROLLUP, rollup_rows(call))
            if call.conversation is not None:
                await self._db.execute(
                    ADD_USAGE,
                    (
                        call.conversation.key,
                        call.model,
                        call.purpose,
                        call.prompt_tokens,
                        call.completion_tokens,
                        int(call.estimated),
                    ),
                )

    async def spend(
        self,
        *,
        since: float | None,
        until: float | None,
        channel_key: str | None = None,
        workspace: str | None = None,
        person: str | None = None,
    ) -> Sequence[Spend]:
        scope = {"channel_key": channel_key, "workspace": workspace, "person": person}
        rollup = rollup_scope(since=since, until=until, **scope)
        if rollup is not None:
            sql, params = rollup_sum(_mark, rollup, since=since, until=until)
        else:
            condition, params = where(_mark, since=since, until=until, **scope)
            sql = f"SELECT model, {_SPEND_SUMS} FROM model_calls{condition} GROUP BY model"  # noqa: S608
        rows = await self._rows(f"{sql} ORDER BY model", params)
        return [Spend(model, *spent(counts)) for model, *counts in rows]

    async def spend_lines(
        self, *, since: float | None, until: float | None, channel_key: str | None = None
    ) -> Sequence[SpendLine]:
        condition, params = where(_mark, since=since, until=until, channel_key=channel_key)
        rows = await self._rows(
            f"SELECT {_DAY} AS day, conversation, model, purpose, {SUMS}"  # noqa: S608
            f" FROM model_calls{condition} GROUP BY day, conversation, model, purpose"
            " ORDER BY day, conversation, model, purpose",
            params,
        )
        return [
            SpendLine(day, key, model, purpose, *sums(counts))
            for day, key, model, purpose, *counts in rows
        ]
