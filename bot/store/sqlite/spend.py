"""The ledger of model calls (``model_calls``), summed by model or by UTC day."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.ports.spend import ModelCall, Spend, SpendLine
from bot.store.spend_sql import CALL_COLUMNS, SUMS, call_row, sums, where
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.usage import ADD_USAGE

_DAY = "strftime('%Y-%m-%d', at, 'unixepoch')"
"""A call's UTC day."""
_MARKS = ", ".join("?" for _ in CALL_COLUMNS.split(","))


def _mark(_: int) -> str:
    return "?"


class Ledger(Connection):
    async def record_call(self, *, call: ModelCall) -> None:
        """The call and its conversation's totals, in one transaction."""
        async with self._transaction():
            await self._db.execute(
                f"INSERT INTO model_calls ({CALL_COLUMNS}) VALUES ({_MARKS})",  # noqa: S608
                call_row(call),
            )
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
        condition, params = where(
            _mark,
            since=since,
            until=until,
            channel_key=channel_key,
            workspace=workspace,
            person=person,
        )
        rows = await self._rows(
            f"SELECT model, {SUMS} FROM model_calls{condition}"  # noqa: S608
            " GROUP BY model ORDER BY model",
            params,
        )
        return [Spend(model, *sums(counts)) for model, *counts in rows]

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
