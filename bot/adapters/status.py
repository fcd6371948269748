"""A reaction on the question while it is answered (👀), where a platform has no status line
to show that the bot is at work: added when the answer starts, removed once it is sent or has
failed. Platform-neutral: each adapter says how to add and remove the reaction on one message.

A reaction is a courtesy: one that cannot be added or removed (no permission, a missing
scope, an emoji the platform does not know) is logged once per platform and the answer goes
on as if none were configured.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from bot.core.models import Reply
from bot.core.ports.platform import Outbox

log = logging.getLogger(__name__)

React = Callable[[bool], Awaitable[object]]
"""Adds (True) or removes (False) the status reaction on one question."""


class StatusReaction:
    """One platform's status reaction; a failure to react is logged once."""

    def __init__(self, platform: str, emoji: str) -> None:
        self.platform = platform
        self.emoji = emoji
        self._warned = False

    def around(self, outbox: Outbox, react: React) -> Outbox:
        """``outbox`` with the reaction on its question while the answer is made."""
        return _Reacting(outbox, react, self)

    async def call(self, react: React, on: bool) -> bool:
        """React; False when it failed (logged)."""
        try:
            await react(on)
        except Exception as exc:
            what = "add" if on else "remove"
            if self._warned:
                log.debug("%s: could not %s the status reaction: %s", self.platform, what, exc)
            else:
                self._warned = True
                log.warning(
                    "%s: could not %s the status reaction %s (%s: %s); answers go on without"
                    " it (this is logged once)",
                    self.platform,
                    what,
                    self.emoji,
                    type(exc).__name__,
                    exc,
                )
            return False
        return True


class _Reacting:
    """An outbox whose question carries the status reaction from :meth:`working` until the
    answer is sent, or the answer fails."""

    def __init__(self, outbox: Outbox, react: React, status: StatusReaction) -> None:
        self._outbox = outbox
        self._react = react
        self._status = status
        self._adding: asyncio.Task[bool] | None = None

    @asynccontextmanager
    async def working(self) -> AsyncIterator[str | None]:
        # Added alongside: the answer does not wait on the reaction.
        self._adding = asyncio.create_task(self._status.call(self._react, True))
        try:
            async with self._outbox.working() as shown:
                yield shown
        except BaseException:
            await self._done()
            raise

    async def show(self, text: str) -> None:
        await self._outbox.show(text)

    async def send(self, reply: Reply) -> str | None:
        try:
            return await self._outbox.send(reply)
        finally:
            await self._done()

    async def _done(self) -> None:
        """Take the reaction back, once it is on."""
        adding, self._adding = self._adding, None
        if adding is not None and await adding:
            await self._status.call(self._react, False)
