"""The ledger of model calls, in memory: kept in order, summed on demand."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

from bot.core.ports.spend import ModelCall, Spend, SpendLine
from bot.store.memory.tables import Tables
from bot.store.spend_sql import picos


def _channel(call: ModelCall) -> str:
    return call.conversation.channel_key if call.conversation is not None else ""


def _workspace(call: ModelCall) -> str:
    held = call.conversation
    return held.workspace_scope if held is not None else ""


def _day(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d")


def _sums(calls: Sequence[ModelCall]) -> tuple[int, int, int, int, float]:
    """Requests, prompt, cached and completion tokens, and cost (summed without the rounding
    error adding floats one by one would pile up)."""
    return (
        len(calls),
        sum(call.prompt_tokens for call in calls),
        sum(call.cached_tokens for call in calls),
        sum(call.completion_tokens for call in calls),
        math.fsum(call.cost for call in calls),
    )


def _spent(calls: Sequence[ModelCall]) -> tuple[int, int, int, int, float]:
    """:func:`_sums` with the cost summed in whole picodollars, as the other stores sum it."""
    requests, prompt, cached, completion, _ = _sums(calls)
    return requests, prompt, cached, completion, sum(picos(call.cost) for call in calls) / 1e12


class Ledger(Tables):
    """The :class:`bot.core.ports.spend.Ledger` part of the in-memory store."""

    async def record_call(self, *, call: ModelCall) -> None:
        self.calls.append(call)
        if call.conversation is not None:
            self.add_usage(
                call.conversation.key,
                call.model,
                call.purpose,
                call.prompt_tokens,
                call.completion_tokens,
                call.estimated,
            )

    def _calls(
        self,
        since: float | None,
        until: float | None,
        channel_key: str | None,
        workspace: str | None = None,
        person: str | None = None,
    ) -> Iterable[ModelCall]:
        """The calls in [since, until) matching every filter given."""
        for call in self.calls:
            if (since is not None and call.at < since) or (until is not None and call.at >= until):
                continue
            if channel_key is not None and _channel(call) != channel_key:
                continue
            if workspace is not None and _workspace(call) != workspace:
                continue
            if person is not None and call.person != person:
                continue
            yield call

    async def spend(
        self,
        *,
        since: float | None,
        until: float | None,
        channel_key: str | None = None,
        workspace: str | None = None,
        person: str | None = None,
    ) -> Sequence[Spend]:
        by_model: dict[str, list[ModelCall]] = {}
        for call in self._calls(since, until, channel_key, workspace, person):
            by_model.setdefault(call.model, []).append(call)
        return [Spend(model, *_spent(calls)) for model, calls in sorted(by_model.items())]

    async def spend_lines(
        self, *, since: float | None, until: float | None, channel_key: str | None = None
    ) -> Sequence[SpendLine]:
        groups: dict[tuple[str, str, str, str], list[ModelCall]] = {}
        for call in self._calls(since, until, channel_key):
            key = call.conversation.key if call.conversation is not None else ""
            groups.setdefault((_day(call.at), key, call.model, call.purpose), []).append(call)
        return [
            SpendLine(day, key, model, purpose, *_sums(calls))
            for (day, key, model, purpose), calls in sorted(groups.items())
        ]
