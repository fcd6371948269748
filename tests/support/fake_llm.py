"""A local OpenAI-compatible HTTP server for tests: chat completions (whole, or streamed as
server-sent events with usage at the end), models, embeddings.

Tests point the real ``openai`` SDK at ``FakeLLM.url`` and script what it answers.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import itertools
import json
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, Self

import tiktoken
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

JSON = dict[str, Any]
CHAT_PATH = "/v1/chat/completions"
FLOAT32S = struct.Struct("<16f")  # embedding dimension 16
DEFAULT_MODELS = ("gpt-4o-mini", "gpt-4o", "local-model")


def _too_long(window: int, prompt: int, completion: int) -> JSON:
    """llama-cpp-python's answer to a request past the model's context."""
    message = (
        f"This model's maximum context length is {window} tokens. However, you requested "
        f"{prompt + completion} tokens ({prompt} in the messages, {completion} in the completion)."
        " Please reduce the length of the messages or completion."
    )
    return _error(message, "invalid_request_error", "context_length_exceeded", "messages")


def _error(message: str, type_: str, code: str | None, param: str | None = None) -> JSON:
    """An error body in OpenAI's shape."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


async def _json_body(request: web.Request) -> Any:
    """The request body parsed as JSON, or None (aiohttp caches the bytes read)."""
    try:
        return json.loads(await request.read() or b"null")
    except ValueError:
        return None


@dataclass(frozen=True)
class Break:
    """How a streamed reply goes wrong once ``after`` pieces of its text are sent: ``stall``
    (nothing more comes; the connection stays open), ``drop`` (the connection is cut) or
    ``error`` (an error event, as OpenAI sends one mid-stream)."""

    after: int
    how: Literal["stall", "drop", "error"] = "drop"


@dataclass(frozen=True)
class Reply:
    """One scripted answer to a chat completion request (``text=None`` gives ``content: null``)."""

    text: str | None = None
    delay: float = 0
    status: int = 200
    error: JSON | None = None
    headers: dict[str, str] = field(default_factory=dict)
    refusal: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    """Set: the usage says this many of the prompt's tokens came from the prompt cache
    (``prompt_tokens_details.cached_tokens``), as OpenAI's does."""
    raw_body: str | None = None
    raw_literal: str | None = None
    """The JSON string literal a :meth:`raw_content` reply's text is sent as (streamed too)."""
    close_connection: bool = False
    finish_reason: str = "stop"
    piece_delay: float = 0
    """Streamed: seconds between pieces."""
    breaks: Break | None = None
    """Streamed: how the stream fails part way (None: it does not)."""

    @classmethod
    def context_length(cls, max_tokens: int = 8192, requested: int = 9000) -> Reply:
        """HTTP 400 with code ``context_length_exceeded``, as OpenAI sends it."""
        message = (
            f"This model's maximum context length is {max_tokens} tokens. However, your "
            f"messages resulted in {requested} tokens. Please reduce the length of the messages."
        )
        body = _error(message, "invalid_request_error", "context_length_exceeded", "messages")
        return cls(status=400, error=body)

    @classmethod
    def rate_limited(cls, retry_after: float = 0.01) -> Reply:
        """HTTP 429 with a ``Retry-After`` header (seconds)."""
        body = _error("Rate limit reached for requests.", "requests", "rate_limit_exceeded")
        return cls(status=429, error=body, headers={"Retry-After": f"{retry_after:g}"})

    @classmethod
    def raw_content(cls, literal: str) -> Reply:
        """A well-formed completion whose content is the JSON string literal ``literal``
        (without its quotes), sent as written: ``hi \\ud83d`` arrives as a lone surrogate."""
        body = {
            "id": "chatcmpl-raw",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "@@"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13},
        }
        return cls(raw_body=json.dumps(body).replace("@@", literal), raw_literal=literal)

    @classmethod
    def server_error(cls) -> Reply:
        """HTTP 500 with OpenAI's generic server error body."""
        message = "The server had an error while processing your request. Sorry about that!"
        return cls(status=500, error=_error(message, "server_error", None))


Item = str | Reply
Responder = Callable[[JSON], Item]


@dataclass(frozen=True)
class Record:
    """One request the server received; ``body`` is parsed JSON or None, header names lowercase."""

    method: str
    path: str
    body: Any
    headers: dict[str, str]
    at: float = 0.0
    """When it arrived (``time.monotonic()``)."""


def echo(body: JSON) -> Item:
    """Default responder: ``echo: <content of the last user message>``."""
    users = [m for m in body["messages"] if isinstance(m, dict) and m.get("role") == "user"]
    content = users[-1].get("content") if users else ""
    if isinstance(content, list):  # content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return f"echo: {content if isinstance(content, str) else ''}"


