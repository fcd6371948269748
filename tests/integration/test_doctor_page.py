"""``bot doctor`` says which budgets are in force and whether the page's links open where
people are: a warning for links only this machine can open, or sent over plain HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.ops.doctor import run_checks
from bot.wiring import open_app
from tests.conftest import ConfigFactory


async def doctor(make_config: ConfigFactory, **sections: Any) -> dict[str, str]:
    async with open_app(make_config(**sections)) as app:
        lines: list[str] = []
        await run_checks(app, Path("config.yaml"), lambda check: lines.append(check.line()))
    return {line.split(":", 1)[0]: line for line in lines}


async def test_doctor_lists_the_budgets_and_says_the_page_is_off(
    make_config: ConfigFactory,
) -> None:
    lines = await doctor(make_config, budgets={"channel": {"day": "$2"}, "workspace": {}})
    assert lines["ok   spend"] == "ok   spend: budgets: channel day $2.00"
    assert lines["ok   page"] == "ok   page: off (http.page.enabled)"


async def test_doctor_warns_of_links_only_this_machine_can_open(
    make_config: ConfigFactory,
) -> None:
    page = {"enabled": True}
    lines = await doctor(make_config, http={"host": "127.0.0.1", "port": 9090, "page": page})
    assert lines["warn page"] == (
        "warn page: links to http://127.0.0.1:9090/page/… good for 15 min; no operators' token "
        "(BOT_PAGE_TOKEN); links open only on this machine: set http.page.public_url"
    )


async def test_doctor_warns_of_links_sent_over_plain_http(make_config: ConfigFactory) -> None:
    page = {"enabled": True, "public_url": "http://bot.example.com", "link_minutes": 5}
    lines = await doctor(make_config, http={"port": 9090, "page": page})
    assert lines["warn page"].endswith("a link is a password while it is good: serve it over HTTPS")
    page["public_url"] = "https://bot.example.com"
    lines = await doctor(make_config, http={"port": 9090, "page": page})
    assert lines["ok   page"] == (
        "ok   page: links to https://bot.example.com/page/… good for 5 min; "
        "no operators' token (BOT_PAGE_TOKEN)"
    )
