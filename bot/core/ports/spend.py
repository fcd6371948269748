"""The ledger of model calls: every request to a model (answers, summaries, digests,
embeddings) with where it was made, for whom, on which model, its tokens and what it cost;
summed for ``/usage``, budgets and operators' reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.core.models import Conversation


@dataclass(frozen=True)
class ModelCall:
    """One request to a model, as the ledger keeps it."""

    at: float
    """When it was made, in seconds since the epoch."""
    conversation: Conversation | None
    """The conversation it was made for (None: for none, e.g. embedding a backlog)."""
    person: str
    """The platform user id of whom it was made for (the question's author, the caller of a
    command) in the conversation's workspace; "" for no one (summaries, embeddings)."""
    model: str
    purpose: str
    """chat, summary, digest or embedding."""
    prompt_tokens: int
    cached_tokens: int
    """Of ``prompt_tokens``, those the provider served from its prompt cache (billed less)."""
    completion_tokens: int
    cost: float
    """What it cost by the price table at the time of the call (0: free, or no price known)."""
    estimated: bool = False
    """The tokens were counted by the bot: the server said none."""


@dataclass(frozen=True)
class Spend:
    """Calls summed for one model."""

    model: str
    requests: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cost: float


@dataclass(frozen=True)
class SpendLine:
    """Calls summed for one UTC day, conversation, model and purpose (reports, charts)."""

    day: str
    """``2026-12-05``."""
    conversation_key: str
    """"" for calls made for no conversation."""
    model: str
    purpose: str
    requests: int
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    cost: float


class Ledger(Protocol):
    async def record_call(self, *, call: ModelCall) -> None:
        """Keep the call, and add it to its conversation's lifetime totals (``usage``)."""
        ...

    async def spend(
        self,
        *,
        since: float | None,
        until: float | None,
        channel_key: str | None = None,
        workspace: str | None = None,
        person: str | None = None,
    ) -> Sequence[Spend]:
        """The calls made from ``since`` (inclusive) to ``until`` (exclusive; None: no
        bound), by model (sorted by name): of one channel and its threads (``channel_key``),
        of one workspace or server (``workspace``: ``platform:workspace``), of one person in
        that workspace (``workspace`` and ``person``), or of everything."""
        ...

    async def spend_lines(
        self, *, since: float | None, until: float | None, channel_key: str | None = None
    ) -> Sequence[SpendLine]:
        """The calls summed by UTC day, conversation, model and purpose, sorted by those;
        ``channel_key``: of that channel and its threads only."""
        ...
