"""Work one process at a time, among the processes sharing a database.

Each process has a holder name and keeps the lease ``process:<holder>`` running while it
runs (:meth:`Leases.keep_alive`): the messages it awaits the answer of are its own until that
lease runs out, and then any other process takes them over. :meth:`Leases.held` runs a piece
of work (a summary, the embedding backfill, a catch-up) under a lease renewed while it lasts.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

from bot.core.ports.leases import LeaseStore
from bot.core.ports.store import StorageError

log = logging.getLogger(__name__)

PROCESS_SECONDS = 15.0
"""How long a process's lease runs without renewal: how soon another process takes over the
answers of one that died."""
WORK_SECONDS = 60.0
"""How long a lease on a piece of work runs without renewal."""


def holder_name() -> str:
    """A name for this process, unique among those sharing a database."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class Leases:
    """This process's leases on one store."""

    def __init__(self, store: LeaseStore, *, holder: str | None = None) -> None:
        self.store = store
        self.holder = holder or holder_name()

    @property
    def process_lease(self) -> str:
        return f"process:{self.holder}"

    @asynccontextmanager
    async def keep_alive(self, *, seconds: float = PROCESS_SECONDS) -> AsyncIterator[None]:
        """Hold this process's lease while the block runs; dropped at its end, so that what
        this process leaves unanswered is taken over at once."""
        async with self._renewed(self.process_lease, seconds, first=True):
            yield
        await self._drop(self.process_lease)

    @asynccontextmanager
    async def held(self, name: str, *, seconds: float = WORK_SECONDS) -> AsyncIterator[bool]:
        """Take the lease ``name`` and keep renewing it while the block runs; the block gets
        False (and should leave the work) when another process holds it."""
        if not await self.store.take_lease(name=name, holder=self.holder, seconds=seconds):
            yield False
            return
        try:
            async with self._renewed(name, seconds, first=False):
                yield True
        finally:
            await self._drop(name)

    async def _drop(self, name: str) -> None:
        try:
            await self.store.drop_lease(name=name, holder=self.holder)
        except Exception as exc:  # a store failing or closed: the lease runs out by itself
            log.debug("could not drop the lease %s: %s", name, exc)

    @asynccontextmanager
    async def _renewed(self, name: str, seconds: float, *, first: bool) -> AsyncIterator[None]:
        failing = False
        if first:
            try:
                await self.store.take_lease(name=name, holder=self.holder, seconds=seconds)
            except StorageError as exc:  # renewals try again
                log.warning("could not take the lease %s: %s; retrying", name, exc.cause)
                failing = True
        task = asyncio.create_task(self._renew(name, seconds, failing), name=f"renew {name}")
        try:
            yield
        finally:
            task.cancel()
            with suppress(asyncio.CancelledError):
                await task

    async def _renew(self, name: str, seconds: float, failing: bool) -> None:
        """Renew the lease every third of its time; a failed renewal is told once, and its
        end once a renewal succeeds again."""
        while True:
            await asyncio.sleep(seconds / 3)
            try:
                if not await self.store.take_lease(name=name, holder=self.holder, seconds=seconds):
                    log.warning("lost the lease %s to another process", name)
                    return
            except StorageError as exc:  # the next renewal tries again
                if not failing:
                    log.warning("could not renew the lease %s: %s; retrying", name, exc.cause)
                failing = True
                continue
            except Exception as exc:  # a store closed under it: nothing left to hold
                log.debug("renewing the lease %s failed: %s", name, exc)
                return
            if failing:
                log.info("the lease %s is renewed again", name)
                failing = False
