"""The Discord :class:`~bot.run.Platform`: log in, connect, run until stopped."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime

import aiohttp
import discord
import yarl

from bot.adapters import reconnect
from bot.adapters.discord.catch_up import catch_up
from bot.adapters.discord.client import client_for
from bot.config import DiscordConfig
from bot.core.engine import Engine
from bot.core.ports.platform import PlatformError

log = logging.getLogger(__name__)

ENABLE_INTENT = (
    "In the Discord Developer Portal (https://discord.com/developers/applications), open this "
    "application, go to Bot, turn on 'Message Content Intent' under Privileged Gateway "
    "Intents, save, and start the bot again."
)
MISSING_INTENT = f"Discord refused the Message Content intent. {ENABLE_INTENT}"
SHARDING_REQUIRED = (
    "Discord requires sharding for a bot in this many servers (close code 4011): set "
    "discord.shard_count (a number, or auto); see Sharding in docs/discord.md."
)
_SHARDING_REQUIRED = 4011
BAD_TOKEN = (
    "Discord rejected DISCORD_TOKEN. Copy the bot token again from the Developer Portal "
    "(Bot > Reset Token) into the DISCORD_TOKEN environment variable."
)


_STOP_SECONDS = 5.0  # for discord.py's connect to end once closed (it may be waiting to retry)
_PROBE_TIMEOUT = aiohttp.ClientTimeout(total=15)
_RECONNECT_LOG = "Attempting a reconnect in %.2fs"


class OneLineReconnects(logging.Filter):
    """discord.py logs each reconnect of its gateway with a traceback: this keeps its line at
    warning level, with the cause instead of the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == _RECONNECT_LOG and record.exc_info and record.exc_info[1]:
            cause = reconnect.cause(record.exc_info[1])
            record.msg = "discord: gateway connection failed (%s); reconnecting in %.1f s"
            record.args = (cause, *(record.args or ()))
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def point_at(*, api_base_url: str | None, gateway_url: str | None) -> None:
    """Use other Discord endpoints (discord.py keeps them process-wide, on its classes)."""
    if api_base_url:
        discord.http.Route.BASE = api_base_url.rstrip("/")
    if gateway_url:
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)


class DiscordPlatform:
    def __init__(
        self,
        *,
        engine: Engine,
        settings: DiscordConfig,
        guild_ready_timeout: float = 2.0,
        identify_interval: float = 5.0,
    ) -> None:
        if not settings.token:
            raise PlatformError("discord: DISCORD_TOKEN is not set in the environment")
        self._token = settings.token
        point_at(api_base_url=settings.api_base_url, gateway_url=settings.gateway_url)
        self.client = client_for(
            engine=engine,
            settings=settings,
            guild_ready_timeout=guild_ready_timeout,
            identify_interval=identify_interval,
        )
        self._running: asyncio.Task[None] | None = None
        self._catch_up: asyncio.Task[None] | None = None
        self._reconnects: OneLineReconnects | None = None

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
        except (OSError, aiohttp.ClientError, TimeoutError, discord.HTTPException) as exc:
            await self.client.close()
            raise PlatformError(
                f"discord: cannot reach {discord.http.Route.BASE}: {reconnect.cause(exc)}"
            ) from None
        except BaseException:
            await self.client.close()
            raise
        self._reconnects = OneLineReconnects()
        logging.getLogger("discord.client").addFilter(self._reconnects)
        await self._reach_gateway()
        self._running = asyncio.create_task(self.client.connect(), name="discord gateway")
        ready = asyncio.create_task(self.client.wait_until_ready())
        await asyncio.wait({self._running, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not self._running.done():
            connected = discord.utils.utcnow()  # from now on messages arrive live
            if isinstance(self.client, discord.AutoShardedClient):
                ids = ", ".join(str(shard) for shard in sorted(self.client.shards))
                log.info("discord: shards %s of %s", ids, self.client.shard_count)
            self._catch_up = asyncio.create_task(
                self._catch_up_now(connected), name="discord catch-up"
            )
            self.client.handler.take_over("discord", self.client.outbox_for)
            return
        ready.cancel()
        error = self._running.exception()
        await self.client.close()
        if isinstance(error, discord.PrivilegedIntentsRequired):
            raise PlatformError(MISSING_INTENT)
        if isinstance(error, discord.ConnectionClosed) and error.code == _SHARDING_REQUIRED:
            raise PlatformError(SHARDING_REQUIRED)
        raise PlatformError(f"Discord connection failed: {error!r}")

    async def _reach_gateway(self) -> None:
        """Wait until the gateway takes a websocket, retrying with a growing delay: discord.py
        retries only once it has had a connection (before, its loop ends in an AttributeError,
        discord.py issue 10520)."""
        gateway = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
        async with aiohttp.ClientSession(timeout=_PROBE_TIMEOUT) as session:

            async def probe() -> None:
                async with session.ws_connect(gateway):
                    pass

            await reconnect.retry(
                probe,
                failing=f"discord: cannot connect to the gateway {gateway}",
                logger=log,
                errors=(OSError, aiohttp.ClientError, TimeoutError),
            )

    async def _catch_up_now(self, until: datetime) -> None:
        try:
            await catch_up(self.client, self.client.engine.config.catch_up, until=until)
        except Exception:
            log.exception("discord catch-up failed")

    async def stop(self) -> None:
        """Stop taking events, let the replies in flight finish and be sent (within the
        handler's grace), then close the client: a reply sent after it closed is lost."""
        self.client.stop_taking()
        if self._catch_up is not None:
            self._catch_up.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._catch_up
        await self.client.handler.aclose()
        await self.client.close()
        if self._running is not None:
            # Closed, its loop ends at once, or after the delay it is waiting out to reconnect.
            await asyncio.wait({self._running}, timeout=_STOP_SECONDS)
            self._running.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._running
        if self._reconnects is not None:
            logging.getLogger("discord.client").removeFilter(self._reconnects)
