"""Talking to any OpenAI-compatible chat endpoint through the ``openai`` SDK.

One ``AsyncOpenAI`` per endpoint for the process. Chat completions retry 429 (honouring
Retry-After), 408, 409, 5xx, timeouts and dropped connections themselves, up to
``llm.max_retries`` times, all within one deadline (``llm.reply_deadline_seconds``): a wait
that would pass it fails at once. The body is read as plain JSON and checked, so that a
malformed answer is a failure, not a crash. Streams (``stream=True``, usage at the end) retry
only their opening and read each piece within the same deadline. Every failure becomes an
:class:`LLMError` whose ``user_message`` is short, honest and free of secrets.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import itertools
import json
import logging
import math
import random
import re
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar
from urllib.parse import urlsplit

import openai
from openai.types.chat import ChatCompletionChunk

from bot.core.ports.llm import (
    ApiKey,
    Completion,
    Failure,
    LLMError,
    StreamEnd,
    clean_text,
)
from bot.llm.windows import Window, told_window

log = logging.getLogger(__name__)

_CONTEXT_PATTERNS = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long"
    r"|exceeds the (?:model'?s )?(?:maximum|context)",
    re.IGNORECASE,
)


def is_local(base_url: str) -> bool:
    """Whether the endpoint is on this machine or a private network (Ollama, llama.cpp or vLLM
    next to the bot, a compose service name), where servers usually need no key."""
    host = urlsplit(base_url).hostname or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "." not in host or host == "localhost" or host.endswith(_LOCAL_SUFFIXES)
    return address.is_private or address.is_loopback or address.is_link_local


_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


def make_client(
    *, base_url: str, api_key: str | None, timeout: float, max_retries: int
) -> openai.AsyncOpenAI:
    # Local servers (Ollama, vLLM) need no key, but the SDK insists on one.
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key or "unused",
        timeout=timeout,
        max_retries=max_retries,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """How a completion is retried: at most ``retries`` more tries, each request at most
    ``timeout`` seconds, all of them within ``deadline`` seconds."""

    retries: int = 2
    timeout: float = 60.0
    deadline: float = 90.0


_INITIAL_BACKOFF = 0.5
_MAX_BACKOFF = 8.0


class OpenAIChatModel:
    """A :class:`ChatModel` on an ``AsyncOpenAI`` client shared per endpoint."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        temperature: float | None = None,
        policy: RetryPolicy | None = None,
        key: ApiKey | None = None,
    ) -> None:
        # The SDK's own retries would not know the deadline: this class retries instead.
        self._client = client.with_options(max_retries=0)
        self._model = model
        self._temperature = temperature
        self._policy = policy or RetryPolicy()
        self._key = key

    @property
    def model(self) -> str:
        return self._model

    @property
    def key(self) -> ApiKey | None:
        return self._key

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def listed_models(self) -> dict[str, Window | None] | None:
        """The models the server lists (``GET /models``) with the context window each entry
        tells, or None when it lists none or cannot: many local servers answer under any
        model name, so only their list shows a misspelt one."""
        try:
            page = await self._client.with_options(timeout=10.0).models.list()
        except openai.OpenAIError:
            return None
        listed = {model.id: told_window(model.model_dump()) async for model in page}
        return listed or None

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion:
        if deadline is None:
            deadline = time.monotonic() + self._policy.deadline

        async def request(within: float) -> Completion:
            return await self._request(messages, max_tokens=max_tokens, within=within)

        return await self._retrying(request, deadline)

    async def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> AsyncGenerator[str | StreamEnd, None]:
        """The reply as it is written. Opening the stream is retried as a completion is; once
        it is open a failure ends it (text already given cannot be taken back), and so does a
        wait for the next piece longer than the request timeout or past the deadline."""
        if deadline is None:
            deadline = time.monotonic() + self._policy.deadline
        started = time.perf_counter()

        async def request(within: float) -> openai.AsyncStream[ChatCompletionChunk]:
            return await self._open(messages, max_tokens=max_tokens, within=within)

        chunks = await self._retrying(request, deadline)
        reading = _StreamReading(self._model)
        async with chunks:  # closes the response however the stream ends
            while (chunk := await self._next_chunk(chunks, deadline)) is not None:
                piece = reading.take(chunk)
                if piece:
                    yield piece
            refusal = reading.refusal()
            if refusal:
                yield refusal
        yield reading.end(seconds=time.perf_counter() - started)

    async def _retrying(self, request: Callable[[float], Awaitable[_T]], deadline: float) -> _T:
        """``request(within)`` until it succeeds, retrying what :class:`_Retryable` says may
        be retried, each try bounded by the request timeout and all of them by ``deadline``."""
        policy = self._policy
        for attempt in itertools.count():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMError(Failure.TIMEOUT, "reply deadline passed")
            try:
                return await request(min(policy.timeout, remaining))
            except _Retryable as retryable:
                error = retryable.error
                wait = retryable.wait if retryable.wait is not None else _backoff(attempt)
                left = deadline - time.monotonic()
                if attempt >= policy.retries or wait >= left:
                    raise error from retryable.__cause__
                log.info("model request failed (%s); retrying in %.1f s", error, wait)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    @property
    def _temperature_option(self) -> float | openai.Omit:
        return openai.omit if self._temperature is None else self._temperature

    async def _request(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int, within: float
    ) -> Completion:
        """One request, no retries: a retryable failure comes as :class:`_Retryable`."""
        started = time.perf_counter()
        try:
            async with asyncio.timeout(within):  # the whole request, not each read
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self._model,
                    messages=[],
                    extra_body=_body(messages),
                    max_tokens=max_tokens,
                    timeout=within,
                    temperature=self._temperature_option,
                )
                body = raw.content
        except TimeoutError as exc:
            raise _Retryable(LLMError(Failure.TIMEOUT, "request timed out"), None) from exc
        except openai.APIError as exc:
            raise _request_failure(exc, self._key) from exc
        seconds = time.perf_counter() - started
        try:
            data = json.loads(body)
        except ValueError as exc:  # not JSON, or not text
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc
        return read_completion(data, model=self._model, seconds=seconds)

    async def _open(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int, within: float
    ) -> openai.AsyncStream[ChatCompletionChunk]:
        """A streamed request, up to its headers; failures as :meth:`_request` has them."""
        try:
            async with asyncio.timeout(within):
                return await self._client.chat.completions.create(
                    model=self._model,
                    messages=[],
                    extra_body=_body(messages),
                    max_tokens=max_tokens,
                    stream=True,
                    stream_options={"include_usage": True},
                    timeout=within,
                    temperature=self._temperature_option,
                )
        except TimeoutError as exc:
            raise _Retryable(LLMError(Failure.TIMEOUT, "request timed out"), None) from exc
        except openai.APIError as exc:
            raise _request_failure(exc, self._key) from exc

    async def _next_chunk(
        self, chunks: openai.AsyncStream[ChatCompletionChunk], deadline: float
    ) -> ChatCompletionChunk | None:
        """The stream's next chunk, None at its end; a stall or a broken stream is an
        :class:`LLMError` (no retry: the reply is under way)."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise LLMError(Failure.TIMEOUT, "reply deadline passed")
        try:
            async with asyncio.timeout(min(self._policy.timeout, remaining)):
                return await anext(chunks, None)
        except TimeoutError as exc:
            raise LLMError(Failure.TIMEOUT, "the stream stalled") from exc
        except openai.APIError as exc:
            raise classify(exc, self._key) from exc
        except ValueError as exc:  # an event that is not JSON
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc


_T = TypeVar("_T")


def _body(messages: Sequence[dict[str, str]]) -> dict[str, object]:
    """The messages as the request body carries them. They are plain role and content strings
    already, so they go in the body as they are (``messages=[]`` satisfies the signature; the
    SDK merges ``extra_body`` over it): through the typed parameter, the SDK walks every message
    against its union of message types with the GIL held, which was the bot's largest CPU cost
    under load (``bench/soak.py``), growing with the prompt (``bench/sdk_transform.py``)."""
    return {"messages": list(messages)}


class _StreamReading:
    """What a stream's chunks have said so far: text pieces as they come, the refusal, the
    finish reason, the usage (in the last chunk, with ``include_usage``)."""

    def __init__(self, model: str) -> None:
        self._model = model
        self._named: str | None = None
        self._texted = False
        self._chunks = 0  # chunks read: a body without any is not an event stream
        self._refusal: list[str] = []
        self._finish: str | None = None
        self._prompt_tokens: int | None = None
        self._completion_tokens: int | None = None
        self._cached_tokens = 0

    def take(self, chunk: ChatCompletionChunk) -> str:
        """The text this chunk adds (made storable; the reply's leading blanks dropped)."""
        self._chunks += 1
        named = getattr(chunk, "model", None)
        if isinstance(named, str) and named:
            self._named = clean_text(named)
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self._prompt_tokens = _count(getattr(usage, "prompt_tokens", None))
            self._completion_tokens = _count(getattr(usage, "completion_tokens", None))
            details = getattr(usage, "prompt_tokens_details", None)
            self._cached_tokens = _count(getattr(details, "cached_tokens", None)) or 0
        text = ""
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) != 0:
                continue
            finish = getattr(choice, "finish_reason", None)
            self._finish = str(finish) if finish is not None else self._finish
            delta = getattr(choice, "delta", None)
            content, refusal = getattr(delta, "content", None), getattr(delta, "refusal", None)
            if not isinstance(content, str | None) or not isinstance(refusal, str | None):
                raise LLMError(Failure.BAD_RESPONSE, "a chunk's content is not text")
            text += clean_text(content or "")
            self._refusal.append(refusal or "")
        if not self._texted:
            text = text.lstrip()
            self._texted = bool(text)
        return text

    def refusal(self) -> str:
        """What to show for a refusal when no text came; empty otherwise."""
        said = clean_text("".join(self._refusal)).strip()
        if self._texted or not said:
            return ""
        self._texted = True
        return f"(The model declined to answer: {said})"

    def end(self, *, seconds: float) -> StreamEnd:
        if not self._chunks:
            raise LLMError(Failure.BAD_RESPONSE, "the stream held no events")
        if not self._texted:
            raise LLMError(Failure.EMPTY, f"finish_reason={self._finish!r}")
        return StreamEnd(
            model=self._named or self._model,
            prompt_tokens=self._prompt_tokens,
            completion_tokens=self._completion_tokens,
            seconds=seconds,
            finish_reason=self._finish,
            cached_tokens=self._cached_tokens,
        )


