"""What the core reports about its work, through a small interface passed in.

The engine and the models call an :class:`Observer`; :class:`NoObserver` (the default)
ignores everything, and :mod:`bot.telemetry.metrics` counts it for Prometheus. Nothing here
is global.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from bot.core.ports.llm import ChatModel, Completion, LLMError


class Observer(Protocol):
    def message_in(self, *, platform: str) -> None: ...

    def reply_out(self, *, platform: str) -> None: ...

    def llm_request(
        self,
        *,
        model: str,
        purpose: str,
        seconds: float,
        prompt_tokens: int | None,
        completion_tokens: int | None,
    ) -> None: ...

    def error(self, *, kind: str) -> None: ...

    def summary_made(self) -> None: ...

    def context_fill(self, *, ratio: float) -> None: ...


class NoObserver:
    """Observes nothing."""

    def message_in(self, *, platform: str) -> None:
        pass

    def reply_out(self, *, platform: str) -> None:
        pass

    def llm_request(
        self,
        *,
        model: str,
        purpose: str,
        seconds: float,
        prompt_tokens: int | None,
        completion_tokens: int | None,
    ) -> None:
        pass

    def error(self, *, kind: str) -> None:
        pass

    def summary_made(self) -> None:
        pass

    def context_fill(self, *, ratio: float) -> None:
        pass


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
            self._observer.llm_request(
                model=self.model,
                purpose=self._purpose,
                seconds=time.monotonic() - started,
                prompt_tokens=None,
                completion_tokens=None,
            )
            self._observer.error(kind=f"llm_{exc.failure.value}")
            raise
        self._observer.llm_request(
            model=self.model,
            purpose=self._purpose,
            seconds=time.monotonic() - started,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
        )
        return completion
