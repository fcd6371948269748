"""A process's leases (bot.core.leases) on the in-memory store: work held under a lease is
one holder's while it runs, however long, and free once it ends."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.core.leases import Leases
from bot.core.ports.store import StorageError
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


class FlakyStore(MemoryStore):
    """A store whose lease writes fail while ``failing`` is set, as a full disk's would."""

    failing = False

    async def take_lease(self, *, name: str, holder: str, seconds: float) -> bool:
        if self.failing:
            raise StorageError("memory", "disk full", incident=1)
        return await super().take_lease(name=name, holder=holder, seconds=seconds)


async def test_a_lease_that_cannot_be_renewed_is_told_once_and_again_when_it_can(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FlakyStore()
    store.failing = True
    leases = Leases(store, holder="mine")
    with caplog.at_level(logging.INFO, logger="bot.core.leases"):
        async with leases.keep_alive(seconds=0.06):
            await asyncio.sleep(0.2)  # the first take and several renewals fail
            store.failing = False
            await asyncio.sleep(0.1)
            assert not await store.take_lease(name=leases.process_lease, holder="x", seconds=1)
    told = [record.getMessage() for record in caplog.records]
    assert told == [
        "could not take the lease process:mine: disk full; retrying",
        "the lease process:mine is renewed again",
    ], told
