"""Answers announced to the processes waiting on them: ``LISTEN``/``NOTIFY`` on one connection
of its own, opened on the first wait (again after it is lost), so that the next answer of a
conversation starts as soon as another process has shown the one before it."""

from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from typing import Any

import asyncpg

from bot.store.postgres.connection import FAILURES

log = logging.getLogger("bot.store.postgres.store")

CHANNEL = "bot_answered"
"""The notification channel; a payload is the conversation's key."""


class Announcements:
    def __init__(self, url: str) -> None:
        self._url = url
        self._connection: asyncpg.Connection[Any] | None = None
        self._opening = asyncio.Lock()
        self._waiters: dict[str, set[asyncio.Future[None]]] = {}

    async def wait(self, key: str, within: float) -> None:
        """Until an answer in conversation ``key`` is announced, or ``within`` seconds."""
        if not await self._listening():
            await asyncio.sleep(within)
            return
        announced: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters = self._waiters.setdefault(key, set())
        waiters.add(announced)
        try:
            await asyncio.wait([announced], timeout=within)
        finally:
            waiters.discard(announced)
            if not waiters:
                self._waiters.pop(key, None)

    async def _listening(self) -> bool:
        async with self._opening:
            if self._connection is not None and not self._connection.is_closed():
                return True
            try:
                connection = await asyncpg.connect(self._url)
                await connection.add_listener(CHANNEL, self._announced)
            except FAILURES as exc:
                log.debug("listening for answers failed: %s", exc)
                return False
            self._connection = connection
            return True

    def _announced(self, connection: object, pid: int, channel: str, key: object) -> None:
        for waiter in self._waiters.get(str(key), ()):
            if not waiter.done():
                waiter.set_result(None)

    async def close(self) -> None:
        if self._connection is not None:
            with suppress(*FAILURES):
                await self._connection.close(timeout=5)
            self._connection = None
