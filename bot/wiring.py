"""Wiring: everything the bot needs, built once from the config and closed in order."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import openai

from bot.config import Config
from bot.core.engine import Engine
from bot.core.memory.calibration import Calibrator
from bot.core.memory.summarizer import Summarizer
from bot.core.memory.tokens import ChatTokenizer, install_encodings
from bot.core.models import PROMPT_RENDERING
from bot.core.observe import NoObserver, Observer
from bot.core.ports.llm import ApiKey
from bot.core.wording import counted
from bot.llm.observed import ObservedChatModel
from bot.llm.openai import OpenAIChatModel, OpenAIEmbedder, RetryPolicy, is_local, make_client
from bot.store.sqlite.store import SqliteStore
from bot.telemetry.logs import hide_credentials
from bot.telemetry.metrics import PrometheusObserver

log = logging.getLogger(__name__)
_ENCODING_KEY = "token_encoding"


@dataclass(frozen=True)
class App:
    config: Config
    store: SqliteStore
    engine: Engine
    chat: OpenAIChatModel
    summary: OpenAIChatModel
    observer: Observer
    metrics: PrometheusObserver | None
    """Set when the config enables the HTTP endpoint (``http.port``)."""


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


@asynccontextmanager
async def open_app(config: Config) -> AsyncIterator[App]:
    install_encodings()
    store = await SqliteStore.open(
        config.storage.path,
        busy_timeout_ms=config.storage.busy_timeout_ms,
        index=config.memory.recall_tokens > 0,
        synchronous=config.storage.synchronous,
    )
    clients: list[openai.AsyncOpenAI] = []
    try:
        llm = config.llm
        chat_client = make_client(
            base_url=llm.base_url,
            api_key=llm.api_key,
            timeout=llm.timeout_seconds,
            max_retries=llm.max_retries,
        )
        clients.append(chat_client)
        summary_key = summary_api_key(config)
        if config.summary_base_url == llm.base_url and summary_key == llm.api_key:
            summary_client = chat_client
        else:
            summary_client = make_client(
                base_url=config.summary_base_url,
                api_key=summary_key,
                timeout=llm.timeout_seconds,
                max_retries=llm.max_retries,
            )
            clients.append(summary_client)
        policy = RetryPolicy(
            retries=llm.max_retries,
            timeout=llm.timeout_seconds,
            deadline=llm.reply_deadline_seconds,
        )
        chat = OpenAIChatModel(
            chat_client,
            llm.chat_model,
            temperature=llm.temperature,
            policy=policy,
            key=chat_key_source(config),
        )
        summary = OpenAIChatModel(
            summary_client, llm.summary_model, policy=policy, key=summary_key_source(config)
        )
        metrics = PrometheusObserver() if config.http.port is not None else None
        if metrics is not None:
            store.on_write_failure = metrics.storage_write_failed
        observer: Observer = metrics or NoObserver()
        tokenizer = ChatTokenizer.for_model(llm.chat_model)
        # Stored counts are of messages as the prompt shows them: redone when either changes.
        counted_as = f"{tokenizer.encoding_name} rendering {PROMPT_RENDERING}"
        if await store.get_meta(_ENCODING_KEY) != counted_as:
            recounted = await store.retokenize(tokenizer.count)
            if recounted:
                log.info(
                    "recounted %s with %s",
                    counted(recounted, "stored message"),
                    tokenizer.encoding_name,
                )
            await store.set_meta(_ENCODING_KEY, counted_as)
        exact = frozenset({llm.chat_model} if tokenizer.exact else ())
        calibrator = Calibrator(store, exact_models=exact)
        await calibrator.load()
        engine = Engine(
            config=config,
            store=store,
            chat=ObservedChatModel(chat, observer, purpose="chat"),
            summarizer=Summarizer(
                store=store,
                model=ObservedChatModel(summary, observer, purpose="summary"),
                tokenizer=tokenizer,
                memory=config.memory,
                max_tokens=llm.summary_max_tokens,
            ),
            tokenizer=tokenizer,
            calibrator=calibrator,
            observer=observer,
            embedder=(
                OpenAIEmbedder(chat_client, llm.embedding_model, key=chat_key_source(config))
                if llm.embedding_model and config.memory.recall_embeddings
                else None
            ),
        )
        try:
            yield App(
                config=config,
                store=store,
                engine=engine,
                chat=chat,
                summary=summary,
                observer=observer,
                metrics=metrics,
            )
        finally:
            await engine.aclose()
    finally:
        for client in clients:
            await client.close()
        await store.close()
