"""A chat model in-process, a second implementation of the core's ``ChatModel`` port: it
answers as the local model server does (an echo, or a summary keeping every FACT line), keeps
what it was sent, reports usage as the server would count it, and fails when told to."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bot.core.ports.llm import Completion, LLMError
from tests.conftest import is_summary_request, respond
from tests.support.fake_llm import count_prompt_tokens

Messages = list[dict[str, str]]


def is_summary(messages: Sequence[dict[str, str]]) -> bool:
    return is_summary_request({"messages": messages})


def answer(messages: Sequence[dict[str, str]]) -> str:
    """What the local model server answers (tests/conftest.py's ``respond``)."""
    body: dict[str, Any] = {"messages": list(messages)}
    return respond(body)


class FakeChatModel:
    """Implements :class:`bot.core.ports.llm.ChatModel` in-process."""

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        responder: Callable[[Messages], str] = answer,
        usage_ratio: float = 1.0,
    ) -> None:
        self._model = model
        self.responder = responder
        self.usage_ratio = usage_ratio
        """The server's prompt count against OpenAI's (a foreign tokenizer counts more)."""
        self.requests: list[Messages] = []
        self.failures: list[LLMError] = []
        """Raised one per request, in order, before any answer."""
        self.meanwhile: Callable[[Messages], Awaitable[None]] | None = None
        """Awaited while a request is in flight (what happens before the answer arrives)."""

    @property
    def model(self) -> str:
        return self._model

    def chats(self) -> list[Messages]:
        """The requests for an answer (not for a summary)."""
        return [request for request in self.requests if not is_summary(request)]

    def summaries(self) -> list[Messages]:
        return [request for request in self.requests if is_summary(request)]

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion:
        sent = [dict(message) for message in messages]
        self.requests.append(sent)
        if self.meanwhile is not None:
            await self.meanwhile(sent)
        if self.failures:
            raise self.failures.pop(0)
        text = self.responder(sent)
        counted = count_prompt_tokens(self._model, sent)
        return Completion(
            text=text,
            model=self._model,
            prompt_tokens=round(counted * self.usage_ratio),
            completion_tokens=len(text.split()),
            seconds=0.0,
        )
