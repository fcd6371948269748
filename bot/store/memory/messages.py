"""The in-memory store's messages: storing and editing, turns, search, vectors."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from bot.core.memory.terms import document_terms
from bot.core.models import Conversation, Role, StoredMessage
from bot.core.ports.store import Duplicate, NewestMessage, TurnCost
from bot.store.accents import folded
from bot.store.memory.tables import AwaitingRow, ConversationRow, MessageRow, Tables


def _terms(content: str) -> set[str]:
    return document_terms(content)


def _turns(rows: Iterable[MessageRow]) -> dict[int, list[MessageRow]]:
    """``rows`` grouped by turn, each turn's messages by id."""
    turns: dict[int, list[MessageRow]] = {}
    for row in sorted(rows, key=lambda r: r.id):
        turns.setdefault(row.turn, []).append(row)
    return turns


def _cost(turn: int, rows: Sequence[MessageRow]) -> TurnCost:
    return TurnCost(
        turn=turn,
        ids=tuple(row.id for row in rows),
        tokens=sum(row.tokens for row in rows),
        important=any(row.important for row in rows),
        opened_at=next(
            (row.created_at for row in rows if row.id == turn and row.role is Role.USER), None
        ),
    )


class Messages(Tables):
    """The :class:`bot.core.ports.store.MessageStore` part of the in-memory store."""

    async def generation(self, *, conversation_key: str) -> int:
        held = self.conversation_rows.get(conversation_key)
        return held.generation if held is not None else 0

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
        key = conversation.key
        if message_id is not None:
            existing = self._by_platform_id(key, message_id)
            if existing is not None:
                raise Duplicate(existing.stored())
        self.conversation_rows.setdefault(
            key, ConversationRow(key, conversation.channel_key, 0, time.time())
        )
        row = MessageRow(
            id=self.next_id("messages", self.messages),
            conversation=key,
            reply_to=reply_to,
            role=role,
            author_id=author_id,
            author_name=author_name,
            content=content,
            tokens=tokens,
            message_id=message_id,
            created_at=created_at,
            importance=importance,
        )
        self.messages[row.id] = row
        if awaited_by is not None:
            self.awaiting[row.id] = AwaitingRow(key, conversation.platform, awaited_by, time.time())
        return row.stored()

    async def rename_author(
        self, *, conversation_key: str, stored_id: int, author_name: str, tokens: int
    ) -> bool:
        row = self.messages.get(stored_id)
        if row is None or row.conversation != conversation_key:
            return False
        row.author_name, row.tokens = author_name, tokens
        return True

    async def edit_message(
        self,
        *,
        conversation_key: str,
        message_id: str,
        content: str,
        tokens: int,
        importance: int | None = None,
    ) -> bool:
        row = self._by_platform_id(conversation_key, message_id)
        if row is None:
            return False
        row.content, row.tokens = content, tokens
        if importance is not None:
            row.importance = importance
        self._vectors.pop(row.id, None)
        return True

    async def mark_message(self, *, channel_key: str, message_id: str, delta: int) -> bool:
        marked = False
        for row in self.messages.values():
            held = self.conversation_rows.get(row.conversation)
            if held and held.channel_key == channel_key and row.message_id == message_id:
                row.marks = max(row.marks + delta, 0)
                marked = True
        return marked

    async def delete_message(self, *, conversation_key: str, message_id: str) -> bool:
        row = self._by_platform_id(conversation_key, message_id)
        if row is None:
            return False
        del self.messages[row.id]
        self._vectors.pop(row.id, None)
        return True

    async def set_message_id(
        self, *, conversation_key: str, stored_id: int, message_id: str
    ) -> bool:
        row = self.messages.get(stored_id)
        if row is None or row.conversation != conversation_key:
            return False
        row.message_id = message_id
        return True

    async def find_message(self, *, conversation_key: str, message_id: str) -> StoredMessage | None:
        row = self._by_platform_id(conversation_key, message_id)
        return row.stored() if row is not None else None

    async def recent_messages(
        self, *, conversation_key: str, through_id: int, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = [
            row.stored()
            for row in reversed(self._rows(conversation_key))
            if row.id <= through_id and row.turn > after_turn
        ]
        return rows[:limit]

    async def turn_costs(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        before_turn: int | None,
        limit: int,
    ) -> Sequence[TurnCost]:
        turns = _turns(
            row
            for row in self._rows(conversation_key)
            if row.id <= through_id
            and row.turn > after_turn
            and (before_turn is None or row.turn < before_turn)
        )
        newest = sorted(turns, reverse=True)[: max(limit, 1)]
        return [_cost(turn, turns[turn]) for turn in newest]

    async def important_turns(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        through_turn: int,
        turns: int,
    ) -> Sequence[TurnCost]:
        held = _turns(
            row
            for row in self._rows(conversation_key)
            if row.id <= through_id and after_turn < row.turn <= through_turn
        )
        important = [
            turn for turn in sorted(held, reverse=True) if _cost(turn, held[turn]).important
        ]
        return [_cost(turn, held[turn]) for turn in important[:turns]]

    async def messages_between(
        self, *, conversation_key: str, first_id: int, through_id: int
    ) -> Sequence[StoredMessage]:
        return [
            row.stored() for row in self._rows(conversation_key) if first_id <= row.id <= through_id
        ]

    async def window_messages(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        return await self.messages_by_id(conversation_key=conversation_key, ids=ids)

    async def messages_after_turn(
        self, *, conversation_key: str, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = [row.stored() for row in self._rows(conversation_key) if row.turn > after_turn]
        return rows[:limit]

    async def messages_through_turn(
        self, *, conversation_key: str, through_turn: int, after_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = [
            row.stored()
            for row in self._rows(conversation_key)
            if row.id > after_id and row.turn <= through_turn
        ]
        return rows[:limit]

    async def messages_by_id(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        wanted = set(ids)
        return [row.stored() for row in self._rows(conversation_key) if row.id in wanted]

    async def last_message_id(self, *, conversation_key: str) -> int | None:
        return max((row.id for row in self._rows(conversation_key)), default=None)

    async def newest_messages(self, *, platform: str, since: float) -> Sequence[NewestMessage]:
        newest: dict[str, NewestMessage] = {}
        for row in self.messages.values():
            if (
                row.role is Role.USER
                and row.message_id is not None
                and row.created_at >= since
                and row.conversation.startswith(f"{platform}:")
            ):
                held = newest.get(row.conversation)
                if held is None or row.created_at > held.created_at:
                    newest[row.conversation] = NewestMessage(
                        row.conversation, row.message_id, row.created_at
                    )
        return sorted(newest.values(), key=lambda found: found.created_at, reverse=True)

    async def count_messages(self, *, conversation_key: str) -> int:
        return len(self._rows(conversation_key))

    async def has_answered(self, *, conversation_key: str) -> bool:
        return any(row.role is Role.ASSISTANT for row in self._rows(conversation_key))

    async def term_counts(self, *, conversation_key: str, terms: Sequence[str]) -> dict[str, int]:
        held = [_terms(row.content) for row in self._rows(conversation_key)]
        return {term: sum(term in message for message in held) for term in terms}

    async def search_messages(
        self, *, conversation_key: str, terms: Sequence[str], before_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        wanted = {folded(term) for term in terms}  # with or without accents, as SQLite
        held = [
            (len({folded(term) for term in _terms(row.content)} & wanted), row)
            for row in self._rows(conversation_key)
            if row.id < before_id
        ]
        found = sorted((hit for hit in held if hit[0]), key=lambda hit: (-hit[0], -hit[1].id))
        return [row.stored() for _, row in found[:limit]]

    async def save_vector(
        self, *, message_id: int, content: str, model: str, vector: bytes
    ) -> bool:
        row = self.messages.get(message_id)
        if row is None or row.content != content:
            return False
        self._vectors[message_id] = (model, vector)
        return True

    async def unembedded(
        self, *, before_id: int | None, model: str, limit: int
    ) -> Sequence[tuple[int, str]]:
        rows = sorted(self.messages.values(), key=lambda row: row.id, reverse=True)
        return [
            (row.id, row.content)
            for row in rows
            if (before_id is None or row.id < before_id)
            and self._vectors.get(row.id, ("", b""))[0] != model
        ][:limit]

    async def vector(self, *, message_id: int, model: str) -> bytes | None:
        held = self._vectors.get(message_id)
        return held[1] if held is not None and held[0] == model else None

    async def vectors(
        self, *, conversation_key: str, before_id: int, model: str, limit: int
    ) -> Sequence[tuple[int, bytes]]:
        found = [
            (row.id, vector)
            for row in reversed(self._rows(conversation_key))
            if row.id < before_id and (vector := await self.vector(message_id=row.id, model=model))
        ]
        return found[:limit]

    async def reset(self, *, conversation: Conversation, include_pins: bool) -> int:
        key = conversation.key
        gone = [row.id for row in self._rows(key)]
        for message_id in gone:
            del self.messages[message_id]
            self._vectors.pop(message_id, None)
        for summary in [s for s in self.summaries.values() if s.conversation_key == key]:
            del self.summaries[summary.id]
        for record in [r for r in self.prompt_rows.values() if r.conversation_key == key]:
            del self.prompt_rows[record.id]
        held = self.conversation_rows.get(key)
        if held is not None:
            held.generation += 1
        if include_pins:
            for pin in [
                p for p in self.pin_rows.values() if p.channel_key == conversation.channel_key
            ]:
                del self.pin_rows[pin.id]
        return len(gone)

    async def claim_request(self, *, request_id: str, keep_seconds: float) -> bool:
        now = time.time()
        self._requests = {r: at for r, at in self._requests.items() if at >= now - keep_seconds}
        if request_id in self._requests:
            return False
        self._requests[request_id] = now
        return True
