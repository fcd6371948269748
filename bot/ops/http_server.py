"""The optional HTTP endpoint for operators: ``/healthz`` and ``/metrics``; and the page
(``/page/``) when ``http.page`` enables it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager

from aiohttp import web

from bot.core.caps import period_bounds
from bot.core.models import Conversation
from bot.core.ports.platform import Platform, PlatformError
from bot.ops.page.routes import Page, page_routes, templates
from bot.telemetry.metrics import CONTENT_TYPE_LATEST, PrometheusObserver
from bot.wiring import READ_FAILURES, App

log = logging.getLogger(__name__)


def make_web_app(
    app: App, metrics: PrometheusObserver, platforms: Sequence[Platform]
) -> web.Application:
    async def healthz(_: web.Request) -> web.Response:
        problem = await app.store.health_problem()
        pool = await app.store.connections()
        in_use = f", {pool[0]} of {pool[1]} connections in use" if pool else ""
        lines = [f"database: {'ok' + in_use if problem is None else f'down ({problem})'}"]
        lines += [f"{p.name}: {'ok' if p.connected else 'down'}" for p in platforms]
        ok = problem is None and all(p.connected for p in platforms)
        return web.Response(text="\n".join(lines) + "\n", status=200 if ok else 503)

    async def metrics_page(_: web.Request) -> web.Response:
        try:
            metrics.budget_use(await workspace_budget_use(app))
        except READ_FAILURES as exc:  # the counters are still worth serving
            log.warning("reading budget use for /metrics failed: %s", exc)
        return web.Response(body=metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    web_app = web.Application()
    web_app.router.add_get("/healthz", healthz)
    web_app.router.add_get("/metrics", metrics_page)
    page = app.config.http.page
    if page.enabled:
        engine = app.engine
        web_app.add_routes(
            page_routes(
                Page(app.store, lambda: engine.clock(), page.token, templates(), engine.charts)
            )
        )
    return web_app


async def workspace_budget_use(app: App) -> dict[str, dict[str, float]]:
    """The share used of each workspace cap, for every workspace that spent this month (none
    read when no workspace cap is configured)."""
    caps = app.engine.caps
    workspace_caps = app.config.budgets.workspace
    if workspace_caps.day is None and workspace_caps.month is None:
        return {}
    month_start, _ = period_bounds(app.engine.clock(), "month")
    lines = await app.store.spend_lines(since=month_start, until=None)
    keys = {line.conversation_key for line in lines if line.conversation_key}
    workspaces = {Conversation.from_key(key) for key in keys}
    spent = sorted({c.workspace_scope for c in workspaces if c.shares_workspace})
    return {workspace: await caps.workspace_use(workspace) for workspace in spent}


@asynccontextmanager
async def serve_http(app: App, platforms: Sequence[Platform]) -> AsyncIterator[int | None]:
    """Serve the endpoint while the block runs, when ``http.port`` is set; yields the port."""
    settings = app.config.http
    if settings.port is None or app.metrics is None:
        yield None
        return
    runner = web.AppRunner(make_web_app(app, app.metrics, platforms), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, settings.host, settings.port)
    try:
        try:
            await site.start()
        except OSError as exc:
            where = f"{settings.host}:{settings.port}"
            raise PlatformError(
                f"http: cannot listen on {where} (http.host, http.port): {exc.strerror or exc}"
            ) from None
        server = site._server
        sockets = getattr(server, "sockets", None) or ()
        port = sockets[0].getsockname()[1] if sockets else settings.port
        log.info("health and metrics on http://%s:%d/", settings.host, port)
        if settings.page.enabled:
            log.info(
                "the page on http://%s:%d/page/ (links from /stats, /usage)", settings.host, port
            )
        yield port
    finally:
        await runner.cleanup()
