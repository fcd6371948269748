"""``bot run``'s lifecycle: every platform started, then stopped on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from bot.core.ports.platform import NoPlatformEnabled
from bot.run import run_platforms


class RecordingPlatform:
    """A platform at the seam that records its lifecycle."""

    def __init__(self, name: str, events: list[str]) -> None:
        self._name = name
        self._events = events
        self.connected = False
        self.started = asyncio.Event()

    @property
    def name(self) -> str:
        return self._name

    async def start(self) -> None:
        self.connected = True
        self._events.append(f"start {self._name}")
        self.started.set()

    async def stop(self) -> None:
        self.connected = False
        self._events.append(f"stop {self._name}")


async def test_platforms_start_in_order_and_stop_in_reverse_on_sigterm() -> None:
    events: list[str] = []
    platforms = [RecordingPlatform("slack", events), RecordingPlatform("discord", events)]
    running = asyncio.create_task(run_platforms(platforms))
    await asyncio.wait_for(platforms[-1].started.wait(), timeout=5)
    assert all(p.connected for p in platforms)
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(running, timeout=5)
    assert events == ["start slack", "start discord", "stop discord", "stop slack"]


async def test_nothing_to_run_is_an_error() -> None:
    with pytest.raises(NoPlatformEnabled):
        await run_platforms([])
