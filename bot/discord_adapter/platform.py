"""The Discord :class:`~bot.platforms.Platform`: log in, connect, run until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import discord
import yarl

from bot.config import DiscordConfig
from bot.discord_adapter.catch_up import catch_up
from bot.discord_adapter.client import MemoryClient
from bot.engine import Engine
from bot.platforms import PlatformError

log = logging.getLogger(__name__)

ENABLE_INTENT = (
    "In the Discord Developer Portal (https://discord.com/developers/applications), open this "
    "application, go to Bot, turn on 'Message Content Intent' under Privileged Gateway "
    "Intents, save, and start the bot again."
)
MISSING_INTENT = f"Discord refused the Message Content intent. {ENABLE_INTENT}"
BAD_TOKEN = (
    "Discord rejected DISCORD_TOKEN. Copy the bot token again from the Developer Portal "
    "(Bot > Reset Token) into the DISCORD_TOKEN environment variable."
)


def point_at(*, api_base_url: str | None, gateway_url: str | None) -> None:
    """Use other Discord endpoints (discord.py keeps them process-wide, on its classes)."""
    if api_base_url:
        discord.http.Route.BASE = api_base_url.rstrip("/")
    if gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


class DiscordPlatform:
    def __init__(
        self, *, engine: Engine, settings: DiscordConfig, guild_ready_timeout: float = 2.0
    ) -> None:
        if not settings.token:
            raise PlatformError("discord: DISCORD_TOKEN is not set in the environment")
        self._token = settings.token
        point_at(api_base_url=settings.api_base_url, gateway_url=settings.gateway_url)
        self.client = MemoryClient(
            engine=engine, settings=settings, guild_ready_timeout=guild_ready_timeout
        )
        self._running: asyncio.Task[None] | None = None
        self._catch_up: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return "discord"

    @property
    def connected(self) -> bool:
        return self.client.is_ready() and not self.client.is_closed()

    async def start(self) -> None:
        try:
            await self.client.login(self._token)
        except discord.LoginFailure:
            await self.client.close()
            raise PlatformError(BAD_TOKEN) from None
        except BaseException:
            await self.client.close()
            raise
        self._running = asyncio.create_task(self.client.connect(), name="discord gateway")
        ready = asyncio.create_task(self.client.wait_until_ready())
        await asyncio.wait({self._running, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not self._running.done():
            self._catch_up = asyncio.create_task(self._catch_up_now(), name="discord catch-up")
            return
        ready.cancel()
        error = self._running.exception()
        await self.client.close()
        if isinstance(error, discord.PrivilegedIntentsRequired):
            raise PlatformError(MISSING_INTENT)
        raise PlatformError(f"Discord connection failed: {error!r}")

    async def _catch_up_now(self) -> None:
        try:
            await catch_up(self.client, self.client.engine.config.catch_up)
        except Exception:
            log.exception("discord catch-up failed")

    async def stop(self) -> None:
        if self._catch_up is not None:
            self._catch_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._catch_up
        await self.client.close()
        if self._running is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._running
