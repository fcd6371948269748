"""Talking to any OpenAI-compatible chat endpoint through the ``openai`` SDK.

One ``AsyncOpenAI`` per endpoint for the process. The SDK retries 429 (honouring
Retry-After), 408, 409, 5xx and dropped connections with exponential backoff, up to
``llm.max_retries`` times; every failure that is left becomes an :class:`LLMError` whose
``user_message`` is short, honest and free of secrets.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

import openai

log = logging.getLogger(__name__)

_CONTEXT_PATTERNS = re.compile(
    r"context[_ ]length|maximum context|context window|too many tokens|prompt is too long"
    r"|exceeds the (?:model'?s )?(?:maximum|context)",
    re.IGNORECASE,
)


class Failure(StrEnum):
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "unavailable"
    AUTH = "auth"
    CONTEXT_LENGTH = "context_length"
    BAD_REQUEST = "bad_request"
    BAD_RESPONSE = "bad_response"
    EMPTY = "empty"


_USER_MESSAGES = {
    Failure.TIMEOUT: "The model did not answer in time. Your message is saved; please try again.",
    Failure.RATE_LIMITED: (
        "The model's server is rate-limiting requests. Your message is saved; "
        "please try again in a minute."
    ),
    Failure.UNAVAILABLE: (
        "I could not reach the model right now. Your message is saved; please try again shortly."
    ),
    Failure.AUTH: (
        "The model endpoint refused the bot's credentials; an operator needs to check the API key."
    ),
    Failure.CONTEXT_LENGTH: (
        "The conversation is too long for the model even after trimming. "
        "Try /summarize, or unpin something."
    ),
    Failure.BAD_REQUEST: (
        "The model endpoint rejected the request; an operator should check the model name "
        "and the logs. Your message is saved."
    ),
    Failure.BAD_RESPONSE: (
        "The model endpoint sent an answer I could not read. Your message is saved; "
        "please try again."
    ),
    Failure.EMPTY: "The model returned an empty reply. Your message is saved; please try again.",
}


class LLMError(Exception):
    def __init__(self, failure: Failure, detail: str) -> None:
        super().__init__(f"{failure.value}: {detail}")
        self.failure = failure
        self.detail = detail

    @property
    def user_message(self) -> str:
        return _USER_MESSAGES[self.failure]


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float
    refused: bool = False


class ChatModel(Protocol):
    """What the core needs of a model: one completion for a list of chat messages."""

    @property
    def model(self) -> str: ...

    async def complete(
        self, messages: Sequence[dict[str, str]], *, max_tokens: int
    ) -> Completion: ...


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


class OpenAIChatModel:
    """A :class:`ChatModel` on an ``AsyncOpenAI`` client shared per endpoint."""

    def __init__(
        self, client: openai.AsyncOpenAI, model: str, *, temperature: float | None = None
    ) -> None:
        self._client = client
        self._model = model
        self._temperature = temperature

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int) -> Completion:
        extra: dict[str, Any] = {}
        if self._temperature is not None:
            extra["temperature"] = self._temperature
        started = time.perf_counter()
        try:
            # The messages go in ``extra_body``: they are plain dicts of strings already, and
            # the SDK's type-driven transform of ``messages`` costs about 0.2 ms of event-loop
            # time per message, every request (6 ms for a 30-message prompt).
            response = await self._client.chat.completions.create(
                model=self._model,
                messages=[],
                max_tokens=max_tokens,
                extra_body={"messages": list(messages)},
                **extra,
            )
        except openai.APIError as exc:
            raise _classify(exc) from exc
        except (ValueError, TypeError) as exc:  # a body the SDK could not decode
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc
        seconds = time.perf_counter() - started
        if not getattr(response, "choices", None):
            raise LLMError(Failure.BAD_RESPONSE, "no choices in the response")
        message = response.choices[0].message
        usage = response.usage
        text = (message.content or "").strip()
        refusal = getattr(message, "refusal", None)
        if not text and refusal:
            text = f"(The model declined to answer: {refusal.strip()})"
        if not text:
            raise LLMError(Failure.EMPTY, f"finish_reason={response.choices[0].finish_reason}")
        return Completion(
            text=text,
            model=response.model or self._model,
            prompt_tokens=usage.prompt_tokens if usage else None,
            completion_tokens=usage.completion_tokens if usage else None,
            seconds=seconds,
            refused=bool(refusal) and not message.content,
        )


class Embedder(Protocol):
    """What recall needs of an embeddings endpoint: one vector per text."""

    @property
    def model(self) -> str: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class OpenAIEmbedder:
    """An :class:`Embedder` on the ``embeddings`` API of an OpenAI-compatible endpoint."""

    def __init__(self, client: openai.AsyncOpenAI, model: str) -> None:
        self._client = client
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        try:
            response = await self._client.embeddings.create(model=self._model, input=list(texts))
        except openai.APIError as exc:
            raise _classify(exc) from exc
        except (ValueError, TypeError) as exc:
            raise LLMError(Failure.BAD_RESPONSE, type(exc).__name__) from exc
        data = sorted(response.data or [], key=lambda item: item.index)
        if len(data) != len(texts):
            raise LLMError(Failure.BAD_RESPONSE, f"{len(data)} embeddings for {len(texts)} texts")
        return [list(item.embedding) for item in data]


def _classify(exc: openai.APIError) -> LLMError:
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
            return LLMError(Failure.AUTH, f"HTTP {status}")
        if status == 429:
            return LLMError(Failure.RATE_LIMITED, "HTTP 429")
        if code == "context_length_exceeded" or (
            status in (400, 413, 422) and _CONTEXT_PATTERNS.search(exc.message or "")
        ):
            return LLMError(Failure.CONTEXT_LENGTH, f"HTTP {status}")
        if status >= 500:
            return LLMError(Failure.UNAVAILABLE, f"HTTP {status}")
        return LLMError(Failure.BAD_REQUEST, f"HTTP {status} {code}".strip())
    return LLMError(Failure.BAD_RESPONSE, type(exc).__name__)
