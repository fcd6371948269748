"""A process's leases (bot.core.leases) on the in-memory store: work held under a lease is
one holder's while it runs, however long, and free once it ends."""

from __future__ import annotations

import asyncio

from bot.core.leases import Leases
from bot.store.memory import MemoryStore


async def test_work_under_a_lease_keeps_it_past_its_time_and_frees_it_at_the_end() -> None:
    store = MemoryStore()
    mine, theirs = Leases(store, holder="mine"), Leases(store, holder="theirs")
    async with mine.held("summary:c1", seconds=0.15) as ours:
        assert ours
        await asyncio.sleep(0.4)  # renewed meanwhile: still mine
        async with theirs.held("summary:c1") as also:
            assert not also
    async with theirs.held("summary:c1") as now_theirs:
        assert now_theirs


async def test_a_process_lease_runs_while_the_process_does_and_goes_with_it() -> None:
    store = MemoryStore()
    leases = Leases(store)
    async with leases.keep_alive(seconds=0.15):
        await asyncio.sleep(0.4)
        assert not await store.take_lease(
            name=leases.process_lease, holder="someone else", seconds=1
        )
    assert await store.take_lease(name=leases.process_lease, holder="someone else", seconds=1)


def test_each_process_has_its_own_name() -> None:
    store = MemoryStore()
    assert Leases(store).holder != Leases(store).holder
