"""Wiring: everything the bot needs, built once from the config and closed in order."""

from __future__ import annotations

import asyncio
import gc
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import openai

from bot.charts import MatplotlibCharts
from bot.config import Config
from bot.core.cost import Meter, Prices
from bot.core.engine import Engine
from bot.core.memory.calibration import Calibrator
from bot.core.memory.summarizer import Summarizer
from bot.core.memory.tokens import ChatTokenizer, install_encodings
from bot.core.models import PROMPT_RENDERING
from bot.core.observe import NoObserver, Observer
from bot.core.ports.charts import Charts
from bot.core.ports.llm import ApiKey, ChatModels, Embedder
from bot.core.ports.store import AdminStore, Store, StoreUnavailable
from bot.core.settings import SettingsSource
from bot.core.settings.keys import chat_models, summary_models
from bot.core.wording import counted
from bot.llm.embeddings import OpenAIEmbedder
from bot.llm.observed import ObservedChatModel
from bot.llm.openai import OpenAIChatModel, RetryPolicy, is_local, make_client
from bot.store.postgres.connection import FAILURES as POSTGRES_FAILURES
from bot.store.postgres.schema import DatabaseError as PostgresDatabaseError
from bot.store.postgres.store import PostgresStore
from bot.store.sqlite.store import DatabaseError, SqliteStore
from bot.telemetry.logs import hide_credentials
from bot.telemetry.metrics import PrometheusObserver

log = logging.getLogger(__name__)
_ENCODING_KEY = "token_encoding"


@dataclass(frozen=True)
class App:
    config: Config
    store: Store
    engine: Engine
    chat_models: tuple[OpenAIChatModel, ...]
    """The chat models a conversation may be answered by, the config's default first."""
    summary_models: tuple[OpenAIChatModel, ...]
    observer: Observer
    metrics: PrometheusObserver | None
    """Set when the config enables the HTTP endpoint (``http.port``)."""

    @property
    def chat(self) -> OpenAIChatModel:
        """The default chat model (``llm.chat_model``)."""
        return self.chat_models[0]

    @property
    def summary(self) -> OpenAIChatModel:
        return self.summary_models[0]


def summary_api_key(config: Config) -> str | None:
    """The summary endpoint's key: its own, or the chat key only when it is the same endpoint.

    The chat key is never sent to a different host.
    """
    if config.llm.summary_api_key:
        return config.llm.summary_api_key
    if config.summary_base_url == config.llm.base_url:
        return config.llm.api_key
    return None


def chat_key_source(config: Config) -> ApiKey:
    return ApiKey("OPENAI_API_KEY", config.llm.api_key is not None)


def summary_key_source(config: Config) -> ApiKey:
    """Which variable supplies :func:`summary_api_key` (or would)."""
    if config.llm.summary_api_key:
        return ApiKey("SUMMARY_API_KEY", True)
    if config.summary_base_url == config.llm.base_url:
        return chat_key_source(config)
    return ApiKey("SUMMARY_API_KEY", False)


def missing_keys(config: Config) -> list[str]:
    """One line for each endpoint that is not local (so probably needs a key) and has none.
    Not an error: a gateway on a public name may need no key."""
    endpoints = {config.llm.base_url: ("chat", "llm.base_url", chat_key_source(config))}
    endpoints.setdefault(
        config.summary_base_url,
        ("summary", "llm.summary_base_url", summary_key_source(config)),
    )
    return [
        f"{key.variable} is not set, and the {purpose} endpoint {hide_credentials(url)} is not "
        f"a local server: it will probably refuse every request. Set {key.variable}, or point "
        f"{setting} at a local server (Ollama, llama.cpp) that needs none."
        for url, (purpose, setting, key) in endpoints.items()
        if not key.is_set and not is_local(url)
    ]


