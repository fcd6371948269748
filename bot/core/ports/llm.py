"""What the core needs of a language model, and how a model call fails.

The OpenAI-compatible implementation lives in :mod:`bot.llm.openai`.
"""

from __future__ import annotations

import math
import re
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


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
        "The model is rate-limited right now. Your message is saved; please try again in a minute."
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


@dataclass(frozen=True)
class ApiKey:
    """Where an endpoint's key comes from, for messages; never the key itself."""

    variable: str
    """The environment variable that supplied it, or the one to set."""
    is_set: bool

    def describe(self) -> str:
        return f"check the key in {self.variable}" if self.is_set else f"{self.variable} is not set"


class LLMError(Exception):
    def __init__(
        self,
        failure: Failure,
        detail: str,
        *,
        retry_after: float | None = None,
        key: ApiKey | None = None,
        context: int | None = None,
    ) -> None:
        super().__init__(f"{failure.value}: {detail}")
        self.failure = failure
        self.detail = detail
        self.retry_after = retry_after
        """Seconds the endpoint asked to wait (Retry-After), when it said."""
        self.key = key
        """An authentication failure's key, so the message can name its variable."""
        self.context = context
        """The model's context window in the server's tokens, when a context-length error
        said it."""

    @property
    def user_message(self) -> str:
        if self.failure is Failure.RATE_LIMITED and self.retry_after is not None:
            seconds = max(1, math.ceil(self.retry_after))
            return (
                f"The model is rate-limited; try again in about {seconds} s. Your message is saved."
            )
        if self.failure is Failure.AUTH and self.key is not None:
            if not self.key.is_set:
                return (
                    f"The model endpoint refused the request: no API key is set; an operator "
                    f"needs to set {self.key.variable}. Your message is saved."
                )
            return (
                "The model endpoint refused the bot's credentials; an operator needs to check "
                f"the key in {self.key.variable}. Your message is saved."
            )
        return _USER_MESSAGES[self.failure]


def clean_text(text: str) -> str:
    """Make any string storable and sendable: lone surrogates become U+FFFD; of the control
    characters only newline and tab are kept: the ones that break lines (CR, form feed, ...)
    become newlines, terminal escape sequences and the rest are dropped (they mean nothing to
    a model, and could drive the terminal of whoever reads the text later)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if _CONTROL.search(text) is None:
        return text
    text = _LINE_BREAK.sub("\n", _ESCAPE_SEQUENCE.sub("", text))
    return _CONTROL.sub("", text)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAK = re.compile(r"\r\n|[\r\x0b\x0c\x1c-\x1e\x85]")
_ESCAPE_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves (arrow keys)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    r"|\x1b[ -/]*[0-~]"  # the other escapes
    r"|\x9b[0-?]*[ -/]*[@-~]"  # CSI as one C1 character
)


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those the server took from its prompt cache (0: none, or it
    did not say)."""


@dataclass(frozen=True)
class StreamEnd:
    """The last item of a stream: who answered, what it cost, why it stopped."""

    model: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: float
    finish_reason: str | None
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those served from the server's prompt cache."""


class ChatModel(Protocol):
    """What the core needs of a model: one completion for a list of chat messages, whole or
    as a stream, by ``deadline`` (a :func:`time.monotonic` instant; None: the model's own
    deadline from now). Failures of either raise :class:`LLMError`."""

    @property
    def model(self) -> str: ...

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion: ...

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> AsyncGenerator[str | StreamEnd, None]:
        """The reply's text in pieces, in order, then one :class:`StreamEnd`; a stream that
        stalls past ``deadline`` fails with :attr:`Failure.TIMEOUT`."""
        ...


class ChatModels:
    """The models of one endpoint a conversation may be answered or summarized by, by name:
    the config's default first, then those ``/settings`` may choose. Built once at start-up;
    the settings in force name one per turn."""

    def __init__(self, default: ChatModel, *others: ChatModel) -> None:
        self.default = default
        self._by_name: dict[str, ChatModel] = {}
        for model in (default, *others):
            self._by_name.setdefault(model.model, model)

    def get(self, name: str) -> ChatModel:
        """The model called ``name``; a name not built is a wiring error (the settings in
        force only name allowed models)."""
        try:
            return self._by_name[name]
        except KeyError:
            raise LookupError(f"no chat model {name!r}; built: {', '.join(self)}") from None

    def __iter__(self) -> Iterator[str]:
        """The names, the default first."""
        return iter(self._by_name)


@dataclass(frozen=True)
class Embeddings:
    """What one embeddings request gave: a vector per text, and what it took."""

    vectors: list[list[float]]
    model: str
    """The model the request named (as priced; not :attr:`Embedder.model`'s marked name)."""
    prompt_tokens: int | None
    """As the server counted them; None when it did not say."""


class Embedder(Protocol):
    """What recall needs of an embeddings endpoint: one vector per text."""

    @property
    def model(self) -> str:
        """What its vectors of stored messages are kept under: the model, and how a
        stored message is marked for it when it is (vectors made otherwise don't compare)."""
        ...

    @property
    def asymmetric(self) -> bool:
        """Whether a question is embedded unlike a stored message (its own marker)."""
        ...

    async def embed(self, texts: Sequence[str], *, query: bool = False) -> Embeddings:
        """One vector per text: stored messages, or with ``query`` questions searched with."""
        ...