@cache
def encoding_for(model: str) -> tiktoken.Encoding:
    """tiktoken encoding for ``model``; ``o200k_base`` for names tiktoken does not know."""
    try:
        return tiktoken.encoding_for_model(model)
    except KeyError:
        return tiktoken.get_encoding("o200k_base")


def _value_tokens(enc: tiktoken.Encoding, value: Any) -> int:
    if isinstance(value, str):
        return len(enc.encode_ordinary(value))
    if isinstance(value, list):  # content parts: count their text
        return sum(_value_tokens(enc, p.get("text", "")) for p in value if isinstance(p, dict))
    return 0 if value is None else len(enc.encode_ordinary(json.dumps(value)))


def count_prompt_tokens(model: str, messages: Sequence[JSON]) -> int:
    """Chat prompt tokens the way OpenAI counts them: 3 a message, +1 for ``name``, +3 priming."""
    enc = encoding_for(model)
    total = 3
    for message in messages:
        total += 3 + sum(_value_tokens(enc, v) for v in message.values())
        total += 1 if "name" in message else 0
    return total


_CJK_RUNS = re.compile("[\u3000-\u303f\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef]+")


def by_script(*, cjk: float, rest: float) -> Callable[[str, Sequence[JSON]], int]:
    """A server tokenizer that takes ``cjk`` times OpenAI's tokens for Chinese, Japanese and
    Korean text and ``rest`` times them for everything else (format overhead included): a
    small model's vocabulary, English-heavy, spends more on Han than tiktoken does. For
    ``FakeLLM.prompt_counter``."""

    def count(model: str, messages: Sequence[JSON]) -> int:
        enc = encoding_for(model)
        han = sum(
            len(enc.encode_ordinary(run))
            for message in messages
            for value in message.values()
            if isinstance(value, str)
            for run in _CJK_RUNS.findall(value)
        )
        other = count_prompt_tokens(model, messages) - han
        return round(han * cjk + other * rest)

    return count


def fake_embedding(text: str) -> list[float]:
    """Deterministic unit vector from a hash of ``text`` (values exact in float32)."""
    digest = hashlib.sha256(text.encode()).digest()
    vector = [x / 32767.5 - 1.0 for x in struct.unpack("<16H", digest)]
    norm = sum(x * x for x in vector) ** 0.5 or 1.0
    return list(FLOAT32S.unpack(FLOAT32S.pack(*(x / norm for x in vector))))


