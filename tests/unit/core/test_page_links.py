"""Links to a channel's page: good for their channel only, until they expire, and only as
signed; the secret made once per database; ``/stats`` and ``/usage`` give one to a channel's
admins only, and only while the page is on."""

from __future__ import annotations

import re
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation
from bot.core.page_links import check, link, page_secret, token_matches
from bot.store.memory import MemoryStore
from tests.support.core import running_core, unit_config

SECRET = bytes(range(32))
GENERAL = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "5.0")
NOW = 1_800_000_000.0
URL = re.compile(r"The page for this channel \(good for 15 min\): (\S+)")


def parts(url: str) -> tuple[str, str, str]:
    split = urlsplit(url)
    query = parse_qs(split.query)
    return split.path, query["until"][0], query["sig"][0]


def good_link(channel_key: str = GENERAL.channel_key) -> tuple[str, str, str]:
    return parts(link("https://bot.example.com/", SECRET, channel_key, now=NOW, minutes=15))


def test_a_link_opens_its_channel_until_it_expires() -> None:
    path, until, sig = good_link()
    assert path == "/page/slack:T1:C1"
    assert int(until) == NOW + 15 * 60
    assert check(SECRET, "slack:T1:C1", until=until, sig=sig, now=NOW).allowed
    assert check(SECRET, "slack:T1:C1", until=until, sig=sig, now=NOW + 899).allowed
    expired = check(SECRET, "slack:T1:C1", until=until, sig=sig, now=NOW + 900)
    assert not expired.allowed and "expired" in expired.reason


def test_a_link_opens_no_other_channel() -> None:
    _, until, sig = good_link()
    for other in ("slack:T1:C2", "slack:T2:C1", "discord:T1:C1", "slack:T1:C1:5.0"):
        assert not check(SECRET, other, until=until, sig=sig, now=NOW).allowed


def test_a_tampered_or_missing_link_opens_nothing() -> None:
    _, until, sig = good_link()
    later = str(int(until) + 3600)
    flipped = ("A" if sig[0] != "A" else "B") + sig[1:]
    assert not check(SECRET, "slack:T1:C1", until=later, sig=sig, now=NOW).allowed
    assert not check(SECRET, "slack:T1:C1", until=until, sig=flipped, now=NOW).allowed
    assert not check(SECRET, "slack:T1:C1", until=until, sig="é" + sig, now=NOW).allowed
    assert not check(bytes(32), "slack:T1:C1", until=until, sig=sig, now=NOW).allowed
    assert not check(SECRET, "slack:T1:C1", until="-1", sig=sig, now=NOW).allowed
    missing = check(SECRET, "slack:T1:C1", until=None, sig=None, now=NOW)
    assert not missing.allowed and "/stats" in missing.reason


def test_the_operator_token_matches_only_itself() -> None:
    assert token_matches("s3cret", "s3cret")
    assert not token_matches("s3cre", "s3cret")
    assert not token_matches("", "")
    assert not token_matches("anything", None)


async def test_the_secret_is_made_once_and_kept() -> None:
    store = MemoryStore()
    first = await page_secret(store)
    assert len(first) == 32
    assert await page_secret(store) == first
    assert await page_secret(MemoryStore()) != first


def stats_call(name: str, *, admin: bool, where: Conversation = GENERAL) -> CommandCall:
    return CommandCall(where, name, "", "U1", "Ana", can_manage=admin)


async def test_stats_and_usage_give_an_admin_a_link_for_the_channel() -> None:
    config = unit_config(http={"host": "127.0.0.1", "port": 8080, "page": {"enabled": True}})
    async with running_core(config) as core:
        core.engine.clock = lambda: NOW
        secret = await page_secret(core.store)
        for name in ("stats", "usage"):
            reply = await run_command(core.engine, stats_call(name, admin=True, where=THREAD))
            assert reply.ephemeral
            found = URL.search(reply.text)
            assert found, reply.text
            assert found[1].startswith("http://127.0.0.1:8080/page/slack:T1:C1?")
            _, until, sig = parts(found[1])
            assert check(secret, "slack:T1:C1", until=until, sig=sig, now=NOW).allowed
            for_member = await run_command(core.engine, stats_call(name, admin=False))
            assert "page" not in for_member.text and "http" not in for_member.text


async def test_no_link_while_the_page_is_off_and_the_public_url_when_set() -> None:
    async with running_core(unit_config(http={"port": 8080})) as core:
        reply = await run_command(core.engine, stats_call("stats", admin=True))
        assert "The page" not in reply.text
    config = unit_config(
        http={"port": 8080, "page": {"enabled": True, "public_url": "https://bot.example.com"}}
    )
    async with running_core(config) as core:
        reply = await run_command(core.engine, stats_call("usage", admin=True))
        assert "): https://bot.example.com/page/slack:T1:C1?until=" in reply.text


async def test_a_chart_posted_for_the_channel_carries_no_link() -> None:
    config = unit_config(http={"host": "127.0.0.1", "port": 8080, "page": {"enabled": True}})
    async with running_core(config) as core:
        for name in ("stats", "usage"):
            call = stats_call(name, admin=True)
            reply = await run_command(core.engine, replace(call, argument="chart"))
            assert reply.attachments and not reply.ephemeral
            assert "page" not in reply.text and "http" not in reply.text, reply.text
