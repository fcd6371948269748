"""What SQLite's and PostgreSQL's ledgers (``model_calls``) share: a call's row and the
conditions a sum filters by."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bot.core.ports.spend import ModelCall

CALL_COLUMNS = (
    "at, conversation, channel_key, workspace, person, model, purpose,"
    " prompt_tokens, cached_tokens, completion_tokens, cost, estimated"
)
SUMS = "COUNT(*), SUM(prompt_tokens), SUM(cached_tokens), SUM(completion_tokens), SUM(cost)"
"""Requests, prompt, cached and completion tokens, cost: a ``Spend``'s after its model."""


def sums(row: Sequence[Any]) -> tuple[int, int, int, int, float]:
    """The :data:`SUMS` of a row as Python numbers (PostgreSQL sums integers as numeric)."""
    requests, prompt, cached, completion, cost = row
    return int(requests), int(prompt), int(cached), int(completion), float(cost)


def call_row(call: ModelCall) -> tuple[Any, ...]:
    """The values of :data:`CALL_COLUMNS`; a call made for no conversation has '' for its
    conversation, channel and workspace."""
    held = call.conversation
    return (
        float(call.at),
        held.key if held is not None else "",
        held.channel_key if held is not None else "",
        f"{held.platform}:{held.workspace}" if held is not None else "",
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
