"""A chat model that reports each request, whole or streamed, to an :class:`Observer`."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Sequence
from contextlib import aclosing

from bot.core.observe import Observer
from bot.core.ports.llm import ChatModel, Completion, LLMError, StreamEnd


class ObservedChatModel:
    """A :class:`ChatModel` that reports each request's latency, tokens and failure."""

    def __init__(self, model: ChatModel, observer: Observer, *, purpose: str) -> None:
        self._inner = model
        self._observer = observer
        self._purpose = purpose

    @property
    def model(self) -> str:
        return self._inner.model

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion:
        started = time.monotonic()
        try:
            completion = await self._inner.complete(
                messages, max_tokens=max_tokens, deadline=deadline
            )
        except LLMError as exc:
            self._failed(exc, started)
            raise
        self._report(started, completion.prompt_tokens, completion.completion_tokens)
        return completion

    async def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> AsyncGenerator[str | StreamEnd, None]:
        """The inner stream, reported once: at its end, at its failure, or (without token
        counts) when the reader stops before the end."""
        started = time.monotonic()
        end: StreamEnd | None = None
        inner = self._inner.stream(messages, max_tokens=max_tokens, deadline=deadline)
        async with aclosing(inner):
            try:
                async for item in inner:
                    if isinstance(item, StreamEnd):
                        end = item
                        self._report(started, item.prompt_tokens, item.completion_tokens)
                    yield item
            except LLMError as exc:
                self._failed(exc, started)
                raise
            except GeneratorExit:
                if end is None:
                    self._report(started, None, None)
                raise

    def _report(
        self, started: float, prompt_tokens: int | None, completion_tokens: int | None
    ) -> None:
        self._observer.llm_request(
            model=self.model,
            purpose=self._purpose,
            seconds=time.monotonic() - started,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    def _failed(self, exc: LLMError, started: float) -> None:
        self._report(started, None, None)
        self._observer.error(kind=f"llm_{exc.failure.value}")