def local_models(config: Config) -> frozenset[str]:
    """The models served at a local or private endpoint: free unless llm.prices says."""
    llm = config.llm
    local: set[str] = set()
    if is_local(llm.base_url):
        local.update(chat_models(config))
        if llm.embedding_model:
            local.add(llm.embedding_model)
    if is_local(config.summary_base_url):
        local.update(summary_models(config))
    return frozenset(local)


def prices(config: Config) -> Prices:
    """The price table: llm.prices over the built-in list prices; local models free."""
    return Prices(config.llm.prices, local=local_models(config))


def build_engine(
    config: Config,
    store: Store,
    *,
    chat: ChatModels,
    summary: ChatModels,
    embedder: Embedder | None,
    tokenizer: ChatTokenizer,
    calibrator: Calibrator,
    observer: Observer,
    charts: Charts,
) -> Engine:
    """The engine, with each conversation's settings taken from the config; ``embedder`` is
    used only while the config turns recall by meaning on."""
    memory = config.memory
    meter = Meter(ledger=store, prices=prices(config), observer=observer)
    return Engine(
        config=config,
        settings=SettingsSource(config, store),
        store=store,
        chat=chat,
        summarizer=Summarizer(
            store=store, models=summary, tokenizer=tokenizer, calibrator=calibrator, meter=meter
        ),
        meter=meter,
        tokenizer=tokenizer,
        calibrator=calibrator,
        charts=charts,
        observer=observer,
        embedder=embedder if memory.recall_embeddings and memory.recall_tokens else None,
    )


READ_FAILURES: tuple[type[BaseException], ...] = (sqlite3.Error, *POSTGRES_FAILURES)
"""What a store raises when a read fails (a locked or damaged file, a database gone)."""


async def open_store(
    config: Config, *, index: bool = True, on_write_failure: Callable[[], None] | None = None
) -> Store:
    """The configured database, opened and migrated; :class:`StoreUnavailable` when it cannot
    be. ``index``: messages stored enter recall's search index (off when recall is off).
    ``on_write_failure``: called each time a write fails."""
    storage = config.storage
    store: SqliteStore | PostgresStore
    try:
        if storage.postgres_url is not None:
            store = await PostgresStore.open(
                storage.postgres_url, pool_size=storage.pool_size, index=index
            )
        else:
            store = await SqliteStore.open(
                storage.path,
                busy_timeout_ms=storage.busy_timeout_ms,
                index=index,
                synchronous=storage.synchronous,
            )
    except (DatabaseError, PostgresDatabaseError) as exc:
        raise StoreUnavailable(str(exc)) from exc
    if on_write_failure is not None:
        store.on_write_failure = on_write_failure
    return store


async def _count_with(store: AdminStore, tokenizer: ChatTokenizer) -> None:
    """Stored token counts are of messages as the prompt shows them, with the chat model's
    encoding: recounted when either has changed since they were made."""
    counted_as = f"{tokenizer.encoding_name} rendering {PROMPT_RENDERING}"
    if await store.get_meta(key=_ENCODING_KEY) != counted_as:
        recounted = await store.retokenize(count=tokenizer.count)
        if recounted:
            log.info(
                "recounted %s with %s",
                counted(recounted, "stored message"),
                tokenizer.encoding_name,
            )
        await store.set_meta(key=_ENCODING_KEY, value=counted_as)


def _clients(config: Config) -> list[openai.AsyncOpenAI]:
    """The chat endpoint's client, then the summary endpoint's: the same one when both are
    the same endpoint with the same key."""
    llm = config.llm
    chat = make_client(
        base_url=llm.base_url,
        api_key=llm.api_key,
        timeout=llm.timeout_seconds,
        max_retries=llm.max_retries,
    )
    summary_key = summary_api_key(config)
    if config.summary_base_url == llm.base_url and summary_key == llm.api_key:
        return [chat]
    summary = make_client(
        base_url=config.summary_base_url,
        api_key=summary_key,
        timeout=llm.timeout_seconds,
        max_retries=llm.max_retries,
    )
    return [chat, summary]


