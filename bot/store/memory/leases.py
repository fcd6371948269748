"""The in-memory store's leases and messages awaiting an answer, by this process's clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from bot.core.models import Role
from bot.core.ports.leases import Awaiting
from bot.store.memory.tables import Tables


class Leases(Tables):
    """The :class:`bot.core.ports.store.LeaseStore` part of the in-memory store."""

    async def take_lease(self, *, name: str, holder: str, seconds: float) -> bool:
        now = time.time()
        held = self.lease_rows.get(name)
        if held is not None and held[0] != holder and held[1] > now:
            return False
        self.lease_rows[name] = (holder, now + seconds)
        return True

    async def drop_lease(self, *, name: str, holder: str) -> None:
        held = self.lease_rows.get(name)
        if held is not None and held[0] == holder:
            del self.lease_rows[name]

    def _live_awaiting(self) -> dict[int, str]:
        """Message id: conversation, of the awaited messages still stored."""
        for gone in [i for i in self.awaiting if i not in self.messages]:
            del self.awaiting[gone]
        return {i: row.conversation for i, row in self.awaiting.items()}

    async def first_awaiting(self, *, conversation_key: str) -> int | None:
        ids = [i for i, key in self._live_awaiting().items() if key == conversation_key]
        return min(ids, default=None)

    async def showing(self, *, stored_id: int, message_id: str) -> None:
        row = self.awaiting.get(stored_id)
        if row is not None:
            row.shown_as = message_id

    async def answered(self, *, stored_id: int) -> None:
        self.awaiting.pop(stored_id, None)

    async def wait_answered(self, *, conversation_key: str, within: float) -> None:
        await asyncio.sleep(within)

    def _running(self, holder: str, now: float) -> bool:
        held = self.lease_rows.get(f"process:{holder}")
        return held is not None and held[1] > now

    async def adopt_awaiting(self, *, platform: str, holder: str, limit: int) -> Sequence[Awaiting]:
        now = time.time()
        self._live_awaiting()
        orphans = sorted(
            i
            for i, row in self.awaiting.items()
            if row.platform == platform
            and row.holder != holder
            and not self._running(row.holder, now)
        )[:limit]
        adopted = []
        for stored_id in orphans:
            row = self.awaiting[stored_id]
            row.holder = holder
            answer = next(
                (
                    m.stored()
                    for m in self._rows(row.conversation)
                    if m.reply_to == stored_id and m.role is Role.ASSISTANT
                ),
                None,
            )
            question = self.messages[stored_id].stored()
            adopted.append(
                Awaiting(row.conversation, question, answer, row.queued_at, row.shown_as)
            )
        return adopted
