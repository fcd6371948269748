"""What ``bot run`` needs of a chat platform.

Each adapter implements :class:`Platform`: it translates platform events into
:mod:`bot.core.models` values, hands them to :class:`bot.core.handler.Handler`, and shows
the answers through an :class:`Outbox`; it never hands platform objects to the core.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from enum import StrEnum
from typing import Protocol, runtime_checkable

from bot.core.models import Reply


class Phase(StrEnum):
    """What the bot is doing for an answer, for platforms with a status line."""

    SEARCHING = "searching memory"
    """Building the prompt: recall searches earlier messages."""
    THINKING = "thinking"
    """Waiting for the model."""


class NoPlatformEnabled(Exception):
    """``bot run`` has nothing to run."""


class PlatformError(Exception):
    """A platform cannot run; the message says why and how to fix it."""


class Platform(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def connected(self) -> bool: ...

    async def start(self) -> None:
        """Connect and begin handling events; return once connected."""
        ...

    async def stop(self) -> None:
        """Stop taking events, finish or abandon in-flight replies, disconnect; also after a
        start that failed or was cancelled."""
        ...


class Outbox(Protocol):
    """Where the answer to one message goes on its platform (its channel or thread, its
    author for what only they may see)."""

    def working(self) -> AbstractAsyncContextManager[str | None]:
        """Shown while the answer is made (Slack: a "thinking" message the answer replaces,
        whose platform id it gives; Discord: typing, None); taken back when the answer fails
        or is abandoned."""
        ...

    async def show(self, text: str) -> None:
        """The answer so far (all of it, growing) while the model writes it, shown at the pace
        the platform allows (never called for an answer made whole); :meth:`send` then shows
        it finished, in the same messages."""
        ...

    async def send(self, reply: Reply) -> str | None:
        """Show ``reply``; the platform id of the message that holds it (or its start), so
        that the platform's edits and deletions of it reach memory; None when it has none."""
        ...


@runtime_checkable
class ShowsProgress(Protocol):
    """An outbox with a status line (Slack's assistant pane): told what the bot is doing."""

    async def progress(self, phase: Phase) -> None: ...
