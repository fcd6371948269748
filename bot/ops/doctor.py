"""``bot doctor``: checks what the bot depends on, one line each, ok or the problem.

A warning (``warn``) names something that works now but will fail or cost later, such as sizes
that do not fit a model's context; it does not change the exit code."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from annotated_types import Ge

from bot import adapters
from bot.config import Config
from bot.config.model import MemoryConfig
from bot.core.ports.llm import Failure, LLMError
from bot.core.settings.keys import chat_models, summary_models
from bot.core.wording import counted
from bot.llm.openai import OpenAIChatModel
from bot.llm.windows import Window
from bot.telemetry.logs import hide_credentials
from bot.wiring import App

_PING = [{"role": "user", "content": "Reply with the word ok."}]


@dataclass(frozen=True)
class Check:
    ok: bool
    what: str
    detail: str
    warning: bool = False
    """Passed, but with something to fix: printed as ``warn``."""

    def line(self) -> str:
        """The check as printed; credentials in any URL it names (or an error quotes) hidden."""
        verdict = "warn" if self.warning else "ok  " if self.ok else "FAIL"
        return hide_credentials(f"{verdict} {self.what}: {self.detail}")


_LISTED = 8
"""Models named when the configured one is not among those the server lists."""
_ENDPOINT_WIDE = frozenset({Failure.AUTH, Failure.UNAVAILABLE, Failure.TIMEOUT})
"""Failures of the endpoint (or its key) rather than of one model on it."""


@dataclass(frozen=True)
class _Probe:
    check: Check
    failure: Failure | None
    window: Window | None = None
    """The model's context window, when the server's model list tells it."""


async def _endpoint(name: str, model: OpenAIChatModel, where: str | None = None) -> _Probe:
    what = f"{name} endpoint"
    where = where or f"{model.model} at {model.base_url}"
    keyless = (
        "" if model.key is None or model.key.is_set else f"; no key sent ({model.key.describe()})"
    )
    try:
        completion = await model.complete(_PING, max_tokens=16)
    except LLMError as exc:
        if exc.failure is Failure.EMPTY:  # it answered, just with nothing to say
            return _Probe(Check(True, what, f"{where} answered{keyless}"), None)
        failed = Check(False, what, f"{where}: {exc.failure.value} ({exc.detail})")
        return _Probe(failed, exc.failure)
    answered = f"{where} answered in {completion.seconds:.1f} s{keyless}"
    listed = await model.listed_models()
    if listed is not None and model.model not in listed:
        names = list(listed)
        shown = ", ".join(names[:_LISTED]) + (", …" if len(names) > _LISTED else "")
        unlisted = f"{answered}, but the server lists only {shown}: check llm.{name}_model"
        return _Probe(Check(False, what, unlisted), None)
    window = listed.get(model.model) if listed is not None else None
    return _Probe(Check(True, what, answered), None, window)


async def _chat_and_summary(app: App) -> tuple[_Probe, _Probe]:
    """Each endpoint and key probed once: a summary model on the chat's endpoint and key is
    reported as that, not as a second verdict on the same endpoint."""
    chat, summary = app.chat, app.summary
    if (summary.base_url, summary.key) != (chat.base_url, chat.key):
        both = await asyncio.gather(_endpoint("chat", chat), _endpoint("summary", summary))
        return both[0], both[1]
    first = await _endpoint("chat", chat)
    if summary.model == chat.model:
        same = Check(first.check.ok, "summary endpoint", "same model, endpoint and key as chat")
        return first, _Probe(same, first.failure, first.window)
    if first.failure in _ENDPOINT_WIDE:
        detail = f"{summary.model} at the same endpoint as chat, with the same key: see chat"
        return first, _Probe(Check(False, "summary endpoint", detail), first.failure)
    where = f"{summary.model} at the same endpoint as chat"
    return first, await _endpoint("summary", summary, where)


async def _choices(app: App) -> Check | None:
    """The other models channels may choose (``/settings model``, ``summary-model``), each
    looked for in its server's list of models when it gives one; None when there are none."""
    groups = [
        ("llm.allowed_models", app.chat, app.chat_models[1:]),
        ("llm.allowed_summary_models", app.summary, app.summary_models[1:]),
    ]
    chosen: list[str] = []
    unlisted: list[str] = []
    for key, default, others in groups:
        names = [model.model for model in others]
        if not names:
            continue
        chosen.append(f"{', '.join(names)} ({key})")
        listed = await default.listed_models()
        unlisted += [name for name in names if listed is not None and name not in listed]
    if not chosen:
        return None
    detail = "channels may also choose " + "; ".join(chosen)
    if not unlisted:
        return Check(True, "model choices", detail)
    missing = f"{detail}, but the server does not list {', '.join(unlisted)}: a channel set to it"
    return Check(True, "model choices", f"{missing} gets errors", warning=True)


