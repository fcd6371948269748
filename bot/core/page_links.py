"""Signed links to a channel's page: scoped to one channel, good until a time, signed with a
secret every process sharing the database shares (kept in the store, made once)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import quote

from bot.core.ports.meta import MetaStore

SECRET_KEY = "page_secret"
"""The store's meta key the secret is kept under (hex)."""

PAGE_PATH = "/page/"
"""Where the pages are: ``/page/<channel key>``."""


async def page_secret(store: MetaStore) -> bytes:
    """The links' secret: 32 random bytes made by the first process to ask, then the same for
    every process of the database and across restarts."""
    return bytes.fromhex(await store.meta_once(key=SECRET_KEY, value=secrets.token_hex(32)))


def signature(secret: bytes, channel_key: str, until: int) -> str:
    """The link's signature over its channel and its end (URL-safe base64 of HMAC-SHA256)."""
    mac = hmac.new(secret, f"{channel_key}\n{until}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def page_path(channel_key: str) -> str:
    return PAGE_PATH + quote(channel_key, safe=":")


def link(base_url: str, secret: bytes, channel_key: str, *, now: float, minutes: float) -> str:
    """The channel's page at ``base_url``, good for ``minutes`` from ``now``."""
    until = int(now + minutes * 60)
    sig = signature(secret, channel_key, until)
    return f"{base_url.rstrip('/')}{page_path(channel_key)}?until={until}&sig={sig}"


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: str
    """Why not, in a few words (shown on the refusal page); "" when allowed."""


ALLOWED = Verdict(True, "")


def check(
    secret: bytes, channel_key: str, *, until: str | None, sig: str | None, now: float
) -> Verdict:
    """Whether a link's ``until`` and ``sig`` open ``channel_key``'s page at ``now``: signed
    for that channel and that end, and not past it (compared in constant time)."""
    if not until or not sig:
        return Verdict(False, "This page needs a link from /stats or /usage.")
    if not until.isdigit() or len(until) > 12:
        return Verdict(False, "This link is not valid.")
    expected = signature(secret, channel_key, int(until))
    if not hmac.compare_digest(expected.encode(), sig.encode("utf-8", "replace")):
        return Verdict(False, "This link is not valid for this page.")
    if int(until) <= now:
        return Verdict(False, "This link has expired: ask /stats or /usage for a new one.")
    return ALLOWED


def token_matches(given: str | None, token: str | None) -> bool:
    """Whether ``given`` is the operators' token (constant time; no token set: never)."""
    if not token or not given:
        return False
    return hmac.compare_digest(given.encode(), token.encode())