def _models(
    config: Config, chat_client: openai.AsyncOpenAI, summary_client: openai.AsyncOpenAI
) -> tuple[tuple[OpenAIChatModel, ...], tuple[OpenAIChatModel, ...]]:
    """The chat models a conversation may be answered by and the summary models, each the
    config's default first, with one retry policy; the models of an endpoint share its
    client (one connection pool)."""
    llm = config.llm
    policy = RetryPolicy(
        retries=llm.max_retries,
        timeout=llm.timeout_seconds,
        deadline=llm.reply_deadline_seconds,
    )
    chat = tuple(
        OpenAIChatModel(
            chat_client,
            name,
            temperature=llm.temperature,
            policy=policy,
            key=chat_key_source(config),
        )
        for name in chat_models(config)
    )
    summary = tuple(
        OpenAIChatModel(summary_client, name, policy=policy, key=summary_key_source(config))
        for name in summary_models(config)
    )
    return chat, summary


def exact_models(config: Config, tokenizer: ChatTokenizer) -> frozenset[str]:
    """The chat and summary models whose servers count a prompt as ``tokenizer`` does; the
    others' counts are calibrated from the usage they report."""
    names = (*chat_models(config), *summary_models(config))
    return frozenset(name for name in names if tokenizer.counts_exactly(name))


def _observed(models: tuple[OpenAIChatModel, ...], observer: Observer, purpose: str) -> ChatModels:
    first, *others = (ObservedChatModel(model, observer, purpose=purpose) for model in models)
    return ChatModels(first, *others)


@asynccontextmanager
async def open_app(config: Config, *, store: Store | None = None) -> AsyncIterator[App]:
    """Everything built from ``config``, closed when the block ends. ``store``: one to use
    instead of the configured database (closed with the rest)."""
    install_encodings()
    metrics = PrometheusObserver() if config.http.port is not None else None
    if store is None:
        store = await open_store(
            config,
            index=config.memory.recall_tokens > 0,
            on_write_failure=metrics.storage_write_failed if metrics is not None else None,
        )
    clients = _clients(config)
    charts = MatplotlibCharts()
    try:
        llm = config.llm
        chat, summary = _models(config, clients[0], clients[-1])
        observer: Observer = metrics or NoObserver()
        tokenizer = ChatTokenizer.for_model(llm.chat_model)
        await _count_with(store, tokenizer)
        calibrator = Calibrator(store, exact_models=exact_models(config, tokenizer))
        await calibrator.load()
        engine = build_engine(
            config,
            store,
            chat=_observed(chat, observer, "chat"),
            summary=_observed(summary, observer, "summary"),
            embedder=(
                OpenAIEmbedder(
                    clients[0],
                    llm.embedding_model,
                    key=chat_key_source(config),
                    prefixes=(llm.embedding_prefixes.query, llm.embedding_prefixes.document),
                    input_types=(
                        llm.embedding_input_types.query,
                        llm.embedding_input_types.document,
                    ),
                )
                if llm.embedding_model
                else None
            ),
            tokenizer=tokenizer,
            calibrator=calibrator,
            observer=observer,
            charts=charts,
        )
        # What start-up built (encodings, config, clients) lives as long as the process: a
        # full garbage collection need not walk it, which would otherwise hold up the event
        # loop for tens of milliseconds every so often. Given back to the collector at close.
        gc.freeze()
        try:
            # Held until the answers in flight are done: then another process may take over
            # what this one leaves unanswered.
            async with engine.leases.keep_alive():
                try:
                    yield App(
                        config=config,
                        store=store,
                        engine=engine,
                        chat_models=chat,
                        summary_models=summary,
                        observer=observer,
                        metrics=metrics,
                    )
                finally:
                    await engine.aclose()
        finally:
            gc.unfreeze()
    finally:
        for client in clients:
            await client.close()
        await asyncio.to_thread(charts.close)
        await store.close()
