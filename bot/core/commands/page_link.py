"""The line ``/stats`` and ``/usage`` add for a channel's admins: a signed link to the
channel's page (when ``http.page`` is on)."""

from __future__ import annotations

from bot.config import Config
from bot.core.engine import Engine
from bot.core.models import CommandCall
from bot.core.page_links import link, page_secret


def page_base_url(config: Config) -> str:
    """Where links start: ``http.page.public_url``, else the http server's own address."""
    http = config.http
    if http.page.public_url:
        return http.page.public_url
    host = f"[{http.host}]" if ":" in http.host else http.host
    return f"http://{host}:{http.port}"


async def page_lines(engine: Engine, call: CommandCall) -> list[str]:
    """The link line for an admin while the page is on; nothing for anyone else."""
    page = engine.config.http.page
    if not page.enabled or not call.can_manage:
        return []
    url = link(
        page_base_url(engine.config),
        await page_secret(engine.store),
        call.conversation.channel_key,
        now=engine.clock(),
        minutes=page.link_minutes,
    )
    return [f"The page for this channel (good for {page.link_minutes:g} min): {url}"]
