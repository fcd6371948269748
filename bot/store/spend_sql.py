"""What SQLite's and PostgreSQL's ledgers share: a call's row (``model_calls``), the
conditions a sum filters by, and the daily rollups (``spend_days``) that budgets read.

The rollups hold, per scope (a channel, a workspace, a person in a workspace), UTC day and
model, the calls' sums; each call adds to its rows in the transaction that keeps it, and the
migration that made the table filled it from the calls already kept. A sum over whole days of
one scope reads at most a row per day and model, however many calls were made. Costs are summed
as whole picodollars (millionths of a millionth): integer sums do not depend on the order the
calls are added in, so a sum read from the rollups equals one read from the calls."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from bot.core.ports.spend import ModelCall

DAY = 86400

CALL_COLUMNS = (
    "at, conversation, channel_key, workspace, person, model, purpose,"
    " prompt_tokens, cached_tokens, completion_tokens, cost, estimated"
)
SUMS = "COUNT(*), SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens), SUM(cost)"
"""Requests, prompt, cached and completion tokens, cost: a ``Spend``'s after its model."""
SQLITE_PICOS = "CAST({} * 1e12 + 0.5 AS INTEGER)"
POSTGRES_PICOS = "trunc({} * 1e12::float8 + 0.5::float8)::bigint"
"""A cost in whole picodollars, as :func:`picos` rounds it (the same float arithmetic)."""
SQLITE_DAY = (
    "(CAST({0} / 86400 AS INTEGER) - (CAST({0} / 86400 AS INTEGER) * 86400.0 > {0})) * 86400"
)
POSTGRES_DAY = "(floor({0} / 86400) - (floor({0} / 86400) * 86400 > {0})::int)::bigint * 86400"
"""The start of the UTC day holding a time, as :func:`day_of` says (the division may round
up to the next whole day; a day that starts after the time is the next one)."""


def picos(cost: float) -> int:
    """``cost`` in whole picodollars (costs are not negative)."""
    return int(cost * 1e12 + 0.5)