class _Retryable(Exception):
    """A failure worth another try, after ``wait`` seconds (None: back off)."""

    def __init__(self, error: LLMError, wait: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait


def _request_failure(exc: openai.APIError, key: ApiKey | None) -> Exception:
    """A failed request as the retry loop takes it: :class:`_Retryable` or a final error."""
    error = classify(exc, key)
    if _should_retry(exc):
        return _Retryable(error, error.retry_after)
    return error


def _backoff(attempt: int) -> float:
    """The SDK's schedule: 0.5 s doubling up to 8 s, less up to a quarter of jitter."""
    return min(_INITIAL_BACKOFF * 2.0**attempt, _MAX_BACKOFF) * (1 - 0.25 * random.random())


def _should_retry(exc: openai.APIError) -> bool:
    """What the SDK retries: timeouts, dropped connections, 408, 409, 429 and 5xx, unless the
    server says otherwise (``x-should-retry``)."""
    if isinstance(exc, openai.APIConnectionError):  # timeouts too
        return True
    if not isinstance(exc, openai.APIStatusError):
        return False
    should = exc.response.headers.get("x-should-retry")
    if should in ("true", "false"):
        return should == "true"
    return exc.status_code in (408, 409, 429) or exc.status_code >= 500


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked to wait: ``retry-after-ms``, ``retry-after`` in seconds or as
    an HTTP date; None when it did not say (or said something unreadable)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def read_completion(data: object, *, model: str, seconds: float) -> Completion:
    """A chat completion body, checked: anything not in its shape is
    :attr:`Failure.BAD_RESPONSE`, and the text is made storable (:func:`clean_text`)."""
    if not isinstance(data, dict):
        raise LLMError(Failure.BAD_RESPONSE, "the body is not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise LLMError(Failure.BAD_RESPONSE, "no choices in the response")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise LLMError(Failure.BAD_RESPONSE, "no message in the first choice")
    content, refusal = message.get("content"), message.get("refusal")
    if not isinstance(content, str | None) or not isinstance(refusal, str | None):
        raise LLMError(Failure.BAD_RESPONSE, "the message's content is not text")
    text = clean_text(content or "").strip()
    if not text and refusal and refusal.strip():
        text = f"(The model declined to answer: {clean_text(refusal).strip()})"
    if not text:
        raise LLMError(Failure.EMPTY, f"finish_reason={choice.get('finish_reason')!r}")
    usage = data.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    named = data.get("model")
    return Completion(
        text=text,
        model=clean_text(named) if isinstance(named, str) and named else model,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        seconds=seconds,
        cached_tokens=_cached(usage),
    )


def _cached(usage: dict[str, object]) -> int:
    """``usage.prompt_tokens_details.cached_tokens``: 0 when the body does not say."""
    details = usage.get("prompt_tokens_details")
    if not isinstance(details, dict):
        return 0
    return _count(details.get("cached_tokens")) or 0


def _count(value: object) -> int | None:
    """A token count from the body, or None when it is not a count."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


_CONTEXT_WINDOW = re.compile(
    r"(?:maximum context length is|context window of|context length of|n_ctx[ =:]+)\s*(\d+)",
    re.IGNORECASE,
)
"""Where a context-length error states the model's window (OpenAI, llama.cpp, vLLM)."""


def classify(exc: openai.APIError, key: ApiKey | None = None) -> LLMError:
    if isinstance(exc, openai.APITimeoutError):
        return LLMError(Failure.TIMEOUT, "request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(Failure.UNAVAILABLE, "connection failed")
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMError(Failure.BAD_RESPONSE, "response did not validate")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        code = str(getattr(exc, "code", "") or "")
        if status in (401, 403):
            named = f"; {key.describe()}" if key is not None else ""
            return LLMError(Failure.AUTH, f"HTTP {status}{named}", key=key)
        if status == 429:
            wait = retry_after(exc.response.headers)
            return LLMError(Failure.RATE_LIMITED, "HTTP 429", retry_after=wait)
        if code == "context_length_exceeded" or (
            status in (400, 413, 422) and _CONTEXT_PATTERNS.search(exc.message or "")
        ):
            window = _CONTEXT_WINDOW.search(exc.message or "")
            return LLMError(
                Failure.CONTEXT_LENGTH,
                f"HTTP {status}"
                + (f"; the model's context is {window[1]} tokens" if window else ""),
                context=int(window[1]) if window else None,
            )
        if status >= 500:
            wait = retry_after(exc.response.headers)
            return LLMError(Failure.UNAVAILABLE, f"HTTP {status}", retry_after=wait)
        return LLMError(Failure.BAD_REQUEST, f"HTTP {status} {code}".strip())
    return LLMError(Failure.BAD_RESPONSE, type(exc).__name__)
