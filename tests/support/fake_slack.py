"""A local fake of Slack for tests: the Web API, response URLs and a Socket Mode websocket.

The real ``slack_sdk`` client reaches it through ``base_url`` (``FakeSlack.api_url``); every
call is recorded with its parameters. Socket Mode clients get this server's websocket from
``apps.connections.open``; tests push envelopes over it and read the acks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
import time
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar

from aiohttp import WSMsgType, web

JSON = dict[str, Any]
T = TypeVar("T")
TEAM = "T1"
BOT_USER = "UBOT"
BOT_ID = "BBOT"
_HISTORY_METHODS = ("conversations.history", "conversations.replies")
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def _streamed(params: JSON) -> str:
    """The Markdown a streaming call adds: ``markdown_text`` or its markdown chunks."""
    chunks = params.get("chunks") or []
    if isinstance(chunks, str):
        chunks = json.loads(chunks)
    text = str(params.get("markdown_text") or "")
    return text + "".join(
        str(c.get("text") or "") for c in chunks if c.get("type") == "markdown_text"
    )


@dataclass(frozen=True)
class Call:
    """One Web API call (or response URL post): method name and its parameters."""

    method: str
    params: JSON
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.monotonic)
    """When it was answered (``time.monotonic``)."""


@dataclass(frozen=True)
class Failure:
    """A scripted error answer for the next call of a method."""

    status: int = 200
    error: str = "fatal_error"
    retry_after: int | None = None


@dataclass(frozen=True)
class Upload:
    """A file shared through files.getUploadURLExternal, the upload and
    files.completeUploadExternal."""

    filename: str
    title: str
    content: bytes
    channel: str | None
    thread_ts: str | None
    initial_comment: str | None
    alt_text: str | None = None
    """What ``alt_txt`` said of an image."""


class FakeSlack:
    def __init__(self, users: dict[str, str] | None = None) -> None:
        self.users = dict(users or {})
        """User id → display name, for ``users.info``."""
        self.url = ""
        self.calls: list[Call] = []
        self.responses: list[Call] = []
        self.acks: list[JSON] = []
        self.uploads: list[Upload] = []
        """Files shared, completed uploads only."""
        self._uploading: dict[str, tuple[str, str | None, bytes | None]] = {}
        """File id → (filename, alt text, bytes once uploaded)."""
        self._failures: dict[str, deque[Failure]] = {}
        self.delays: dict[str, float] = {}
        """User id → seconds ``users.info`` takes for them."""
        self._ts = itertools.count(1)
        self.conversations: dict[str, JSON] = {}
        """Channel id → what ``conversations.info`` says of it, for those declared with
        :meth:`private_channel`, :meth:`dm` or :meth:`group_dm`; any other ``C`` or ``G``
        channel is public, any other DM unknown (``channel_not_found``, as for a DM the bot is
        not in)."""
        self.expired: set[str] = set()
        """Names of response URLs that have expired (Slack answers 404 ``expired_url``)."""
        self.history: dict[str, list[JSON]] = {}
        """Channel id → the messages written in it (threads' replies too), oldest first: what
        ``conversations.history`` and ``conversations.replies`` read."""
        self.history_limit: tuple[int, float] | None = None
        """(calls, seconds): each history method answers this many calls a window, then 429
        with ``Retry-After`` until the window ends."""
        self._windows: dict[str, tuple[float, int]] = {}
        self.slow: dict[str, float] = {}
        """Method → seconds it takes to answer."""
        self.arrived: list[str] = []
        """Methods called, as each call arrives (before it is answered)."""
        self.socket_url: str | None = None
        """What ``apps.connections.open`` answers instead of this server's websocket (a closed
        port, say)."""
        self.refuse_socket: int | None = None
        """An HTTP status the websocket is refused with, instead of upgraded."""
        self._envelopes = itertools.count(1)
        self._sockets: list[web.WebSocketResponse] = []
        self._socket_ready = asyncio.Event()
        self.connections = 0  # websockets accepted so far
        self._ack_arrived = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._thread: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None

    # -- scripting and inspection --

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.url}/respond/{name}"

    def fail(self, method: str, *failures: Failure) -> None:
        """Answer the next calls of ``method`` with these failures, in order."""
        self._failures.setdefault(method, deque()).extend(failures)

    def write(self, channel: str, message: JSON) -> None:
        """A message someone wrote while no event reaches the bot: only history has it."""
        self.history.setdefault(channel, []).append(dict(message))

    def private_channel(self, channel: str) -> None:
        self.conversations[channel] = {"id": channel, "is_channel": True, "is_private": True}

    def dm(self, channel: str, user: str) -> None:
        """``channel`` is ``user``'s DM with the bot."""
        self.conversations[channel] = {"id": channel, "is_im": True, "user": user}

    def group_dm(self, channel: str) -> None:
        self.conversations[channel] = {"id": channel, "is_mpim": True, "is_private": True}

    def views(self) -> list[JSON]:
        """The modals opened (``views.open``), each with its ``id``, oldest first."""
        return [call.params["view"] for call in self.calls if call.method == "views.open"]

    def submission(self, view: JSON, user: str, values: dict[str, str]) -> JSON:
        """The ``view_submission`` payload of ``view`` (as opened) submitted by ``user``
        with ``values`` (block id → text) in its text inputs."""
        state: dict[str, JSON] = {}
        for block in view.get("blocks", []):
            element = block.get("element") or {}
            if block.get("type") == "input" and block.get("block_id") in values:
                value = {"type": element["type"], "value": values[block["block_id"]]}
                state[block["block_id"]] = {element["action_id"]: value}
        name = self.users.get(user, user)
        return {
            "type": "view_submission",
            "team": {"id": TEAM, "domain": "fake-team"},
            "user": {"id": user, "username": name.lower(), "name": name.lower(), "team_id": TEAM},
            "api_app_id": "A1",
            "token": "unused",
            "trigger_id": f"{time.time_ns()}.{next(self._ts)}",
            "view": {**view, "team_id": TEAM, "state": {"values": state}},
            "response_urls": [],
            "is_enterprise_install": False,
        }

    def called(self, method: str) -> list[JSON]:
        return [call.params for call in self.calls if call.method == method]

    def messages(self) -> list[JSON]:
        """What the bot showed: posts, streams and updates (a placeholder replaced by its
        update), each with its ``text`` as it stands."""
        shown: dict[str, JSON] = {}
        for call in self.calls:
            ts = call.params.get("ts")
            if call.method in ("chat.postMessage", "chat.startStream"):
                shown[ts] = {**call.params, "text": _text(call.params)}
            elif call.method == "chat.update" and ts in shown:
                shown[ts]["text"] = _text(call.params)
            elif call.method in ("chat.appendStream", "chat.stopStream") and ts in shown:
                shown[ts]["text"] += _streamed(call.params)
            elif call.method == "chat.delete":
                shown.pop(ts, None)
        return list(shown.values())

    def streaming(self) -> set[str]:
        """The ts of streamed messages not stopped yet."""
        started = {c.params["ts"] for c in self.calls if c.method == "chat.startStream"}
        return started - {c.params["ts"] for c in self.calls if c.method == "chat.stopStream"}

    # -- lifecycle --

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/socket", self._socket)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self.url

    async def aclose(self) -> None:
        for socket in self._sockets:
            await socket.close()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @classmethod
    def start_in_thread(cls, users: dict[str, str] | None = None) -> Self:
        """Serve from an event loop on a daemon thread (for a bot run as a process); call
        ``stop()`` when done, and ``call()`` to run the async methods from the test."""
        fake = cls(users)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-slack", daemon=True)
        thread.start()
        fake._thread = (loop, thread)
        fake.call(fake.start())
        return fake

    def call(self, work: Coroutine[Any, Any, T], timeout: float = 30) -> T:
        """Run ``work`` on the server's thread and wait for its result."""
        assert self._thread is not None, "call() is for start_in_thread()"
        return asyncio.run_coroutine_threadsafe(work, self._thread[0]).result(timeout)

    def stop(self) -> None:
        assert self._thread is not None, "stop() is for start_in_thread()"
        loop, thread = self._thread
        try:
            self.call(self.aclose())
        finally:
            self._thread = None
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()

    # -- Socket Mode --

    async def push(
        self, kind: str, payload: JSON, *, retry_attempt: int = 0, socket: int = -1
    ) -> str:
        """Send an envelope (``events_api``, ``slash_commands``, ``interactive``) to the
        connected client (``socket``: which connection, in the order they opened, as Slack
        spreads events over an app's connections); returns its envelope id."""
        await asyncio.wait_for(self._socket_ready.wait(), timeout=5)
        envelope_id = f"env-{next(self._envelopes)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": retry_attempt,
            "retry_reason": "",
        }
        await self._sockets[socket].send_str(json.dumps(envelope))
        return envelope_id

    async def ack_for(self, envelope_id: str) -> JSON:
        """The client's acknowledgement of an envelope."""

        async def wait() -> JSON:
            while True:
                for ack in self.acks:
                    if ack.get("envelope_id") == envelope_id:
                        return ack
                self._ack_arrived.clear()
                await self._ack_arrived.wait()

        return await asyncio.wait_for(wait(), 5)

    async def drop_sockets(self) -> None:
        """Close every connected websocket (as Slack does when it goes away)."""
        for socket in self._sockets:
            await socket.close()
        self._sockets.clear()
        self._socket_ready.clear()

    async def _socket(self, request: web.Request) -> web.StreamResponse:
        if self.refuse_socket is not None:
            return web.Response(status=self.refuse_socket, text="refused")
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        self._sockets.append(socket)
        hello = {"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"}}
        await socket.send_str(json.dumps(hello))
        self._socket_ready.set()
        self.connections += 1
        try:
            async for message in socket:
                if message.type == WSMsgType.TEXT:
                    self.acks.append(json.loads(message.data))
                    self._ack_arrived.set()
        finally:  # a closed connection gets no more envelopes (Slack forgets it too)
            if socket in self._sockets:
                self._sockets.remove(socket)
            if not self._sockets:
                self._socket_ready.clear()
        return socket

    # -- the Web API --

    async def _params(self, request: web.Request) -> JSON:
        params: JSON = dict(request.query)
        if request.content_type == "application/json":
            params.update(await request.json())
        elif request.can_read_body:
            params.update(await request.post())
        return params

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        headers = {k.lower(): v for k, v in request.headers.items()}
        failures = self._failures.get(method)
        if failures:
            failure = failures.popleft()
            self.calls.append(Call(f"{method}!{failure.error}", params, headers))
            extra = {} if failure.retry_after is None else {"Retry-After": str(failure.retry_after)}
            body = {"ok": False, "error": failure.error}
            return web.json_response(body, status=failure.status, headers=extra)
        limited = self._rate_limited(method)
        if limited is not None:
            self.calls.append(Call(f"{method}!ratelimited", params, headers))
            body = {"ok": False, "error": "ratelimited"}
            return web.json_response(body, status=429, headers={"Retry-After": str(limited)})
        refused = (
            self._refused_stream(method, params)
            or self._missing(method, params)
            or self._invalid(method, params)
        )
        if refused is not None:
            self.calls.append(Call(f"{method}!{refused}", params, headers))
            return web.json_response({"ok": False, "error": refused})
        self.arrived.append(method)
        await asyncio.sleep(self.slow.get(method, 0))
        if method == "users.info":
            await asyncio.sleep(self.delays.get(str(params.get("user")), 0))
        answer = self._answer(method, params)
        if "ts" in answer and method in ("chat.postMessage", "chat.startStream"):
            params = {**params, "ts": answer["ts"]}
        self._show(method, params)
        self.calls.append(Call(method, params, headers))
        return web.json_response({"ok": True, **answer})

    def _missing(self, method: str, params: JSON) -> str | None:
        """``message_not_found`` for an update or deletion of a message the channel lacks."""
        if method not in ("chat.update", "chat.delete"):
            return None
        written = self.history.get(str(params.get("channel")), [])
        return None if any(m["ts"] == params.get("ts") for m in written) else "message_not_found"

    def _invalid(self, method: str, params: JSON) -> str | None:
        """``channel_not_found`` for ``conversations.info`` on a DM not declared;
        ``invalid_arguments`` for ``views.open`` without a trigger id or with a text input
        filled past its ``max_length``."""
        channel = str(params.get("channel") or "")
        if method == "conversations.info" and channel not in self.conversations:
            return None if channel.startswith(("C", "G")) else "channel_not_found"
        if method == "views.open":
            boxes = [b.get("element") or {} for b in params["view"].get("blocks", [])]
            overfull = any(
                len(box.get("initial_value") or "") > int(box.get("max_length") or 3000)
                for box in boxes
            )
            if overfull or not params.get("trigger_id"):
                return "invalid_arguments"
        return None

    def _show(self, method: str, params: JSON) -> None:
        """History follows what the bot posts, updates and deletes, as Slack's does."""
        channel = self.history.setdefault(str(params.get("channel")), [])
        if method in ("chat.postMessage", "chat.startStream"):
            posted: JSON = {"type": "message", "user": BOT_USER, "bot_id": BOT_ID}
            posted.update(ts=params["ts"], text=_text(params))
            if params.get("thread_ts"):
                posted["thread_ts"] = params["thread_ts"]
            metadata = params.get("metadata")
            if isinstance(metadata, str):
                metadata = json.loads(metadata)
            if metadata:
                posted["metadata"] = metadata
            channel.append(posted)
        elif method == "chat.update":
            for message in channel:
                if message["ts"] == params.get("ts"):
                    message["text"] = _text(params)
        elif method in ("chat.appendStream", "chat.stopStream"):
            for message in channel:
                if message["ts"] == params.get("ts"):
                    message["text"] += _streamed(params)
        elif method == "chat.delete":
            channel[:] = [m for m in channel if m["ts"] != params.get("ts")]

    def _refused_stream(self, method: str, params: JSON) -> str | None:
        """Slack's rules for streams: replies in a thread, to a named person outside DMs,
        appended to and stopped only while streaming."""
        if method == "chat.startStream":
            if not params.get("thread_ts"):
                return "invalid_arguments"
            in_dm = str(params.get("channel", "")).startswith("D")
            if not in_dm and not (
                params.get("recipient_user_id") and params.get("recipient_team_id")
            ):
                return "invalid_arguments"
        elif method in ("chat.appendStream", "chat.stopStream") and (
            params.get("ts") not in self.streaming()
        ):
            return "message_not_in_streaming_state"
        return None

    def _rate_limited(self, method: str) -> int | None:
        """Seconds to wait when ``history_limit`` refuses this call, else None."""
        if self.history_limit is None or method not in _HISTORY_METHODS:
            return None
        calls, window = self.history_limit
        now = time.monotonic()
        started, used = self._windows.get(method, (now, 0))
        if now - started >= window:
            started, used = now, 0
        if used >= calls:
            return max(1, math.ceil(window - (now - started)))
        self._windows[method] = (started, used + 1)
        return None

    def _read_history(self, method: str, params: JSON) -> JSON:
        """Newest first for a channel (its threads' replies left out), oldest first for a
        thread (its root first); between ``oldest`` and ``latest``, ``limit`` a page,
        ``cursor`` the offset."""
        written = self.history.get(str(params.get("channel")), [])
        oldest = float(params.get("oldest") or 0)
        if method == "conversations.history":
            found = [m for m in reversed(written) if m.get("thread_ts") in (None, m["ts"])]
        else:
            root = str(params.get("ts"))
            found = [m for m in written if m.get("thread_ts", m["ts"]) == root]
        latest = float(params.get("latest") or "inf")
        found = [
            m for m in found if (oldest < float(m["ts"]) < latest) or m["ts"] == params.get("ts")
        ]
        start = int(params.get("cursor") or 0)
        limit = int(params.get("limit") or 100)
        page = found[start : start + limit]
        more = start + limit < len(found)
        metadata = {"next_cursor": str(start + limit) if more else ""}
        return {"messages": page, "has_more": more, "response_metadata": metadata}

    def _answer(self, method: str, params: JSON) -> JSON:
        if method in _HISTORY_METHODS:
            return self._read_history(method, params)
        if method == "auth.test":
            return {
                "user_id": BOT_USER,
                "bot_id": BOT_ID,
                "team_id": TEAM,
                "user": "memorybot",
                "url": "https://fake-team.slack.com/",
            }
        if method == "apps.connections.open":
            return {"url": self.socket_url or f"{self.url.replace('http', 'ws', 1)}/socket"}
        if method == "users.info":
            user = str(params.get("user"))
            name = self.users.get(user, "")
            profile = {"display_name": name, "real_name": f"{name} Real"}
            return {"user": {"id": user, "name": name.lower(), "profile": profile}}
        if method in ("chat.postMessage", "chat.startStream"):
            ts = f"{int(time.time())}.{next(self._ts):06d}"  # after the people's, as on Slack
            return {"channel": params.get("channel"), "ts": ts, "message": {"text": ""}}
        if method in ("chat.update", "chat.delete", "chat.appendStream", "chat.stopStream"):
            return {"channel": params.get("channel"), "ts": params.get("ts")}
        if method == "conversations.info":
            channel = str(params.get("channel"))
            public = {"id": channel, "is_channel": True, "is_private": False}
            return {"channel": self.conversations.get(channel, public)}
        if method == "views.open":
            params["view"] = {**params["view"], "id": f"V{next(self._ts)}"}
            return {"view": params["view"]}
        if method == "chat.postEphemeral":
            return {"message_ts": f"{9000 + next(self._ts)}.000200"}
        if method.startswith("assistant.threads."):
            return {}  # setStatus, setTitle, setSuggestedPrompts: recorded, nothing to give back
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts)}"
            alt = params.get("alt_txt")
            self._uploading[file_id] = (str(params.get("filename")), alt, None)
            return {"upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            return {"files": [self._complete(f, params) for f in json.loads(params["files"])]}
        return {}

    def _complete(self, item: JSON, params: JSON) -> JSON:
        filename, alt, content = self._uploading.pop(item["id"])
        assert content is not None, "completed before the upload"
        upload = Upload(
            filename=filename,
            title=str(item.get("title") or filename),
            content=content,
            channel=params.get("channel_id"),
            thread_ts=params.get("thread_ts"),
            initial_comment=params.get("initial_comment"),
            alt_text=alt,
        )
        self.uploads.append(upload)
        return {"id": item["id"], "name": filename, "title": upload.title}

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        if file_id not in self._uploading:
            return web.Response(status=404, text="unknown upload")
        filename, alt, _ = self._uploading[file_id]
        self._uploading[file_id] = (filename, alt, await request.read())
        return web.Response(text="OK - 1")

    async def _respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        name = request.match_info["name"]
        if name in self.expired:
            return web.Response(status=404, text="expired_url")
        self.responses.append(Call(name, body))
        return web.Response(text="ok")


def _text(params: JSON) -> str:
    """A message's text as posted or updated: ``text``, else its Markdown."""
    return str(params.get("text") or _streamed(params))


def signed_headers(secret: str, body: str, *, content_type: str, age: float = 0) -> dict[str, str]:
    """Headers Slack sends with a request: timestamp and ``v0=`` HMAC signature."""
    from slack_sdk.signature import SignatureVerifier

    timestamp = str(int(time.time() - age))
    signature = SignatureVerifier(secret).generate_signature(timestamp=timestamp, body=body)
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": timestamp,
        "X-Slack-Signature": signature,
    }