async def run_checks(app: App, config_file: Path, report: Callable[[Check], None]) -> bool:
    """Run every check, reporting each as it completes; True when all passed."""
    config = app.config
    memory = config.memory
    integrity = await app.store.integrity_check()
    synchronous = await app.store.synchronous()
    conversations = await app.store.conversations()
    pool = await app.store.connections()
    pooled = f", {pool[0]} of {pool[1]} pooled connections in use" if pool else ""
    (chat_probe, summary_probe), choices, platforms_check, recall_check = await asyncio.gather(
        _chat_and_summary(app), _choices(app), _platforms(config), _recall(app)
    )
    checks = [
        Check(True, "config", f"{config_file} is valid"),
        Check(
            integrity == "ok",
            "database",
            f"{config.storage.name}: {integrity}, {counted(len(conversations), 'conversation')}, "
            f"{counted(sum(c.messages for c in conversations), 'message')}, "
            f"synchronous={synchronous}{pooled}",
        ),
        Check(True, "tokens", app.engine.tokenizer.describe()),
        chat_probe.check,
        summary_probe.check,
        *([choices] if choices is not None else []),
        Check(
            True,
            "memory",
            f"{memory.strategy} strategy, {memory.max_context_tokens:,}-token budget, "
            f"summaries past {memory.summary_threshold:.0%}",
        ),
        *await _contexts(app, chat_probe.window, summary_probe.window),
        recall_check,
        _spend(app),
        _page(config),
        platforms_check,
    ]
    for check in checks:
        report(check)
    return all(check.ok for check in checks)


async def _contexts(app: App, chat: Window | None, summary: Window | None) -> list[Check]:
    """Whether the configured sizes fit each model's context, where it is known: from the
    server's model list, else from the last context-length error the bot was sent."""
    memory, llm = app.config.memory, app.config.llm
    budget = ("memory.max_context_tokens", memory.max_context_tokens)
    folded = ("memory.summary_max_input_tokens", memory.summary_max_input_tokens)
    checks = [
        _fit(
            "chat",
            app.chat.model,
            await _known(app, app.chat.model, chat),
            budget,
            ("llm.max_reply_tokens", llm.max_reply_tokens),
        ),
        _fit(
            "summary",
            app.summary.model,
            await _known(app, app.summary.model, summary),
            folded,
            ("llm.summary_max_tokens", llm.summary_max_tokens),
        ),
    ]
    return [check for check in checks if check is not None]


async def _known(app: App, model: str, told: Window | None) -> tuple[int, str] | None:
    """The model's window and where it was learned, or None."""
    if told is not None:
        return told.tokens, f"the server's /models: {told.field}"
    learned = await app.engine.calibrator.learned_window(model)
    if learned is None:
        return None
    return learned, "learned from the server's context-length error"


def _least(key: str) -> int:
    """The smallest the config lets ``key`` (``memory.NAME``) be set to: its field's bound."""
    field = MemoryConfig.model_fields[key.removeprefix("memory.")]
    bounds = [bound.ge for bound in field.metadata if isinstance(bound, Ge)]
    return next(bound for bound in bounds if isinstance(bound, int))


