"""Talking to any OpenAI-compatible chat endpoint through the ``openai`` SDK.

One ``AsyncOpenAI`` per endpoint for the process. Chat completions retry 429 (honouring
Retry-After), 408, 409, 5xx, timeouts and dropped connections themselves, up to
``llm.max_retries`` times, all within one deadline (``llm.reply_deadline_seconds``): a wait
that would pass it fails at once. The body is read as plain JSON and checked, so that a
malformed answer is a failure, not a crash. Every failure becomes an :class:`LLMError` whose
``user_message`` is short, honest and free of secrets.
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import openai

from bot.core.ports.llm import (
    ApiKey,
    Completion,
    Failure,
    LLMError,
    clean_text,
)

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

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion:
        policy = self._policy
        if deadline is None:
            deadline = time.monotonic() + policy.deadline
        for attempt in itertools.count():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise LLMError(Failure.TIMEOUT, "reply deadline passed")
            try:
                return await self._request(
                    messages, max_tokens=max_tokens, within=min(policy.timeout, remaining)
                )
            except _Retryable as retryable:
                error = retryable.error
                wait = retryable.wait if retryable.wait is not None else _backoff(attempt)
                left = deadline - time.monotonic()
                if attempt >= policy.retries or wait >= left:
                    raise error from retryable.__cause__
                log.info("model request failed (%s); retrying in %.1f s", error, wait)
                await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def _request(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int, within: float
    ) -> Completion:
        """One request, no retries: a retryable failure comes as :class:`_Retryable`."""
        extra: dict[str, Any] = {}
        if self._temperature is not None:
            extra["temperature"] = self._temperature
        started = time.perf_counter()
        try:
            async with asyncio.timeout(within):  # the whole request, not each read
                # The messages go in ``extra_body``: they are plain dicts of strings already,
                # so the SDK's type-driven transform of each message is skipped.
                raw = await self._client.chat.completions.with_raw_response.create(
                    model=self._model,
                    messages=[],
                    max_tokens=max_tokens,
                    extra_body={"messages": list(messages)},
                    timeout=within,
                    **extra,
                )
                body = raw.content
        except TimeoutError as exc:
            raise _Retryable(LLMError(Failure.TIMEOUT, "request timed out"), None) from exc
        except openai.APIError as exc:
            error = _classify(exc, self._key)
            if _should_retry(exc):
                raise _Retryable(error, error.retry_after) from exc
            raise error from exc
        seconds = time.perf_counter() - started
        try:
            data = json.loads(body)
        except ValueError as exc:  # not JSON, or not text
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc
        return read_completion(data, model=self._model, seconds=seconds)


class _Retryable(Exception):
    """A failure worth another try, after ``wait`` seconds (None: back off)."""

    def __init__(self, error: LLMError, wait: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait = wait


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
    refused = bool(refusal and refusal.strip()) and not text
    if refused:
        assert refusal is not None
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
        refused=refused,
    )


def _count(value: object) -> int | None:
    """A token count from the body, or None when it is not a count."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


class OpenAIEmbedder:
    """An :class:`Embedder` on the ``embeddings`` API of an OpenAI-compatible endpoint."""

    def __init__(
        self, client: openai.AsyncOpenAI, model: str, *, key: ApiKey | None = None
    ) -> None:
        self._client = client
        self._model = model
        self._key = key

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            response = await self._client.embeddings.create(model=self._model, input=list(texts))
        except openai.APIError as exc:
            raise _classify(exc, self._key) from exc
        except (ValueError, TypeError) as exc:
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc
        data = sorted(response.data or [], key=lambda item: item.index)
        if len(data) != len(texts):
            raise LLMError(Failure.BAD_RESPONSE, f"{len(data)} embeddings for {len(texts)} texts")
        return [list(item.embedding) for item in data]


def _classify(exc: openai.APIError, key: ApiKey | None = None) -> LLMError:
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
            return LLMError(Failure.CONTEXT_LENGTH, f"HTTP {status}")
        if status >= 500:
            wait = retry_after(exc.response.headers)
            return LLMError(Failure.UNAVAILABLE, f"HTTP {status}", retry_after=wait)
        return LLMError(Failure.BAD_REQUEST, f"HTTP {status} {code}".strip())
    return LLMError(Failure.BAD_RESPONSE, type(exc).__name__)
