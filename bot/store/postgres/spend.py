"""The ledger of model calls (``model_calls``), summed by model or by UTC day."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.ports.spend import ModelCall, Spend, SpendLine
from bot.store.postgres.connection import Connection, text
from bot.store.postgres.usage import ADD_USAGE
from bot.store.spend_sql import (
    CALL_COLUMNS,
    POSTGRES_PICOS,
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

_MARKS = ", ".join(f"${n}" for n in range(1, len(CALL_COLUMNS.split(",")) + 1))
_ADD_TO_ROLLUP = add_to_rollup([f"${n}" for n in range(1, 10)], POSTGRES_PICOS)
_SPEND_SUMS = spend_sums(POSTGRES_PICOS)
_DAY = "to_char(to_timestamp(at) AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
"""A call's UTC day."""
_C = ' COLLATE "C"'
"""Text sorted by code point, as SQLite and Python sort it."""


def _mark(n: int) -> str:
    return f"${n}"


class Ledger(Connection):
    async def record_call(self, *, call: ModelCall) -> None:
        """The call, its rollups and its conversation's totals, in one transaction."""
        row = tuple(text(value) if isinstance(value, str) else value for value in call_row(call))
        async with self._transaction() as db:
            await db.execute(
                f"INSERT INTO model_calls ({CALL_COLUMNS}) VALUES ({_MARKS})",  # noqa: S608
                *row,
            )
            rollups = [
                tuple(text(v) if isinstance(v, str) else v for v in r) for r in rollup_rows(call)
            ]
            if rollups:
                await db.executemany(_ADD_TO_ROLLUP, rollups)
            if call.conversation is not None:
                await db.execute(
                    ADD_USAGE,
                    text(call.conversation.key),
                    text(call.model),
                    text(call.purpose),
                    call.prompt_tokens,
                    call.completion_tokens,
                    int(call.estimated),
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
        rows = await self._rows(f"{sql} ORDER BY model{_C}", *params)
        return [Spend(row[0], *spent(row[1:])) for row in rows]

    async def spend_lines(
        self, *, since: float | None, until: float | None, channel_key: str | None = None
    ) -> Sequence[SpendLine]:
        condition, params = where(_mark, since=since, until=until, channel_key=channel_key)
        rows = await self._rows(
            f"SELECT {_DAY} AS day, conversation, model, purpose, {SUMS}"  # noqa: S608
            f" FROM model_calls{condition} GROUP BY day, conversation, model, purpose"
            f" ORDER BY day, conversation{_C}, model{_C}, purpose{_C}",
            *params,
        )
        return [SpendLine(row[0], row[1], row[2], row[3], *sums(row[4:])) for row in rows]
