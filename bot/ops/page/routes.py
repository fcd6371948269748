"""The page's routes on the http server: ``/page/`` (operators: the channels) and
``/page/<channel key>`` (a signed link for that channel, or the operators' token).

Nothing is read from the store before the request is allowed; a refusal is a short plain
page. Every answer is kept out of caches and referrers (links carry their signature)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import quote

from aiohttp import web
from jinja2 import Environment, FileSystemLoader, select_autoescape

from bot.core.charts import Chart, layers_chart, usage_chart
from bot.core.models import Conversation
from bot.core.page_links import PAGE_PATH, check, page_path, page_secret, token_matches
from bot.core.ports.charts import Charts
from bot.core.ports.meta import MetaStore
from bot.core.ports.store import ConversationInfo
from bot.core.prompt.layout import LAYERS
from bot.ops.page.view import ChannelPage, PageStore, channel_page, when

HEADERS = {
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"
    ),
}


class IndexStore(PageStore, MetaStore, Protocol):
    """What the page reads, the channels' index and the links' secret too."""

    async def conversations(self) -> Sequence[ConversationInfo]: ...


def templates() -> Environment:
    env = Environment(
        loader=FileSystemLoader(Path(__file__).with_name("templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.globals["when"] = when
    return env


@dataclass
class Page:
    """The page's handlers over ``store``; ``clock`` and ``token`` as the app has them."""

    store: IndexStore
    clock: Callable[[], float]
    token: str | None
    env: Environment
    charts: Charts | None = None
    """Draws the usage and layers charts; None: the page shows tables only."""
    _secret: bytes | None = None

    async def secret(self) -> bytes:
        if self._secret is None:
            self._secret = await page_secret(self.store)
        return self._secret

    def html(self, name: str, status: int = 200, **values: Any) -> web.Response:
        body = self.env.get_template(name).render(**values)
        return web.Response(
            text=body, status=status, content_type="text/html", charset="utf-8", headers=HEADERS
        )

    def refused(self, status: int, reason: str) -> web.Response:
        return self.html("refused.html", status, reason=reason)

    def operator_token(self, request: web.Request) -> str | None:
        """The token the request gives, by header or query; None when it gives none."""
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer "):
            return header.removeprefix("Bearer ").strip()
        return request.query.get("token")

    def is_operator(self, request: web.Request) -> bool:
        return token_matches(self.operator_token(request), self.token)

    async def index(self, request: web.Request) -> web.Response:
        if not self.is_operator(request):
            status = 403 if self.operator_token(request) else 401
            return self.refused(status, "This page needs a link from /stats or /usage.")
        conversations = await self.store.conversations()
        keys = sorted({Conversation.from_key(c.key).channel_key for c in conversations})
        suffix = f"?token={quote(t)}" if (t := request.query.get("token")) else ""
        channels = [(key, page_path(key) + suffix) for key in keys]
        return self.html("index.html", channels=channels)

    async def channel(self, request: web.Request) -> web.Response:
        channel_key = request.match_info["channel_key"]
        until = request.query.get("until")
        if not self.is_operator(request):
            given = request.query.get("sig")
            if self.operator_token(request) and not given:
                return self.refused(403, "This token is not valid.")
            verdict = check(
                await self.secret(), channel_key, until=until, sig=given, now=self.clock()
            )
            if not verdict.allowed:
                return self.refused(401 if not given else 403, verdict.reason)
        try:
            channel = Conversation.from_key(channel_key)
        except ValueError:
            return self.refused(404, "No such channel.")
        if channel.key != channel.channel_key:
            return self.refused(404, "A page is a channel's, threads included.")
        now = self.clock()
        page = await channel_page(self.store, channel_key, now=now)
        usage, layers = await self.pictures(page)
        return self.html(
            "channel.html",
            page=page,
            layers=LAYERS,
            usage_chart=usage,
            layers_chart=layers,
            shown_at=when(now),
            until=when(float(until)) if until and until.isdigit() else None,
        )

    async def pictures(self, page: ChannelPage) -> tuple[Picture | None, Picture | None]:
        """The usage chart, and the last prompt's layers as a bar, when charts are drawn."""
        if self.charts is None:
            return None, None
        key = page.channel_key
        usage = await usage_chart(
            self.store, self.charts, channel_key=key, now=self.clock(), where=key
        )
        last = page.prompts[0] if page.prompts else None
        layers = (
            await layers_chart(
                self.charts,
                breakdown={layer.name: layer.tokens for layer in last.layers},
                budget=last.budget,
                where=key,
            )
            if last
            else None
        )
        return Picture.of(usage), Picture.of(layers) if layers else None


@dataclass(frozen=True)
class Picture:
    """A chart as an ``<img>`` takes it: inline, with its alt text."""

    src: str
    alt: str
    width: int
    height: int

    @classmethod
    def of(cls, chart: Chart) -> Picture:
        data = base64.b64encode(chart.image.png).decode()
        image = chart.image
        return cls(f"data:image/png;base64,{data}", chart.alt_text, image.width, image.height)


def page_routes(page: Page) -> list[web.RouteDef]:
    return [
        web.get(PAGE_PATH, page.index),
        web.get(PAGE_PATH + "{channel_key}", page.channel),
    ]
