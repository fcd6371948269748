"""The page in a real browser: an admin's ``/stats`` gives a link; headless Chromium opens it
and sees the channel's last prompts with their layers, the exact last prompt, the pins, the
summary's versions and the spend, and nothing of another channel; an expired, tampered or
foreign link, or none, is refused without a word of the channel's data."""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pytest
from playwright.async_api import Browser, Page

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage
from bot.ops.http_server import serve_http
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.support.browser import ARTIFACTS, chromium

GENERAL = Conversation("slack", "T1", "C1")
RANDOM = Conversation("slack", "T1", "C2")
LINK = re.compile(r"The page for this channel \(good for 15 min\): (\S+)")
QUESTION = "Is 2 < 3 & is <b>this</b> bold, and what was the budget?"
TOKEN = "operator-s3cret"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Served:
    app: App
    port: int
    browser: Browser


@pytest.fixture
async def served(make_config: ConfigFactory) -> AsyncIterator[Served]:
    port = free_port()
    config = make_config(
        http={"host": "127.0.0.1", "port": port, "page": {"enabled": True}},
        memory={"recall_tokens": 500},
    )
    config = config.model_copy(
        update={
            "http": config.http.model_copy(
                update={"page": config.http.page.model_copy(update={"token": TOKEN})}
            )
        }
    )
    async with open_app(config) as app, serve_http(app, []) as bound, chromium() as browser:
        assert bound == port
        yield Served(app, port, browser)


async def say(app: App, where: Conversation, text: str, *, addressed: bool = True) -> None:
    await app.engine.handle_message(IncomingMessage(where, "U1", "Ana", text, addressed))


async def command(
    app: App, where: Conversation, name: str, argument: str = "", *, admin: bool
) -> str:
    call = CommandCall(where, name, argument, "U1", "Ana", can_manage=admin)
    return (await run_command(app.engine, call)).text


async def a_conversation(app: App) -> None:
    """Two summary versions, a pin, and answered questions in #general; a pin in #random."""
    await command(app, GENERAL, "pin", "The office is in Lisbon", admin=True)
    await command(app, RANDOM, "pin", "RANDOM-ONLY secret plan", admin=True)
    await say(app, RANDOM, "what is the plan?")
    for text in ("FACT the budget is 40k", "FACT launch is in March", "noted"):
        await say(app, GENERAL, text, addressed=False)
    await say(app, GENERAL, "hello there")
    assert await app.engine.summarize(GENERAL) is not None
    await say(app, GENERAL, "FACT the venue is Porto", addressed=False)
    await say(app, GENERAL, "and one more")
    assert await app.engine.summarize(GENERAL) is not None
    await say(app, GENERAL, QUESTION)


async def open_page(browser: Browser, url: str) -> tuple[int, Page, dict[str, str]]:
    page = await browser.new_page()
    page.set_default_timeout(5000)
    response = await page.goto(url)
    assert response is not None
    return response.status, page, await response.all_headers()


def with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=path))


async def test_an_admin_link_shows_what_the_bot_sees(served: Served) -> None:
    app = served.app
    await a_conversation(app)
    assert "page" not in await command(app, GENERAL, "stats", admin=False)
    found = LINK.search(await command(app, GENERAL, "stats", admin=True))
    assert found
    url = found[1]
    assert url.startswith(f"http://127.0.0.1:{served.port}/page/slack:T1:C1?until=")

    status, page, headers = await open_page(served.browser, url)
    assert status == 200
    assert headers["referrer-policy"] == "no-referrer"
    assert headers["cache-control"] == "no-store"
    body = await page.inner_text("body")
    assert "What the bot sees in slack:T1:C1" in body
    first = page.locator("tr.prompt").first
    assert QUESTION in await first.inner_text()
    for layer in ("system", "pins", "profile", "summary", "recall", "recent"):
        cell = first.locator(f"td.layer-{layer}")
        assert re.fullmatch(r"[\d,]+", await cell.inner_text())
    assert int(await first.locator("td.layer-system").inner_text()) > 0
    assert int(await first.locator("td.layer-pins").inner_text()) > 0

    messages = page.locator("#last-prompt ~ .message")
    roles = await messages.locator(".role").all_inner_texts()
    assert roles[0].lower() == "system" and roles[-1].lower() == "user"
    prompt = await messages.locator("pre").all_inner_texts()
    assert "You are a test assistant." in prompt[0]
    assert "The office is in Lisbon" in "\n".join(prompt)
    assert QUESTION in prompt[-1]  # as written: escaped, not markup
    assert await page.locator("#last-prompt ~ .message pre b").count() == 0

    assert "The office is in Lisbon" in await page.locator("tr.pin").first.inner_text()
    versions = page.locator("details.summary-version")
    assert await versions.count() == 2
    newest = await versions.first.inner_text()
    assert "+ - FACT launch is in March" in newest  # what the second version added
    assert "covers 2 messages" in newest
    recalled = await page.locator("tr.recalled").first.inner_text()
    assert "FACT the budget is 40k" in recalled and "budget" in recalled.split("\t")[-1]
    usage = "\n".join(await page.locator("tr.usage").all_inner_texts())
    assert "\tchat\t" in usage and "\tsummary\t" in usage
    for chart, words in (("usage-chart", "Tokens and cost per day"), ("layers-chart", "by layer")):
        image = page.locator(f"img.{chart}")
        assert words in (await image.get_attribute("alt") or "")
        assert await image.evaluate("img => img.complete && img.naturalWidth > 0")
    assert "RANDOM-ONLY" not in body and "what is the plan" not in body

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "page.png"
    await page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


async def test_the_page_is_refused_without_a_good_link_for_its_channel(served: Served) -> None:
    app = served.app
    await a_conversation(app)
    general = LINK.search(await command(app, GENERAL, "stats", admin=True))
    random = LINK.search(await command(app, RANDOM, "usage", admin=True))
    assert general and random
    path = urlsplit(general[1]).path
    tampered = general[1][:-1] + ("A" if not general[1].endswith("A") else "B")
    base = f"http://127.0.0.1:{served.port}"
    for url, status in (
        (f"{base}{path}", 401),
        (with_path(random[1], path), 403),
        (tampered, 403),
        (f"{base}{path}?token=wrong", 403),
        (f"{base}/page/", 401),
    ):
        got, page, headers = await open_page(served.browser, url)
        text = await page.inner_text("body")
        assert (got, url) == (status, url)
        assert "Not allowed" in text
        assert "Lisbon" not in text and "hello there" not in text
        assert headers["cache-control"] == "no-store"

    now = app.engine.clock()
    app.engine.clock = lambda: now + 15 * 60 + 1
    got, page, _ = await open_page(served.browser, general[1])
    assert got == 403
    assert "expired" in await page.inner_text("body")

    got, page, _ = await open_page(served.browser, f"{base}/page/?token={TOKEN}")
    assert got == 200
    links = await page.locator("a").all_inner_texts()
    assert links == ["slack:T1:C1", "slack:T1:C2"]
    await page.click("text=slack:T1:C2")
    assert "RANDOM-ONLY secret plan" in await page.inner_text("body")
    operator = await served.browser.new_page(
        extra_http_headers={"Authorization": f"Bearer {TOKEN}"}
    )
    response = await operator.goto(f"{base}{path}")
    assert response is not None and response.status == 200
    assert "The office is in Lisbon" in await operator.inner_text("body")
