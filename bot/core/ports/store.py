"""The storage interface the core depends on, split by concern.

``MessageStore`` holds the conversations' messages (turns, search, vectors), ``MemoryStore``
what is remembered beside them (pins, profiles, summaries), ``UsageStore`` token usage and
tokenizer calibrations, ``AdminStore`` what operators do to a whole database (backup,
export, import, health), ``LeaseStore`` (:mod:`.leases`) what processes sharing a database
coordinate by (leases, messages awaiting an answer), ``SettingsStore`` (:mod:`.settings`)
what ``/settings`` set per channel, ``Ledger`` (:mod:`.spend`) every call to a model and its
cost, and ``PromptLog`` (:mod:`.prompts`) each channel's last prompts. ``Store`` is all
eight; every method takes keyword-only, plain arguments. Three implementations: SQLite
(``bot.store.sqlite``), PostgreSQL (``bot.store.postgres``) and in memory (``bot.store.memory``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bot.core.models import (
    Conversation,
    FactSource,
    Person,
    Pin,
    ProfileFact,
    Role,
    StoredMessage,
    Summary,
)
from bot.core.ports.leases import LeaseStore
from bot.core.ports.meta import MetaStore
from bot.core.ports.prompts import PromptLog
from bot.core.ports.settings import SettingsStore
from bot.core.ports.spend import Ledger


class StorageError(Exception):
    """The database refused a write (disk full, read-only, damaged): nothing was stored.

    ``incident`` numbers the spells of failing writes: it moves on only after a write has
    succeeded again, so a notice can be given once per spell.
    """

    def __init__(self, path: str, cause: str, *, incident: int) -> None:
        super().__init__(f"cannot write to {path}: {cause}")
        self.path = path
        self.cause = cause
        self.incident = incident


class StoreUnavailable(Exception):
    """The database cannot be opened, or was written by a newer version of the bot."""


@dataclass(frozen=True)
class NewSummary:
    conversation_key: str
    content: str
    tokens: int
    covers_through_turn: int
    message_count: int
    first_message_id: int
    last_message_id: int
    compactions: int
    rebuilt: bool
    model: str


@dataclass(frozen=True)
class UsageTotals:
    model: str
    purpose: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    estimated: int = 0
    """Of ``requests``, those whose tokens the bot counted itself (the server said none)."""


@dataclass(frozen=True)
class ConversationInfo:
    key: str
    messages: int
    tokens: int
    pins: int
    last_message_at: float | None


@dataclass(frozen=True)
class NewestMessage:
    """A conversation's newest stored message from a person, as its platform names it."""

    conversation_key: str
    message_id: str
    created_at: float


@dataclass(frozen=True, slots=True)
class TurnCost:
    """A turn as choosing a prompt's turns sees it: no text, only what fitting it takes."""

    turn: int
    """The turn's id: its first message's."""
    ids: tuple[int, ...]
    """Its messages' ids (through the prompt's last message), ascending."""
    tokens: int
    """Their token counts added up (without the chat format's overhead per message)."""
    important: bool
    """One of them is scored important or marked with 📌."""
    opened_at: float | None = None
    """When the person's message that opens the turn was written (None: the turn opens with
    one of the model's own messages, or that message is gone): the prompt dates turns by it."""


@dataclass(frozen=True)
class CalibrationSample:
    """One prompt as the bot counted it, split by script, and as the model's server did."""

    model: str
    latin: int
    cjk: int
    other: int
    reported: int


class Duplicate(Exception):
    """The conversation already holds a message with this platform id (a redelivery)."""

    def __init__(self, existing: StoredMessage) -> None:
        super().__init__(f"message {existing.message_id} is already stored")
        self.existing = existing


class ImportedRecords(Protocol):
    """What an import wrote and skipped."""

    @property
    def records(self) -> int:
        """Records written."""
        ...

    @property
    def known_facts(self) -> int:
        """Profile facts skipped: their person's profile already held the same text."""
        ...

    @property
    def forgotten_facts(self) -> int:
        """Profile facts skipped: written before their person's last ``/forget`` here."""
        ...

    @property
    def known_settings(self) -> int:
        """Settings and setting changes skipped: the same were here already."""
        ...


