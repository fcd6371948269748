"""The in-memory store's tables: plain dicts of rows, and the lookups every part shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.core.models import Person, Pin, ProfileFact, Role, StoredMessage, Summary
from bot.core.ports.prompts import PromptRecord
from bot.core.ports.settings import SettingChange
from bot.core.ports.spend import ModelCall
from bot.core.ports.store import CalibrationSample


@dataclass
class MessageRow:
    """A stored message as the store keeps it."""

    id: int
    conversation: str
    reply_to: int | None
    role: Role
    author_id: str
    author_name: str
    content: str
    tokens: int
    message_id: str | None
    created_at: float
    importance: int = 0
    marks: int = 0

    @property
    def turn(self) -> int:
        return self.reply_to if self.reply_to is not None else self.id

    @property
    def important(self) -> bool:
        return self.importance > 0 or self.marks > 0

    def stored(self) -> StoredMessage:
        return StoredMessage(
            id=self.id,
            turn_id=self.turn,
            role=self.role,
            author_id=self.author_id,
            author_name=self.author_name,
            content=self.content,
            tokens=self.tokens,
            created_at=self.created_at,
            message_id=self.message_id,
            important=self.important,
        )


@dataclass
class AwaitingRow:
    """A message awaiting its answer, and the process answering it."""

    conversation: str
    platform: str
    holder: str
    queued_at: float
    shown_as: str | None = None


@dataclass(frozen=True)
class SettingRow:
    """A setting's value, and who set it when."""

    value: str
    by_id: str
    by_name: str
    at: float


@dataclass
class ConversationRow:
    key: str
    channel_key: str
    generation: int
    created_at: float


class Tables:
    """What the store holds; ids only grow, per table, as in the SQLite store."""

    def __init__(self) -> None:
        self.conversation_rows: dict[str, ConversationRow] = {}
        self.messages: dict[int, MessageRow] = {}
        self.pin_rows: dict[int, Pin] = {}
        self.facts: dict[int, ProfileFact] = {}
        self.forgets: dict[Person, float] = {}
        self.summaries: dict[int, Summary] = {}
        self._vectors: dict[int, tuple[str, bytes]] = {}  # message id: model, vector
        self._usage: dict[tuple[str, str, str], tuple[int, int, int, int]] = {}
        self._calibration_samples: list[CalibrationSample] = []
        self.calls: list[ModelCall] = []  # the ledger, in the order recorded
        self.prompt_rows: dict[int, PromptRecord] = {}  # the prompt log, by id
        self._meta: dict[str, str] = {}
        self._requests: dict[str, float] = {}
        self.lease_rows: dict[str, tuple[str, float]] = {}  # name: holder, runs until
        self.awaiting: dict[int, AwaitingRow] = {}  # message id: ...
        self._last_ids: dict[str, int] = {}  # per table: the last id given
        self.setting_rows: dict[str, dict[str, SettingRow]] = {}  # scope: key: ...
        self.setting_log: dict[int, SettingChange] = {}  # change id: ...

    def next_id(self, name: str, table: dict[int, Any]) -> int:
        """A new id for the table ``name``, past every one it held so far (never used twice,
        even once deleted)."""
        last = max(self._last_ids.get(name, 0), max(table, default=0)) + 1
        self._last_ids[name] = last
        return last

    def add_usage(
        self, key: str, model: str, purpose: str, prompt: int, completion: int, estimated: bool
    ) -> None:
        """One request added to the conversation's lifetime totals for the model and purpose."""
        requests, prompts, completions, counted = self._usage.get((key, model, purpose), (0,) * 4)
        self._usage[key, model, purpose] = (
            requests + 1,
            prompts + prompt,
            completions + completion,
            counted + int(estimated),
        )

    def _rows(self, conversation_key: str) -> list[MessageRow]:
        """The conversation's messages, by id."""
        rows = [row for row in self.messages.values() if row.conversation == conversation_key]
        return sorted(rows, key=lambda row: row.id)

    def _by_platform_id(self, conversation_key: str, message_id: str) -> MessageRow | None:
        return next((r for r in self._rows(conversation_key) if r.message_id == message_id), None)
