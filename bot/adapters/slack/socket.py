"""Socket Mode with slack_sdk's aiohttp client, retrying a connection that fails with a
growing delay and one log line an attempt (slack_sdk's own loop retries every 10 s with a
traceback each time)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

import aiohttp
from slack_bolt.adapter.socket_mode.aiohttp import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.socket_mode.aiohttp import SocketModeClient

from bot.adapters import reconnect

log = logging.getLogger(__name__)

PING_INTERVAL = 10.0
SOCKET_LOGGER = "slack_sdk.socket_mode"


class SocketClient(SocketModeClient):
    """slack_sdk's client with its ``connect`` made of attempts: each asks for a fresh
    websocket URL (unless one was just given) and connects once; a failure is logged in one
    line with the next delay, and retried until it connects or the client is closed."""

    async def connect(self) -> None:
        attempts = await reconnect.retry(
            self._connect_afresh,
            failing="slack: cannot connect to Socket Mode",
            logger=log,
            stopped=self._stopped,
        )
        if attempts is not None and attempts > 1:
            log.info("slack: Socket Mode connected after %d attempts", attempts)

    async def _connect_afresh(self) -> None:
        """One attempt; after a failure the next asks for a new websocket URL."""
        try:
            await self._connect_once()
        except Exception:
            self.wss_uri = None
            raise

    async def connect_to_new_endpoint(self, force: bool = False) -> None:
        """As slack_sdk's, with the new URL asked for inside :meth:`connect`'s attempts."""
        acquired: bool
        try:
            acquired = await asyncio.wait_for(self.connect_operation_lock.acquire(), timeout=5)
        except TimeoutError:
            acquired = False
        try:
            if force or (acquired and not await self.is_connected()):
                self.wss_uri = None
                await self.connect()
        finally:
            if acquired:
                self.connect_operation_lock.release()

    def _stopped(self) -> bool:
        """Whether :meth:`close` was called meanwhile (read anew after each await)."""
        return self.closed

    async def _connect_once(self) -> None:
        """One attempt, as slack_sdk 3.48's ``connect`` makes it."""
        self.auto_reconnect_enabled = False
        old = self.current_session
        if old is not None:
            with contextlib.suppress(Exception):
                await old.close()
        if self.aiohttp_client_session.closed:
            self.aiohttp_client_session = aiohttp.ClientSession()
        if not self.wss_uri:
            opened = await self.web_client.apps_connections_open(app_token=self.app_token)
            self.wss_uri = str(opened["url"])
        self.current_session = await self.aiohttp_client_session.ws_connect(
            self.wss_uri,
            autoping=False,
            heartbeat=self.ping_interval,
            proxy=self.proxy,
            ssl=self.web_client.ssl if self.web_client.ssl is not None else True,
        )
        self.auto_reconnect_enabled = self.default_auto_reconnect_enabled
        self.stale = False
        await self.current_session.ping(f"sdk-ping-pong:{time.time()}".encode())
        if self.current_session_monitor is not None:
            self.current_session_monitor.cancel()
        self.current_session_monitor = asyncio.ensure_future(self.monitor_current_session())
        if self.message_receiver is not None:
            self.message_receiver.cancel()
        self.message_receiver = asyncio.ensure_future(self.receive_messages())


class SocketHandler(AsyncSocketModeHandler):
    """Bolt's Socket Mode adapter on a :class:`SocketClient`."""

    def __init__(self, app: AsyncApp, *, app_token: str, wss_uri: str | None) -> None:
        # Bolt's __init__ would make a client of its own (a session and a task) to replace.
        self.app = app
        self.app_token = app_token
        # slack_sdk's logger, not Bolt's: its debug lines hold every envelope received.
        self.client = SocketClient(
            app_token=app_token,
            logger=logging.getLogger(SOCKET_LOGGER),
            web_client=app.client,
            ping_interval=PING_INTERVAL,
        )
        self.client.wss_uri = wss_uri
        self.client.socket_mode_request_listeners.append(self.handle)  # type: ignore[arg-type]
