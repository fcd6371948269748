"""``bot run``: the chat platforms enabled in the config, run until a signal stops them."""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence

from bot import adapters
from bot.core.ports.platform import NoPlatformEnabled, Platform
from bot.wiring import App

log = logging.getLogger(__name__)


def enabled_platforms(app: App) -> list[Platform]:
    """The platforms the config enables, in the registry's order (each adapter imported only
    when enabled)."""
    return [entry.build(app, settings) for entry, settings in adapters.enabled(app.config)]


async def run_platforms(platforms: Sequence[Platform]) -> None:
    """Start every platform, wait for SIGINT or SIGTERM, then stop them all.

    Platforms connect side by side, and a signal is heeded in any state: while one is
    still connecting (or retrying), it is stopped like the others. A :class:`PlatformError`
    from one stops the run."""
    if not platforms:
        raise NoPlatformEnabled
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    signalled = asyncio.create_task(stop.wait(), name="stop signal")
    starting = [asyncio.create_task(_start(p), name=f"{p.name} start") for p in platforms]
    try:
        pending: set[asyncio.Task[None] | asyncio.Task[bool]] = {*starting, signalled}
        while not signalled.done():
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done - {signalled}:
                task.result()  # a platform that cannot run ends the run
        log.info("stopping")
    finally:
        signalled.cancel()
        for task in starting:
            task.cancel()
        await asyncio.gather(*starting, return_exceptions=True)
        for platform in reversed(platforms):
            await platform.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


async def _start(platform: Platform) -> None:
    await platform.start()
    log.info("%s connected", platform.name)
