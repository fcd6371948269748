"""Headless Chromium from Debian's packages, driven by Playwright (never a downloaded browser).

Tests needing it skip when it is missing, except where ``BOT_TEST_REQUIRE_BROWSER`` or ``CI``
is set (``.ci/run``): there a missing browser fails them."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Browser, async_playwright

from tests.support.paths import ROOT

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = ROOT / "test-artifacts"
"""Screenshots and the like, kept by CI (git-ignored)."""


def required() -> bool:
    return bool(os.environ.get("BOT_TEST_REQUIRE_BROWSER") or os.environ.get("CI"))


def require_chromium() -> None:
    """Skip the test when the browser is missing; fail it where one is required."""
    if not CHROMIUM.exists():
        message = f"{CHROMIUM} is missing (apt-get install chromium chromium-driver)"
        if required():
            pytest.fail(f"a browser is required here (BOT_TEST_REQUIRE_BROWSER, CI): {message}")
        pytest.skip(message)


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """The browser, closed afterwards (Playwright gives each launch a fresh profile)."""
    require_chromium()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield browser
        finally:
            await browser.close()
