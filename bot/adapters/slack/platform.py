"""The Slack :class:`~bot.run.Platform`: Socket Mode or HTTP mode (Events API)."""

from __future__ import annotations

import logging

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.app import Identity, Listeners, build_app, identify
from bot.adapters.slack.catch_up import catch_up
from bot.adapters.slack.gate import Gate
from bot.adapters.slack.socket import SocketHandler
from bot.config import SlackConfig, SlackMode
from bot.core.engine import Engine
from bot.core.ports.platform import PlatformError

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
DEFAULT_API_BASE_URL = "https://slack.com/api/"
_RATE_LIMIT_RETRIES = 3
WEB_LOGGER = "slack_sdk.web.async_base_client"


def point(client: AsyncWebClient, settings: SlackConfig) -> AsyncWebClient:
    """``client`` on the configured base URL, with 429s retried after the ``Retry-After`` the
    API sends."""
    base_url = settings.api_base_url or DEFAULT_API_BASE_URL
    client.base_url = base_url if base_url.endswith("/") else base_url + "/"
    # slack_sdk's logger, as on a client made without one (Bolt gives the client it makes its
    # own): the debug lines hold every request and response, shown only with slack_sdk_debug.
    client._logger = logging.getLogger(WEB_LOGGER)
    client.retry_handlers.append(
        AsyncRateLimitErrorRetryHandler(max_retry_count=_RATE_LIMIT_RETRIES)
    )
    return client


def make_client(settings: SlackConfig) -> AsyncWebClient:
    """A Web API client for the bot token, as :func:`point` sets it up."""
    return point(AsyncWebClient(token=settings.bot_token), settings)


async def probe(settings: SlackConfig) -> tuple[bool, str]:
    """For ``bot doctor``: whether the bot token signs in (``auth.test``), and as whom."""
    try:
        identity = await identify(make_client(settings))
    except SlackApiError as exc:
        return False, f"slack: auth.test failed: {exc.response.get('error')}"
    except (OSError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
        where = settings.api_base_url or DEFAULT_API_BASE_URL
        return False, f"slack: cannot reach {where}: {exc}"
    return True, (
        f"slack: {settings.mode.value} mode, signed in as {identity.user_id} in {identity.team_id}"
    )


class SlackPlatform:
    """``bot run``'s Slack side: connects in the configured mode, hands events to the handler."""

    def __init__(self, *, engine: Engine, settings: SlackConfig) -> None:
        self.engine = engine
        self.settings = settings
        self.identity: Identity | None = None
        self.listeners: Listeners | None = None
        self.port: int | None = None
        """HTTP mode: the port actually bound (``slack.port: 0`` picks a free one)."""
        self._connected = False
        self._socket: SocketHandler | None = None
        self._runner: web.AppRunner | None = None
        self._gate: Gate | None = None

    @property
    def name(self) -> str:
        return "slack"

    @property
    def connected(self) -> bool:
        return self._connected

    async def start(self) -> None:
        http = self.settings.mode is SlackMode.HTTP
        app = build_app(
            token=self.settings.bot_token,
            signing_secret=self.settings.signing_secret if http else None,
        )
        client = point(app.client, self.settings)
        try:
            self.identity = await identify(client)
        except SlackApiError as exc:
            raise PlatformError(f"slack: auth.test failed: {exc.response.get('error')}") from None
        except (OSError, aiohttp.ClientError, TimeoutError, ValueError) as exc:
            where = self.settings.api_base_url or DEFAULT_API_BASE_URL
            raise PlatformError(f"slack: cannot reach {where}: {exc}") from None
        log.info("slack: signed in as %s in %s", self.identity.user_id, self.identity.team_id)
        self.listeners = Listeners(
            engine=self.engine, client=client, settings=self.settings, identity=self.identity
        )
        self.listeners.register(app)
        if http:
            self._gate = Gate(app, self.settings.signing_secret or "")
            runner = self._gate.runner(EVENTS_PATH)
            await runner.setup()
            self._runner = runner
            where = f"{self.settings.host}:{self.settings.port}"
            try:
                await web.TCPSite(runner, self.settings.host, self.settings.port).start()
            except OSError as exc:
                raise PlatformError(
                    f"slack: cannot listen on {where} (slack.host, slack.port): "
                    f"{exc.strerror or exc}"
                ) from None
            self.port = runner.addresses[0][1]
            log.info("slack: serving %s on %s:%d", EVENTS_PATH, self.settings.host, self.port)
        else:
            await self._open_socket(app, client)
        self._connected = True
        self.listeners.background(
            catch_up(self.listeners, self.engine.config.catch_up), "slack catch-up"
        )
        self.listeners.take_over()

    async def _open_socket(self, app: AsyncApp, client: AsyncWebClient) -> None:
        """Connect in Socket Mode. The first websocket URL is asked for here, so a refused app
        token stops ``bot run`` with one line; a socket that cannot be reached is retried."""
        url: str | None = None
        try:
            opened = await client.apps_connections_open(app_token=self.settings.app_token or "")
            url = str(opened["url"])
        except SlackApiError as exc:
            raise PlatformError(
                f"slack: apps.connections.open failed: {exc.response.get('error')} "
                "(SLACK_APP_TOKEN must be an xapp- token with connections:write)"
            ) from None
        except (OSError, aiohttp.ClientError, TimeoutError):
            pass  # asked for again by each attempt to connect
        # Kept before connecting, so that stop() closes it whatever point it has reached.
        self._socket = SocketHandler(app, app_token=self.settings.app_token or "", wss_uri=url)
        await self._socket.connect_async()  # type: ignore[no-untyped-call]

    async def stop(self) -> None:
        """Stop taking events, give in-flight replies a moment, disconnect."""
        self._connected = False
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
            self._socket = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._gate is not None:
            self._gate.refusals.close()
            self._gate = None
        if self.listeners is not None:
            await self.listeners.aclose()
