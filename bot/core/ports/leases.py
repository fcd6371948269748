"""What processes sharing a store coordinate by: leases, and the messages awaiting an answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.core.models import StoredMessage


@dataclass(frozen=True)
class Awaiting:
    """A message awaiting its answer whose process is gone, now this process's to answer."""

    conversation_key: str
    question: StoredMessage
    answer: StoredMessage | None
    """Its answer, when one was stored (and perhaps sent) before its process went."""
    queued_at: float
    shown_as: str | None = None
    """The platform message shown while its answer was made (Slack's thinking message), which
    the answer replaces."""


class LeaseStore(Protocol):
    """Coordination between the processes sharing a database, by the database's clock.

    A lease is work only one holder may do at a time (a name such as ``summary:<key>``),
    until it runs out. A running process holds the lease ``process:<holder>``; the messages it
    awaits the answer of (``add_message(awaited_by=...)``) are taken over by another process
    once that lease has run out.
    """

    async def take_lease(self, *, name: str, holder: str, seconds: float) -> bool:
        """Take the lease ``name`` for ``seconds`` (or renew it, for its holder); False while
        another holder's lease runs."""
        ...

    async def drop_lease(self, *, name: str, holder: str) -> None:
        """End the holder's lease (another holder's is left alone)."""
        ...

    async def first_awaiting(self, *, conversation_key: str) -> int | None:
        """The id of the conversation's oldest message awaiting an answer, by any process."""
        ...

    async def showing(self, *, stored_id: int, message_id: str) -> None:
        """While its answer is made, the message awaiting it is shown ``message_id`` (which the
        answer replaces)."""
        ...

    async def answered(self, *, stored_id: int) -> None:
        """The message no longer awaits an answer (answered, or given up)."""
        ...

    async def wait_answered(self, *, conversation_key: str, within: float) -> None:
        """Return once a message of the conversation may have stopped awaiting an answer, in
        any process, or after ``within`` seconds (a store that cannot tell just waits)."""
        ...

    async def adopt_awaiting(self, *, platform: str, holder: str, limit: int) -> Sequence[Awaiting]:
        """Take over, for ``holder``, up to ``limit`` of the platform's messages awaiting an
        answer whose process's lease has run out, oldest first."""
        ...
