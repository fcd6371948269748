"""Prometheus metrics: an :class:`~bot.core.observe.Observer` that counts into its own registry."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

__all__ = ["CONTENT_TYPE_LATEST", "PrometheusObserver"]

_LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120)
_FILL_BUCKETS = (0.1, 0.25, 0.5, 0.75, 0.8, 0.9, 0.95, 1.0)


class PrometheusObserver:
    """One per app, with its own :class:`CollectorRegistry` (never the global default)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self._messages = Counter(
            "bot_messages_in", "Messages received and stored", ["platform"], registry=r
        )
        self._replies = Counter("bot_replies_out", "Answers sent", ["platform"], registry=r)
        self._latency = Histogram(
            "bot_llm_request_seconds",
            "Model request latency, retries included",
            ["model", "purpose"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self._prompt_tokens = Counter(
            "bot_llm_prompt_tokens", "Prompt tokens reported by the API", ["model"], registry=r
        )
        self._completion_tokens = Counter(
            "bot_llm_completion_tokens",
            "Completion tokens reported by the API",
            ["model"],
            registry=r,
        )
        # By workspace and model only (never per channel or person): their number stays that
        # of the workspaces and the allowed models.
        self._spend = Counter(
            "bot_spend_dollars",
            "Money model calls cost by the price table (llm.prices), by workspace and model",
            ["workspace", "model"],
            registry=r,
        )
        self._spend_tokens = Counter(
            "bot_spend_tokens",
            "Tokens of model calls recorded in the ledger (kind: prompt, cached, completion)",
            ["workspace", "model", "kind"],
            registry=r,
        )
        self._budget_use = Gauge(
            "bot_budget_used_ratio",
            "Share used of each workspace cap in force (budgets.workspace), by period (day, "
            "month); 1 is the cap reached. From the shared ledger: every replica gives the same",
            ["workspace", "period"],
            registry=r,
        )
        self._errors = Counter("bot_errors", "Errors by kind", ["kind"], registry=r)
        self._write_failures = Counter(
            "bot_storage_write_failures",
            "Writes the database refused (disk full, read-only, damaged)",
            registry=r,
        )
        self._summaries = Counter("bot_summaries", "Summaries made", registry=r)
        self._fill = Histogram(
            "bot_context_fill_ratio",
            "Share of the prompt budget each answered prompt used",
            buckets=_FILL_BUCKETS,
            registry=r,
        )
        self._last_fill = Gauge(
            "bot_context_fill_ratio_last", "The last answered prompt's share", registry=r
        )

    def message_in(self, *, platform: str) -> None:
        self._messages.labels(platform=platform).inc()

    def reply_out(self, *, platform: str) -> None:
        self._replies.labels(platform=platform).inc()

    def llm_request(
        self,
        *,
        model: str,
        purpose: str,
        seconds: float,
        prompt_tokens: int | None,
        completion_tokens: int | None,
    ) -> None:
        self._latency.labels(model=model, purpose=purpose).observe(seconds)
        if prompt_tokens:
            self._prompt_tokens.labels(model=model).inc(prompt_tokens)
        if completion_tokens:
            self._completion_tokens.labels(model=model).inc(completion_tokens)

    def error(self, *, kind: str) -> None:
        self._errors.labels(kind=kind).inc()

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
        self._spend.labels(workspace=workspace, model=model).inc(cost)
        tokens = self._spend_tokens
        for kind, count in (
            ("prompt", prompt_tokens),
            ("cached", cached_tokens),
            ("completion", completion_tokens),
        ):
            tokens.labels(workspace=workspace, model=model, kind=kind).inc(count)

    def storage_write_failed(self) -> None:
        self._write_failures.inc()

    def summary_made(self) -> None:
        self._summaries.inc()

    def context_fill(self, *, ratio: float) -> None:
        self._fill.observe(ratio)
        self._last_fill.set(ratio)

    def budget_use(self, shares: Mapping[str, Mapping[str, float]]) -> None:
        """Set the workspace caps' use: share by period, by workspace (those left out are
        dropped: their month ended, or their cap was taken out)."""
        self._budget_use.clear()
        for workspace, periods in shares.items():
            for period, share in periods.items():
                self._budget_use.labels(workspace=workspace, period=period).set(share)

    def render(self) -> bytes:
        return generate_latest(self.registry)