def day_of(at: float) -> int:
    """The start of the UTC day holding ``at`` (a time at midnight starts its day)."""
    return int(at // DAY) * DAY


def sums(row: Sequence[Any]) -> tuple[int, int, int, int, float]:
    """The :data:`SUMS` of a row as Python numbers (PostgreSQL sums integers as numeric)."""
    requests, prompt, cached, completion, cost = row
    return int(requests), int(prompt), int(cached), int(completion), float(cost)


def spend_sums(picos: str) -> str:
    """A sum of calls as a ``Spend``'s after its model, costs in picodollars (``picos``:
    :data:`SQLITE_PICOS` or :data:`POSTGRES_PICOS`)."""
    return SUMS.replace("SUM(cost)", f"SUM({picos.format('cost')})")


def spent(row: Sequence[Any]) -> tuple[int, int, int, int, float]:
    """The sums of :func:`spend_sums` (or of rollups) as Python numbers, cost in dollars."""
    requests, prompt, cached, completion, cost = row
    return int(requests), int(prompt), int(cached), int(completion), int(cost) / 1e12


def call_row(call: ModelCall) -> tuple[Any, ...]:
    """The values of :data:`CALL_COLUMNS`; a call made for no conversation has '' for its
    conversation, channel and workspace."""
    held = call.conversation
    return (
        float(call.at),
        held.key if held is not None else "",
        held.channel_key if held is not None else "",
        held.workspace_scope if held is not None else "",
        call.person,
        call.model,
        call.purpose,
        call.prompt_tokens,
        call.cached_tokens,
        call.completion_tokens,
        float(call.cost),
        int(call.estimated),
    )


def where(
    mark: Callable[[int], str],
    *,
    since: float | None,
    until: float | None,
    channel_key: str | None = None,
    workspace: str | None = None,
    person: str | None = None,
) -> tuple[str, list[Any]]:
    """`` WHERE ...`` (or '') for the calls in [since, until) matching each filter given,
    and its parameters; ``mark(n)`` spells the n-th parameter (``?``, ``$n``)."""
    conditions: list[str] = []
    params: list[Any] = []
    for condition, value in (
        ("channel_key = {}", channel_key),
        ("workspace = {}", workspace),
        ("person = {}", person),
        ("at >= {}", None if since is None else float(since)),
        ("at < {}", None if until is None else float(until)),
    ):
        if value is not None:
            params.append(value)
            conditions.append(condition.format(mark(len(params))))
    return (" WHERE " + " AND ".join(conditions) if conditions else ""), params


ROLLUP_COLUMNS = (
    "kind, key, person, day, model, requests, prompt_tokens, cached_tokens, completion_tokens, cost"
)
_ADDED = ("requests", "prompt_tokens", "cached_tokens", "completion_tokens", "cost")


def add_to_rollup(marks: Sequence[str], picos: str) -> str:
    """The statement adding a call to one rollup row, of the values of :func:`rollup_rows`
    (``marks``: the nine parameters' spellings)."""
    *scope, cost = marks
    values = ", ".join([*scope[:5], "1", *scope[5:], picos.format(cost)])
    added = ", ".join(f"{c} = spend_days.{c} + excluded.{c}" for c in _ADDED)
    return (
        f"INSERT INTO spend_days ({ROLLUP_COLUMNS}) VALUES ({values})"  # noqa: S608
        f" ON CONFLICT (kind, key, person, day, model) DO UPDATE SET {added}"
    )


def rollup_rows(call: ModelCall) -> list[tuple[Any, ...]]:
    """The rollup rows a call adds to (none for a call made for no conversation; no person's
    for one made for no one): kind, key, person, day, model, tokens and cost."""
    held = call.conversation
    if held is None:
        return []
    workspace = held.workspace_scope
    scopes = [("channel", held.channel_key, ""), ("workspace", workspace, "")]
    if call.person:
        scopes.append(("person", workspace, call.person))
    added = (call.prompt_tokens, call.cached_tokens, call.completion_tokens, float(call.cost))
    return [(*scope, day_of(call.at), call.model, *added) for scope in scopes]


def rollup_scope(
    *,
    since: float | None,
    until: float | None,
    channel_key: str | None,
    workspace: str | None,
    person: str | None,
) -> tuple[str, str, str] | None:
    """The rollup rows' kind, key and person answering a sum, when they can: of one channel,
    workspace or person in a workspace, over whole UTC days; else None (the calls are read)."""
    for bound in (since, until):
        if bound is not None and not (math.isfinite(bound) and bound == day_of(bound)):
            return None
    if channel_key and workspace is None and person is None:
        return ("channel", channel_key, "")
    if workspace and channel_key is None and person is None:
        return ("workspace", workspace, "")
    if workspace and channel_key is None and person:
        return ("person", workspace, person)
    return None


def rollup_sum(
    mark: Callable[[int], str],
    scope: tuple[str, str, str],
    *,
    since: float | None,
    until: float | None,
) -> tuple[str, list[Any]]:
    """The rollups of ``scope`` over [since, until) summed by model (the caller orders them),
    and its parameters."""
    params: list[Any] = list(scope)
    conditions = [f"{column} = {mark(n)}" for n, column in enumerate(("kind", "key", "person"), 1)]
    for condition, bound in (("day >= {}", since), ("day < {}", until)):
        if bound is not None:
            params.append(int(bound))
            conditions.append(condition.format(mark(len(params))))
    summed = ", ".join(f"SUM({column})" for column in _ADDED)
    return (
        f"SELECT model, {summed} FROM spend_days WHERE {' AND '.join(conditions)}"  # noqa: S608
        " GROUP BY model",
        params,
    )


def backfill(day: str, picos: str) -> str:
    """The statements filling the rollups from the calls kept (``day``: :data:`SQLITE_DAY` or
    :data:`POSTGRES_DAY`; ``picos``: the same dialect's). A migration's text: changed, it
    needs a new migration."""
    summed = (
        f"{day.format('at')}, model, COUNT(*), SUM(prompt_tokens), SUM(cached_tokens),"
        f" SUM(completion_tokens), SUM({picos.format('cost')})"
    )
    grouped = f"{day.format('at')}, model"
    return "".join(
        f"INSERT INTO spend_days ({ROLLUP_COLUMNS}) SELECT {scope}, {summed} FROM model_calls"  # noqa: S608
        f" WHERE conversation <> ''{where} GROUP BY {by}, {grouped};\n"
        for scope, where, by in (
            ("'channel', channel_key, ''", "", "channel_key"),
            ("'workspace', workspace, ''", "", "workspace"),
            ("'person', workspace, person", " AND person <> ''", "workspace, person"),
        )
    )
