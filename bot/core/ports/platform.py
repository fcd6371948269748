"""What ``bot run`` needs of a chat platform.

Each adapter implements :class:`Platform`: it translates platform events into
:mod:`bot.core.models` values for the core and never hands platform objects to it.
"""

from __future__ import annotations

from typing import Protocol


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
