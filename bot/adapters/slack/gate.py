"""HTTP mode's door in front of Bolt: nothing reaches Bolt unless Slack signed it and it has a
shape Slack sends.

The signature is checked over the raw bytes before anything is decoded or parsed, so an
unsigned request costs an HMAC and is never logged. Refused requests are counted per reason
and reported in one short line per reason per minute, never with their content.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024
"""The largest body read; Slack's payloads are far smaller."""
MAX_AGE_SECONDS = 300
"""Slack's replay window: a timestamp further off than this is refused."""
REPORT_SECONDS = 60.0
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")


class RawBodyVerifier(SignatureVerifier):
    """slack_sdk's verifier over the body's bytes as they came: the base class decodes them as
    UTF-8 first, which raises on anything else."""

    def generate_signature(self, *, timestamp: str, body: str | bytes) -> str | None:
        raw = body if isinstance(body, bytes) else body.encode()
        base = b"v0:" + timestamp.encode() + b":" + raw
        digest = hmac.new(self.signing_secret.encode(), base, hashlib.sha256).hexdigest()
        return f"v0={digest}"


class Refused(Exception):
    """Why a request is turned away, and the status it gets."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(status, reason)
        self.status = status
        self.reason = reason


def check_signature(
    verifier: SignatureVerifier, headers: Mapping[str, str], body: bytes, now: float
) -> None:
    """Raise :class:`Refused` (401) unless Slack's headers sign ``body`` within the window."""
    timestamp = headers.get("X-Slack-Request-Timestamp")
    signature = headers.get("X-Slack-Signature")
    if timestamp is None or signature is None:
        raise Refused(401, "unsigned")
    if not _TIMESTAMP.fullmatch(timestamp):
        raise Refused(401, "bad timestamp")
    if abs(now - int(timestamp)) > MAX_AGE_SECONDS:
        raise Refused(401, "stale timestamp")
    if not _SIGNATURE.fullmatch(signature) or not verifier.is_valid(body, timestamp, signature):
        raise Refused(401, "bad signature")


_EVENT_STRINGS = (
    "type", "user", "channel", "ts", "thread_ts", "text", "subtype", "bot_id", "channel_type",
    "deleted_ts", "parent_user_id", "team", "reaction",
)  # fmt: skip
_INNER_STRINGS = ("type", "user", "channel", "ts", "thread_ts", "text", "bot_id")
_COMMAND_FIELDS = ("team_id", "channel_id", "user_id", "response_url")


def _strings(data: Mapping[str, Any], keys: tuple[str, ...]) -> bool:
    """Whether each of ``keys`` present in ``data`` holds a string, as Slack sends them."""
    return all(isinstance(data[key], str) for key in keys if data.get(key) is not None)


def _object_with_id(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("id"), str) and bool(value["id"])