class MessageStore(Protocol):
    """The conversations' messages: storing, editing, turns, search and vectors."""

    async def generation(self, *, conversation_key: str) -> int:
        """How many times the conversation was reset."""
        ...

    async def add_message(
        self,
        *,
        conversation: Conversation,
        role: Role,
        author_id: str,
        author_name: str,
        content: str,
        tokens: int,
        message_id: str | None,
        created_at: float,
        reply_to: int | None = None,
        importance: int = 0,
        awaited_by: str | None = None,
    ) -> StoredMessage:
        """Store a message; :class:`Duplicate` when the conversation already holds one with
        this ``message_id`` (stored by another delivery or process: it is not stored again).
        ``awaited_by``: a process that will answer it (its holder name, :class:`LeaseStore`);
        the message awaits its answer from the moment it is stored, in the same
        transaction."""
        ...

    async def rename_author(
        self, *, conversation_key: str, stored_id: int, author_name: str, tokens: int
    ) -> bool:
        """Give a stored message its author's name (learned after it was stored) and the
        token count that goes with it."""
        ...

    async def edit_message(
        self,
        *,
        conversation_key: str,
        message_id: str,
        content: str,
        tokens: int,
        importance: int | None = None,
    ) -> bool:
        """Replace a message's text (and its importance score, when given); its vectors go."""
        ...

    async def mark_message(self, *, channel_key: str, message_id: str, delta: int) -> bool:
        """Add ``delta`` (+1, -1) to the 📌 marks of a message of the channel or its threads
        (a thread's copy of its root too), never below zero; False when no conversation there
        has it."""
        ...

    async def delete_message(self, *, conversation_key: str, message_id: str) -> bool: ...

    async def set_message_id(
        self, *, conversation_key: str, stored_id: int, message_id: str
    ) -> bool:
        """Link a stored message to its platform message."""
        ...

    async def find_message(
        self, *, conversation_key: str, message_id: str
    ) -> StoredMessage | None: ...

    async def recent_messages(
        self, *, conversation_key: str, through_id: int, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        """Messages with id ``<= through_id`` whose turn is after ``after_turn``, newest first."""
        ...

    async def turn_costs(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        before_turn: int | None,
        limit: int,
    ) -> Sequence[TurnCost]:
        """The newest turns (at most ``limit``, at least one while there are any) after
        ``after_turn`` and before ``before_turn`` (None: any) that begin by ``through_id``,
        newest first, each with its messages with id ``<= through_id``: what
        ``recent_messages`` would return, as turns; none once there are no more."""
        ...

    async def important_turns(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        through_turn: int,
        turns: int,
    ) -> Sequence[TurnCost]:
        """The newest ``turns`` turns after ``after_turn`` through ``through_turn`` that hold
        an important message (counting messages with id ``<= through_id``), newest first."""
        ...

    async def messages_between(
        self, *, conversation_key: str, first_id: int, through_id: int
    ) -> Sequence[StoredMessage]:
        """Messages with ids from ``first_id`` through ``through_id``, oldest first."""
        ...

    async def window_messages(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        """The rows of a prompt's recent turns, by id (ascending), oldest first; ids that are
        not there are left out."""
        ...

    async def messages_after_turn(
        self, *, conversation_key: str, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        """Messages whose turn is after ``after_turn``, oldest first."""
        ...

    async def messages_through_turn(
        self, *, conversation_key: str, through_turn: int, after_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        """Messages whose turn is at most ``through_turn``, oldest first, from ``after_id``."""
        ...

    async def messages_by_id(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        """The conversation's messages among ``ids``, oldest first."""
        ...

    async def last_message_id(self, *, conversation_key: str) -> int | None: ...

    async def newest_messages(self, *, platform: str, since: float) -> Sequence[NewestMessage]:
        """Per conversation of ``platform`` that has a person's message with a platform id
        stored at ``since`` or later: the newest such message, most recent first."""
        ...

    async def count_messages(self, *, conversation_key: str) -> int: ...

    async def has_answered(self, *, conversation_key: str) -> bool:
        """Whether the conversation holds an answer of the bot's."""
        ...

    async def term_counts(self, *, conversation_key: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the conversation's messages hold each term."""
        ...

    async def search_messages(
        self, *, conversation_key: str, terms: Sequence[str], before_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        """Up to ``limit`` of the conversation's messages before ``before_id`` holding any of
        ``terms``, the most relevant first by the store's own measure (recall scores them)."""
        ...

    async def save_vector(
        self, *, message_id: int, content: str, model: str, vector: bytes
    ) -> bool:
        """Store a message's embedding unless the message is gone or no longer ``content``."""
        ...

    async def unembedded(
        self, *, before_id: int | None, model: str, limit: int
    ) -> Sequence[tuple[int, str]]:
        """``(id, content)`` of the newest messages (of any conversation) before ``before_id``
        (None: all) that have no ``model`` vector."""
        ...

    async def vector(self, *, message_id: int, model: str) -> bytes | None: ...

    async def vectors(
        self, *, conversation_key: str, before_id: int, model: str, limit: int
    ) -> Sequence[tuple[int, bytes]]:
        """``(id, vector)`` of the newest ``limit`` embedded messages before ``before_id``."""
        ...

    async def reset(self, *, conversation: Conversation, include_pins: bool) -> int:
        """Delete the conversation's messages (with their search entries and vectors),
        summaries and logged prompts (and its channel's pins), and move its generation on;
        returns how many messages went."""
        ...

    async def claim_request(self, *, request_id: str, keep_seconds: float) -> bool:
        """True the first time a platform request (a slash command's trigger id) is seen,
        by any process; ids are remembered for ``keep_seconds``."""
        ...


class MemoryStore(Protocol):
    """What is remembered beside the messages: pins, profiles, summaries."""

    async def add_pin(
        self, *, channel_key: str, text: str, tokens: int, author_id: str, author_name: str
    ) -> Pin: ...

    async def remove_pin(self, *, channel_key: str, pin_id: int) -> bool: ...

    async def pins(self, *, channel_key: str) -> Sequence[Pin]:
        """The channel's pins (or its workspace's: ``Conversation.workspace_key``), oldest
        first."""
        ...

    async def add_profile_fact(
        self, *, person: Person, text: str, tokens: int, source: FactSource
    ) -> ProfileFact: ...

    async def profile_facts(self, *, person: Person) -> Sequence[ProfileFact]:
        """The person's facts in this workspace, oldest first."""
        ...

    async def pins_and_profile(
        self, *, channel_keys: Sequence[str], person: Person | None
    ) -> tuple[Sequence[Pin], Sequence[ProfileFact]]:
        """The pins of each of ``channel_keys`` (a channel's and its workspace's), oldest
        first, and ``profile_facts(person=...)`` (none when None), in one read: a prompt's."""
        ...

    async def remove_profile_facts(self, *, person: Person, fact_id: int | None) -> int:
        """Delete one fact (all when ``fact_id`` is None) and note when; returns how many."""
        ...

    async def profile_forgot_at(self, *, person: Person) -> float | None:
        """When the person last deleted from their profile."""
        ...

    async def latest_summary(self, *, conversation_key: str) -> Summary | None: ...

    async def save_summary(
        self, *, summary: NewSummary, generation: int, previous_id: int | None
    ) -> Summary | None:
        """Store ``summary`` unless the conversation was reset (its generation moved on) or
        summarised (its latest summary is no longer ``previous_id``) meanwhile."""
        ...


class UsageStore(Protocol):
    """Token usage per conversation, and the samples tokenizers are calibrated from, per model."""

    async def record_usage(
        self,
        *,
        conversation_key: str,
        model: str,
        purpose: str,
        prompt_tokens: int,
        completion_tokens: int,
        estimated: bool = False,
    ) -> None:
        """Add one request's tokens to the conversation's totals for ``model`` and
        ``purpose`` (``estimated``: counted by the bot, the server having sent none)."""
        ...

    async def usage(self, *, conversation_key: str) -> Sequence[UsageTotals]:
        """The conversation's totals, by purpose then model."""
        ...

    async def calibration_samples(self) -> Sequence[CalibrationSample]:
        """Every model's samples, oldest first."""
        ...

    async def add_calibration_sample(self, *, sample: CalibrationSample, keep: int) -> None:
        """Keep ``sample`` and, of its model's samples, only the newest ``keep``."""
        ...


class AdminStore(MetaStore, Protocol):
    """What operators do to a whole database: copy, export, import, check, recount, close."""

    async def backup(self, *, target: Path, pages: Callable[[int, int], None] = ...) -> None:
        """A consistent copy of the database at ``target``, taken while the bot runs;
        ``pages``: how much is copied of how much, after each step."""
        ...

    async def export_records(self, *, channel_key: str | None) -> list[dict[str, Any]]:
        """One channel's conversations (and its threads'), messages, pins, summaries and
        settings with their changes, and its people's profiles (everything, when None), as
        ``bot.store.archive`` records."""
        ...

    async def export_each(
        self,
        *,
        channel_key: str | None,
        write: Callable[[list[dict[str, Any]]], None],
        sized: Callable[[int], None] = ...,
    ) -> int:
        """:meth:`export_records` a chunk at a time, after telling ``sized`` how many there
        are; returns how many were written."""
        ...

    async def import_records(
        self, *, records: list[dict[str, Any]], advance: Callable[[int], None] = ...
    ) -> ImportedRecords:
        """Write exported records, all or none: refused (``ArchiveError``) when a
        conversation, message, pin or summary is already there, or a scope holds other
        settings (:mod:`bot.store.archive_settings`)."""
        ...

    async def health_problem(self) -> str | None:
        """Why the database is not fit to keep messages right now, or None."""
        ...

    async def ping(self) -> bool:
        """Whether the database answers a query."""
        ...

    async def connections(self) -> tuple[int, int] | None:
        """A connection pool's connections in use and the most it opens; None: no pool."""
        ...

    async def integrity_check(self) -> str:
        """``ok``, or the first damage found."""
        ...

    async def synchronous(self) -> str:
        """How commits reach the disk: ``full``, ``normal`` (or ``off``)."""
        ...

    async def conversations(self) -> Sequence[ConversationInfo]:
        """Every conversation, by key."""
        ...

    async def known_keys(self) -> set[str]:
        """Every conversation's key, the channel of every pin and every scope with settings
        or setting changes (a channel may hold only those)."""
        ...

    async def retokenize(self, *, count: Callable[[str], int]) -> int:
        """Recount every stored token count with ``count``; returns messages recounted."""
        ...

    async def close(self) -> None: ...


class Store(
    MessageStore, MemoryStore, UsageStore, AdminStore, LeaseStore, SettingsStore, Ledger,
    PromptLog, Protocol,
):  # fmt: skip
    """All of the store."""