class FakeLLM:
    """OpenAI-compatible server on 127.0.0.1; ``async with`` it or ``start_in_thread()``."""

    def __init__(self, models: Sequence[str] = DEFAULT_MODELS) -> None:
        self.models = list(models)
        self.responder: Responder = echo
        self.sends_usage = True
        """False: chat completions say nothing of usage (some local servers), streamed or not."""
        self.prompt_token_factor: dict[str, float] = {}
        self.prompt_counter: dict[str, Callable[[str, Sequence[JSON]], int]] = {}
        """Per model: how the server counts a prompt (e.g. :func:`by_script`), in place of
        OpenAI's count times ``prompt_token_factor``."""
        self.context_window: dict[str, int] = {}
        """Per model: a request whose prompt (as this server counts it) plus ``max_tokens``
        exceeds this gets llama.cpp's HTTP 400 ``context_length_exceeded``; ``/v1/models``
        tells it as vLLM's does (``max_model_len``) while ``lists_window`` is set."""
        self.lists_window = True
        """False: ``/v1/models`` tells no window, as llama-cpp-python's server does not."""
        self.embedder: Callable[[str], list[float]] = fake_embedding
        """What the embeddings endpoint answers for each input text."""
        self.embeddings_status = 200
        self.embedding_tokens: int | None = None
        """Set: every embeddings request reports this many prompt tokens (else this server's
        count of its texts)."""
        self.embedding_seconds: tuple[float, float] = (0.0, 0.0)
        """Seconds per embeddings request and per text in it, spent one request at a time
        (a server computing on its own CPU, as a small local model does)."""
        self._embedding_lock: asyncio.Lock | None = None
        """Anything but 200: the embeddings endpoint fails with that status."""
        self.api_key: str | None = None
        """Set: every request without ``Authorization: Bearer <api_key>`` gets OpenAI's 401."""
        self.url = ""
        self._lock = threading.Lock()
        self._queue: deque[Item] = deque()
        self._requests: list[Record] = []
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self._thread: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None

    # -- scripting and inspection (safe from any thread) --

    def script(self, *items: Item) -> None:
        """Queue replies for the next chat completion requests, in order."""
        with self._lock:
            self._queue.extend(items)

    @property
    def pending(self) -> int:
        """Scripted items not yet consumed."""
        with self._lock:
            return len(self._queue)

    @property
    def requests(self) -> list[Record]:
        """A snapshot of every request received so far."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_records(self) -> list[Record]:
        """Chat completion requests, in order."""
        return [r for r in self.requests if r.path == CHAT_PATH]

    @property
    def chat_requests(self) -> list[JSON]:
        """Bodies of chat completion requests, in order."""
        return [r.body for r in self.requests if r.path == CHAT_PATH]

    def _next_item(self, body: JSON) -> Item:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.responder(body)

    # -- lifecycle --

    async def start(self) -> str:
        """Bind a free port and serve; returns ``self.url`` (ends in ``/v1``)."""
        app = web.Application(middlewares=[self._recorder()])
        app.router.add_post(CHAT_PATH, self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/v1/embeddings", self._embeddings)
        # a delayed reply stops when its client gives up, and at shutdown after 0.1 s
        runner = web.AppRunner(
            app, access_log=None, handler_cancellation=True, shutdown_timeout=0.1
        )
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self._runner = runner
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
        return self.url

    async def aclose(self) -> None:
        """Stop serving (pending handlers are cancelled after a short grace period)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @classmethod
    def start_in_thread(cls, models: Sequence[str] = DEFAULT_MODELS) -> Self:
        """Run a server in its own event loop on a daemon thread; call ``stop()`` when done."""
        llm = cls(models)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-llm", daemon=True)
        thread.start()
        llm._thread = (loop, thread)
        try:
            asyncio.run_coroutine_threadsafe(llm.start(), loop).result(timeout=30)
        except BaseException:
            llm.stop()
            raise
        return llm

    def stop(self) -> None:
        """Stop a server started with ``start_in_thread()`` and join its thread."""
        if self._thread is None:
            raise RuntimeError("stop() is for start_in_thread(); use aclose() in a loop")
        loop, thread = self._thread
        self._thread = None
        try:
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result(timeout=30)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- handlers --

    def _recorder(self) -> Middleware:
        @web.middleware
        async def record(request: web.Request, handler: Handler) -> web.StreamResponse:
            body = await _json_body(request)
            headers = {k.lower(): v for k, v in request.headers.items()}
            with self._lock:
                seen = Record(request.method, request.path, body, headers, time.monotonic())
                self._requests.append(seen)
            refused = self._unauthorized(headers.get("authorization", ""))
            if refused is not None:
                return web.json_response(refused, status=401)
            return await handler(request)

        return record

    def _unauthorized(self, authorization: str) -> JSON | None:
        """OpenAI's 401 body for a missing or wrong key, or None when the key is right."""
        if self.api_key is None:
            return None
        given = authorization.removeprefix("Bearer ").strip()
        if given == self.api_key:
            return None
        if not given:
            message = "You didn't provide an API key."
            return _error(message, "invalid_request_error", None)
        shown = f"{given[:3]}...{given[-4:]}" if len(given) > 8 else given
        message = f"Incorrect API key provided: {shown}."
        return _error(message, "invalid_request_error", "invalid_api_key")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await _json_body(request)
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            error = _error("'messages' is a required property", "invalid_request_error", None)
            return web.json_response(error, status=400)
        model = str(body.get("model", ""))
        window = self.context_window.get(model)
        if window is not None:
            prompt = self._usage(model, body["messages"], Reply(text=""))["prompt_tokens"]
            wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
            if prompt + wanted > window:
                return web.json_response(_too_long(window, prompt, wanted), status=400)
        item = self._next_item(body)
        reply = Reply(text=item) if isinstance(item, str) else item
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.close_connection:
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError  # ends the handler; aiohttp sends nothing
        if reply.raw_literal is not None and body.get("stream"):
            return await self._raw_stream(request, reply)
        if reply.raw_body is not None:
            ctype = "text/event-stream" if body.get("stream") else "application/json"
            status, headers = reply.status, reply.headers
            return web.Response(
                status=status, headers=headers, text=reply.raw_body, content_type=ctype
            )
        if reply.status >= 400:
            kind = "server_error" if reply.status >= 500 else "invalid_request_error"
            error = reply.error or _error(f"fake error {reply.status}", kind, None)
            return web.json_response(error, status=reply.status, headers=reply.headers)
        usage = self._usage(model, body["messages"], reply)
        cid, finish = f"chatcmpl-fake{next(self._ids)}", reply.finish_reason
        base = {"id": cid, "created": int(time.time()), "model": model}
        if body.get("stream"):
            return await self._stream(request, body, reply, base, usage)
        message = {"role": "assistant", "content": reply.text, "refusal": reply.refusal}
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
        result = {**base, "object": "chat.completion", "choices": [choice]}
        if self.sends_usage:
            result["usage"] = usage
        return web.json_response(result, status=reply.status, headers=reply.headers)

    def _usage(self, model: str, messages: list[JSON], reply: Reply) -> JSON:
        """The usage reported: ``prompt_tokens`` as the reply says, or as this server counts."""
        prompt = reply.prompt_tokens
        counter = self.prompt_counter.get(model)
        if prompt is None and counter is not None:
            prompt = counter(model, messages)
        if prompt is None:
            factor = self.prompt_token_factor.get(model, 1.0)
            prompt = round(count_prompt_tokens(model, messages) * factor)
        completion = reply.completion_tokens
        if completion is None:
            completion = len(encoding_for(model).encode_ordinary(reply.text or reply.refusal or ""))
        total = prompt + completion
        usage: JSON = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": total,
        }
        if reply.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
        return usage

    async def _stream(
        self, request: web.Request, body: JSON, reply: Reply, base: JSON, usage: JSON
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        response.content_type = "text/event-stream"
        await response.prepare(request)
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        include_usage = include_usage and self.sends_usage
        chunk = {**base, "object": "chat.completion.chunk"}
        if include_usage:
            chunk["usage"] = None

        async def send(data: JSON | str) -> None:
            text = data if isinstance(data, str) else json.dumps(data)
            await response.write(f"data: {text}\n\n".encode())

        def choice(delta: JSON, finish: str | None = None) -> JSON:
            item = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**chunk, "choices": [item]}

        await send(choice({"role": "assistant", "content": "", "refusal": None}))
        sent = 0
        for key, value in (("content", reply.text), ("refusal", reply.refusal)):
            for piece in re.findall(r"\s*\S+|\s+$", value or ""):
                if reply.breaks is not None and sent == reply.breaks.after:
                    return await self._break(request, response, reply.breaks, send)
                if reply.piece_delay:
                    await asyncio.sleep(reply.piece_delay)
                await send(choice({key: piece}))
                sent += 1
        await send(choice({}, reply.finish_reason))
        if include_usage:
            await send({**chunk, "choices": [], "usage": usage})
        await send("[DONE]")
        await response.write_eof()
        return response

    async def _raw_stream(self, request: web.Request, reply: Reply) -> web.StreamResponse:
        """A :meth:`Reply.raw_content` reply streamed: its text as one piece written as its
        literal, then the end."""
        response = web.StreamResponse(status=reply.status, headers=reply.headers)
        response.content_type = "text/event-stream"
        await response.prepare(request)
        delta = {"content": "@@"}
        chunk = {"id": "chatcmpl-raw", "object": "chat.completion.chunk", "created": 0}
        chunk.update(model="gpt-4o-mini", choices=[{"index": 0, "delta": delta}])
        data = json.dumps(chunk).replace("@@", reply.raw_literal or "")
        for event in (data, "[DONE]"):
            await response.write(f"data: {event}\n\n".encode())
        await response.write_eof()
        return response

    async def _break(
        self,
        request: web.Request,
        response: web.StreamResponse,
        how: Break,
        send: Callable[[JSON | str], Awaitable[None]],
    ) -> web.StreamResponse:
        if how.how == "stall":
            await asyncio.sleep(3600)  # cancelled when the client gives up
        if how.how == "drop":
            if request.transport is not None:
                request.transport.abort()
            raise asyncio.CancelledError  # ends the handler; aiohttp sends nothing more
        await send(_error("The server had an error while streaming.", "server_error", None))
        await response.write_eof()
        return response

    async def _models(self, request: web.Request) -> web.Response:
        data: list[JSON] = [
            {"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.models
        ]
        for entry in data:
            window = self.context_window.get(entry["id"]) if self.lists_window else None
            if window is not None:
                entry["max_model_len"] = window
        return web.json_response({"object": "list", "data": data})

    async def _embeddings(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        body = body if isinstance(body, dict) else {}
        if self.embeddings_status != 200:
            error = _error("embeddings unavailable", "server_error", None)
            return web.json_response(error, status=self.embeddings_status)
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        model = str(body.get("model", ""))
        per_request, per_text = self.embedding_seconds
        if per_request or per_text:
            self._embedding_lock = self._embedding_lock or asyncio.Lock()
            async with self._embedding_lock:
                await asyncio.sleep(per_request + per_text * len(texts))
        data = []
        for index, text in enumerate(texts):
            vector: list[float] | str = self.embedder(text)
            if body.get("encoding_format") == "base64":  # the SDK's default
                vector = base64.b64encode(FLOAT32S.pack(*vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": vector})
        tokens = sum(len(encoding_for(model).encode_ordinary(t)) for t in texts)
        tokens = tokens if self.embedding_tokens is None else self.embedding_tokens
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return web.json_response({"object": "list", "data": data, "model": model, "usage": usage})