def _event_problem(data: Mapping[str, Any]) -> str | None:
    event = data.get("event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return "event callback without an event"
    inner = [event.get(key) for key in ("message", "previous_message", "item")]
    if not _strings(data, ("team_id", "event_id")) or not _strings(event, _EVENT_STRINGS):
        return "event field of the wrong type"
    if not all(v is None or (isinstance(v, dict) and _strings(v, _INNER_STRINGS)) for v in inner):
        return "event field of the wrong type"
    return None


def _interaction_problem(payload: Mapping[str, Any]) -> str | None:
    kind = payload.get("type")
    if not isinstance(kind, str):
        return "payload without a type"
    if kind == "block_actions":
        actions = payload.get("actions")
        if not (isinstance(actions, list) and actions and isinstance(actions[0], dict)):
            return "block actions without actions"
    if kind == "message_action" and not (
        isinstance(payload.get("message"), dict)
        and all(_object_with_id(payload.get(key)) for key in ("channel", "user", "team"))
    ):
        return "shortcut without its message, channel, user or team"
    if kind == "view_submission" and not (
        isinstance(payload.get("view"), dict)
        and _strings(payload["view"], ("callback_id", "private_metadata"))
        and _object_with_id(payload.get("user"))
    ):
        return "view submission without its view or user"
    return None


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def check_payload(body: bytes, content_type: str) -> str:
    """The body as text, when it has a shape Slack sends; else raise :class:`Refused` (400).

    JSON and forms are told apart the way Bolt parses them: JSON for ``application/json`` or
    a body starting with ``{``; a form carrying ``payload`` holds a JSON object there."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(400, "not UTF-8") from None
    if content_type == "application/json" or text.startswith("{"):
        data = _json_object(text)
        if data is None:
            raise Refused(400, "not a JSON object")
        kind = data.get("type")
        problem = None
        if kind == "event_callback":
            problem = _event_problem(data)
        elif kind == "url_verification" and not isinstance(data.get("challenge"), str):
            problem = "url verification without a challenge"
        if problem:
            raise Refused(400, problem)
        return text
    form = dict(parse_qsl(text, keep_blank_values=True))
    if "payload" in text and "payload" in form:
        payload = _json_object(form["payload"])
        if payload is None:
            raise Refused(400, "payload not a JSON object")
        problem = _interaction_problem(payload)
        if problem:
            raise Refused(400, problem)
    elif "command" in form and not all(form.get(key) for key in _COMMAND_FIELDS):
        raise Refused(400, "command without its team, channel, user or response URL")
    return text


@dataclass
class _Tally:
    count: int = 0
    size: int = 0


class Refusals:
    """Counts refused requests and logs one line per reason per ``window`` seconds: how many,
    how many bytes, and why. Call :meth:`close` at the end to report what is still counted."""

    def __init__(self, *, window: float = REPORT_SECONDS) -> None:
        self.window = window
        self._tallies: dict[tuple[int, str], _Tally] = {}
        self._timers: dict[tuple[int, str], asyncio.TimerHandle] = {}

    def add(self, refused: Refused, size: int) -> None:
        key = (refused.status, refused.reason)
        tally = self._tallies.setdefault(key, _Tally())
        tally.count += 1
        tally.size += size
        if key not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[key] = loop.call_later(self.window, self._report, key)

    def _report(self, key: tuple[int, str]) -> None:
        self._timers.pop(key, None)
        tally = self._tallies.pop(key, None)
        if tally is None:
            return
        status, reason = key
        plural = "request" if tally.count == 1 else "requests"
        log.warning(
            "slack: refused %d %s (%d %s), %s bytes in all",
            tally.count,
            plural,
            status,
            reason,
            f"{tally.size:,}",
        )

    def close(self) -> None:
        for key, timer in list(self._timers.items()):
            timer.cancel()
            self._report(key)


class ServerLog(logging.LoggerAdapter[logging.Logger]):
    """aiohttp's server logger for the Slack port: a request that is not even valid HTTP
    (bad header bytes, a line too long) is counted as refused instead of logged with its
    traceback and an excerpt of its bytes."""

    def __init__(self, refusals: Refusals) -> None:
        super().__init__(logging.getLogger("aiohttp.server"))
        self.refusals = refusals

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if isinstance(kwargs.get("exc_info"), HttpProcessingError):
            self.refusals.add(Refused(400, "malformed HTTP"), 0)
            return
        super().log(level, msg, *args, **kwargs)


class Gate:
    """The aiohttp handler for Slack's requests: checks them, then hands them to Bolt."""

    def __init__(
        self,
        bolt: AsyncApp,
        signing_secret: str,
        *,
        refusals: Refusals | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.bolt = bolt
        self.verifier = RawBodyVerifier(signing_secret)
        self.refusals = refusals or Refusals()
        self.clock = clock

    def runner(self, path: str) -> web.AppRunner:
        """An aiohttp runner serving :meth:`handle` on ``path``."""
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(path, self.handle)
        return web.AppRunner(app, access_log=None, logger=ServerLog(self.refusals))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        size = request.content_length or 0
        try:
            if size > MAX_BODY_BYTES:
                raise Refused(413, "too large")
            body = await self._read(request)
            size = len(body)
            check_signature(self.verifier, request.headers, body, self.clock())
            text = check_payload(body, request.content_type)
            bolt_request = self._bolt_request(request, text)
        except Refused as refused:
            self.refusals.add(refused, size)
            return web.json_response({"error": refused.reason}, status=refused.status)
        return await to_aiohttp_response(await self.bolt.async_dispatch(bolt_request))

    @staticmethod
    async def _read(request: web.Request) -> bytes:
        try:
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            raise Refused(413, "too large") from None

    @staticmethod
    def _bolt_request(request: web.Request, text: str) -> AsyncBoltRequest:
        """Bolt's request, as its aiohttp adapter builds it; a signed body whose fields Bolt
        cannot read is refused like any other malformed one."""
        try:
            return AsyncBoltRequest(
                body=text, query=request.query_string, headers=dict(request.headers)
            )
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            raise Refused(400, "unreadable payload") from None