def _fit(
    name: str,
    model: str,
    known: tuple[int, str] | None,
    given: tuple[str, int],
    answer: tuple[str, int],
) -> Check | None:
    """One line on whether ``given`` tokens of input and ``answer`` tokens of reply fit
    ``model``'s context window (``known``: its size and where it was learned); None when the
    window is unknown."""
    if known is None:
        return None
    window, told = known
    what = f"{name} context"
    needed = given[1] + answer[1]
    if needed <= window:
        fits = f"{needed:,} tokens ({given[0]} + {answer[0]}) fit {model}'s {window:,}"
        return Check(True, what, f"{fits} ({told})")
    room = window - answer[1]
    fix = (
        f"set {given[0]} to at most {room:,}"
        if room >= _least(given[0])
        else f"lower {answer[0]} or use a model with a larger context"
    )
    detail = (
        f"{given[0]} {given[1]:,} + {answer[0]} {answer[1]:,} = {needed:,} tokens, more than "
        f"{model}'s {window:,}-token context ({told}): {fix}"
    )
    return Check(True, what, detail, warning=True)


async def _platforms(config: Config) -> Check:
    enabled = adapters.enabled(config)
    if not enabled:
        return Check(True, "platforms", "none enabled; `bot chat` talks to the bot in the terminal")
    results = await asyncio.gather(*(entry.diagnose(settings) for entry, settings in enabled))
    return Check(all(ok for ok, _ in results), "platforms", "; ".join(d for _, d in results))


async def _recall(app: App) -> Check:
    tokens = app.config.memory.recall_tokens
    if not tokens:
        return Check(True, "recall", "off (memory.recall_tokens: 0)")
    index = "SQLite FTS5" if app.config.storage.postgres_url is None else "PostgreSQL terms index"
    detail = f"up to {tokens:,} tokens of earlier messages; keyword search ({index})"
    embedder = app.engine.recaller.embedder
    if embedder is None:
        return Check(True, "recall", detail)
    try:
        (vector,) = (await embedder.embed(["ok"])).vectors
    except LLMError as exc:
        return Check(
            False, "recall", f"embeddings {embedder.model}: {exc.failure.value} ({exc.detail})"
        )
    return Check(True, "recall", f"{detail} and by meaning ({embedder.model}, {len(vector)} dims)")


_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def _spend(app: App) -> Check:
    """The caps in force by default, and the models money caps cannot count (no price)."""
    config = app.config
    budgets = config.budgets
    caps = [
        f"{scope} {period} {value}"
        for scope in ("channel", "person", "workspace")
        for period in ("day", "month")
        if (value := getattr(getattr(budgets, scope), period)) is not None
    ]
    detail = f"budgets: {', '.join(caps) if caps else 'none (budgets)'}"
    models = [*chat_models(config), *summary_models(config)]
    if config.llm.embedding_model and config.memory.recall_embeddings:
        models.append(config.llm.embedding_model)
    prices = app.engine.meter.prices
    unpriced = [model for model in dict.fromkeys(models) if not prices.priced(model)]
    if unpriced:
        detail += (
            f"; no price for {', '.join(unpriced)} (llm.prices): /usage shows no money for "
            "them and money caps do not count them"
        )
    return Check(True, "spend", detail, warning=bool(unpriced))


def _page(config: Config) -> Check:
    """Whether the page is on, and whether the links it gives open where people are."""
    http, page = config.http, config.http.page
    if not page.enabled:
        return Check(True, "page", "off (http.page.enabled)")
    base = page.public_url or f"http://{http.host}:{http.port}"
    token = "operators' token set" if page.token else "no operators' token (BOT_PAGE_TOKEN)"
    detail = f"links to {base}/page/… good for {page.link_minutes:g} min; {token}"
    host = urlsplit(base).hostname or ""
    if page.public_url is None and host in _LOOPBACK:
        detail += "; links open only on this machine: set http.page.public_url"
        return Check(True, "page", detail, warning=True)
    if base.startswith("http://") and host not in _LOOPBACK:
        detail += "; a link is a password while it is good: serve it over HTTPS"
        return Check(True, "page", detail, warning=True)
    return Check(True, "page", detail)
