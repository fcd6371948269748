"""What the core reports about its work, through a small interface passed in.

The engine and the model wrapper (:mod:`bot.llm.observed`) call an :class:`Observer`;
:class:`NoObserver` (the default) ignores everything, and :mod:`bot.telemetry.metrics` counts
it for Prometheus. Nothing here is global.
"""

from __future__ import annotations

from typing import Protocol


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

    def model_spend(
        self,
        *,
        workspace: str,
        model: str,
        prompt_tokens: int,
        cached_tokens: int,
        completion_tokens: int,
        cost: float,
    ) -> None:
        """A model call recorded in the ledger, for ``workspace`` (``platform:workspace``;
        "" for none), priced at ``cost``."""
        ...

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

    def model_spend(
        self,
        *,
        workspace: str,
        model: str,
        prompt_tokens: int,
        cached_tokens: int,
        completion_tokens: int,
        cost: float,
    ) -> None:
        pass

    def summary_made(self) -> None:
        pass

    def context_fill(self, *, ratio: float) -> None:
        pass
