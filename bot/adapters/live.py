"""An answer shown as the model writes it, by posting and editing messages at the pace a
platform allows. Platform-neutral: each adapter gives a :class:`Surface` (post, edit, delete)
and its way of cutting text into messages (:func:`bot.adapters.text.split` with its limit and
fence rule, so a code block still open at the end of what came so far is shown closed).

Text arrives far faster than a platform takes edits: :meth:`LiveText.show` only keeps the
newest text, and one task at a time brings the messages up to it, at most once every
``interval`` seconds, waiting out a rate limit (:class:`RateLimited`) when the platform says
so. :meth:`LiveText.finish` shows the finished answer in the messages posted so far, posting
more or deleting those it no longer needs; it too changes a message at most once an
``interval``, waiting for its turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from typing import Protocol

log = logging.getLogger(__name__)

EDIT_INTERVAL = 1.0
"""Seconds between two updates of a streamed answer: about what Slack and Discord allow for
editing one message."""


class RateLimited(Exception):
    """The platform refused a call for now (HTTP 429); try again after ``retry_after``."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"rate limited for {retry_after:.1f} s")
        self.retry_after = retry_after


class MessageGone(Exception):
    """The message to edit no longer exists (deleted, by someone or by a process now gone)."""


class Surface(Protocol):
    """Where one answer's messages go on a platform."""

    async def post(self, text: str) -> str | None:
        """Post a new message; its platform id (None when it could not be posted)."""
        ...

    async def edit(self, message_id: str, text: str) -> None:
        """Replace a posted message's text; :class:`RateLimited` when told to wait,
        :class:`MessageGone` when it is no longer there."""
        ...

    async def delete(self, message_id: str) -> None: ...


Cut = Callable[[str], Sequence[str]]
"""A text as the platform's messages (each within its limit, code fences balanced)."""


class Paced:
    """Runs ``step`` in one task at a time, at most once an ``interval``, until it says it has
    nothing left to do (False); a :class:`RateLimited` it raises is waited out. :meth:`stop`
    ends it once the call in flight, if any, is answered (cutting a call off could leave a
    message posted whose id is never known)."""

    def __init__(
        self,
        step: Callable[[], Awaitable[bool]],
        *,
        interval: float,
        clock: Callable[[], float],
        name: str,
    ) -> None:
        self._step = step
        self._interval = interval
        self._clock = clock
        self._name = name
        self._next_at = 0.0
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    @property
    def stopped(self) -> bool:
        return self._wake.is_set()

    def kick(self) -> None:
        """Run the steps now (or at the next allowed time), unless they run or have stopped."""
        if self.stopped or (self._task is not None and not self._task.done()):
            return
        self._task = asyncio.create_task(self._run(), name=self._name)

    async def stop(self) -> None:
        self._wake.set()
        task, self._task = self._task, None
        if task is not None:
            await asyncio.shield(task)

    async def _run(self) -> None:
        while not self.stopped:
            delay = self._next_at - self._clock()
            if delay > 0:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), delay)
                if self._wake.is_set():  # stopped meanwhile
                    return
            try:
                if not await self._step():
                    return
            except RateLimited as limited:
                self._next_at = self._clock() + limited.retry_after
                continue
            self._next_at = self._clock() + self._interval


class LiveText:
    """One answer's messages, kept up with a growing text."""

    def __init__(
        self,
        surface: Surface,
        cut: Cut,
        *,
        first: str | None = None,
        interval: float = EDIT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``first``: a message already shown for this answer (a "thinking" message) that
        its text replaces."""
        self._surface = surface
        self._cut = cut
        self._interval = interval
        self._clock = clock
        self._ids: list[str] = [first] if first is not None else []
        self._shown: list[str | None] = [None] * len(self._ids)
        self._changed_at: list[float] = [float("-inf")] * len(self._ids)
        """When each message was last posted or edited (by this object)."""
        self._wanted = ""
        self._broken = False
        self._paced = Paced(self._catch_up, interval=interval, clock=clock, name="live answer")

    @property
    def message_ids(self) -> list[str]:
        """The messages holding the answer so far, in order."""
        return list(self._ids)

    def show(self, text: str) -> None:
        """The answer so far (all of it); shown within ``interval`` or when allowed."""
        self._wanted = text
        if not self._broken:
            self._paced.kick()

    async def finish(self, parts: Sequence[str]) -> str | None:
        """Show the finished answer as ``parts`` (already cut), in the messages posted so far
        and new ones; delete those left over. The id of the first message."""
        await self._paced.stop()
        for index, part in enumerate(parts):
            await self._put(index, part, wait=True)
        for message_id in self._ids[len(parts) :]:
            await self._surface.delete(message_id)
        del self._ids[len(parts) :], self._shown[len(parts) :], self._changed_at[len(parts) :]
        return self._ids[0] if self._ids else None

    async def abandon(self) -> None:
        """Stop updating (the answer failed or was cancelled); what is shown stays."""
        await self._paced.stop()

    async def _catch_up(self) -> bool:
        """One step towards the newest text; False once the messages show it."""
        parts = self._cut(self._wanted)
        changed = [
            i for i, part in enumerate(parts) if i >= len(self._shown) or self._shown[i] != part
        ]
        if not changed:
            return False
        try:
            for index in changed:
                await self._put(index, parts[index], wait=False)
        except RateLimited:
            raise  # waited out by Paced
        except Exception:
            log.exception("showing an answer as it was written failed; it is sent whole")
            self._broken = True
            return False
        return True

    async def _put(self, index: int, text: str, *, wait: bool) -> None:
        """Show ``text`` as the answer's message ``index`` (posted if new). With ``wait``, a
        rate limit is waited out rather than raised, and so is the message's turn (one
        change an ``interval``; without ``wait`` the caller paces the calls)."""
        while True:
            try:
                if index < len(self._ids):
                    if self._shown[index] != text:
                        turn = self._changed_at[index] + self._interval - self._clock()
                        if wait and turn > 0:
                            await asyncio.sleep(turn)
                        try:
                            await self._surface.edit(self._ids[index], text)
                        except MessageGone:  # posted again in its place
                            posted = await self._surface.post(text)
                            if posted is None:
                                return
                            self._ids[index] = posted
                        self._shown[index] = text
                        self._changed_at[index] = self._clock()
                    return
                posted = await self._surface.post(text)
                if posted is not None:
                    self._ids.append(posted)
                    self._shown.append(text)
                    self._changed_at.append(self._clock())
                return
            except RateLimited as limited:
                if not wait:
                    raise
                await asyncio.sleep(limited.retry_after)
