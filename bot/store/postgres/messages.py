"""Stored messages: writing them (with their search terms) and reading them back.

A write that touches a conversation takes its row first (``FOR UPDATE``, or the upsert that
makes it), so that two processes writing one conversation serialize cleanly.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.models import Conversation, Role, StoredMessage
from bot.core.ports.store import Duplicate, NewestMessage
from bot.store.postgres import search
from bot.store.postgres.connection import Connection, text
from bot.store.sqlite.rows import MESSAGE_COLUMNS, message

# One round trip: the conversation's row (made, or taken: the upsert locks it), the message
# unless its platform id is already there (with the terms it is found under), the terms it is
# counted under counted, and its place among the messages awaiting an answer (when it awaits
# one), in that order.
_ADD = """
WITH conversation AS (
    INSERT INTO conversations (key, channel_key, created_at) VALUES ($1, $2, $3)
    ON CONFLICT (key) DO UPDATE SET key = excluded.key RETURNING key
), added AS (
    INSERT INTO messages (conversation, reply_to, role, author_id, author_name, content,
        tokens, platform_message_id, created_at, importance, terms)
    SELECT key, $4::bigint, $5::text, $6::text, $7::text, $8::text, $9::integer, $10::text,
        $11::double precision, $12::integer, $13::text[] FROM conversation
    ON CONFLICT DO NOTHING RETURNING id
), counted AS (
    INSERT INTO search_terms (conversation, term, docs)
    SELECT $1, term, 1 FROM added, unnest($14::text[]) AS term
    ON CONFLICT (conversation, term) DO UPDATE SET docs = search_terms.docs + 1
), queued AS (
    INSERT INTO awaiting (message_id, conversation, platform, holder, queued_at)
    SELECT id, $1, $15::text, $16::text, $3 FROM added WHERE $16::text IS NOT NULL
)
SELECT id FROM added
"""
_BY_PLATFORM_ID = (
    "SELECT id, content, terms FROM messages WHERE conversation = $1 AND platform_message_id = $2"
)


class Messages(Connection):
    async def generation(self, *, conversation_key: str) -> int:
        value = await self._pool.fetchval(
            "SELECT generation FROM conversations WHERE key = $1", conversation_key
        )
        return int(value) if value is not None else 0

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
        content, author_name = text(content), text(author_name)
        terms = search.terms_of(content) if self._index else None
        counted = search.counted_terms(content) if self._index else None
        async with self._writing():
            new_id = await self._pool.fetchval(
                _ADD,
                key,
                conversation.channel_key,
                time.time(),
                reply_to,
                role.value,
                author_id,
                author_name,
                content,
                tokens,
                message_id,
                created_at,
                importance,
                terms,
                counted,
                conversation.platform,
                awaited_by,
            )
        if new_id is None:
            assert message_id is not None  # only a platform id can collide
            existing = await self.find_message(conversation_key=key, message_id=message_id)
            assert existing is not None
            raise Duplicate(existing)
        return StoredMessage(
            id=int(new_id),
            turn_id=reply_to if reply_to is not None else int(new_id),
            role=role,
            author_id=author_id,
            author_name=author_name,
            content=content,
            tokens=tokens,
            created_at=created_at,
            message_id=message_id,
            important=importance > 0,
        )

    async def edit_message(
        self,
        *,
        conversation_key: str,
        message_id: str,
        content: str,
        tokens: int,
        importance: int | None = None,
    ) -> bool:
        content = text(content)
        async with self._transaction() as db:
            await self._lock_conversation(db, conversation_key)
            row = await db.fetchrow(_BY_PLATFORM_ID, conversation_key, message_id)
            if row is None:
                return False
            stored_id, old, old_terms = int(row[0]), str(row[1]), row[2]
            new_terms = search.terms_of(content) if old_terms is not None else None
            await db.execute(
                "UPDATE messages SET content = $1, tokens = $2,"
                " importance = COALESCE($3, importance), terms = $4::text[] WHERE id = $5",
                content,
                tokens,
                importance,
                new_terms,
                stored_id,
            )
            await db.execute("DELETE FROM message_vectors WHERE message_id = $1", stored_id)
            if old_terms is not None and old != content:
                old_counted, new_counted = search.counted_terms(old), search.counted_terms(content)
                await search.recount(db, conversation_key, old_counted, new_counted)
        return True

    async def delete_message(self, *, conversation_key: str, message_id: str) -> bool:
        async with self._transaction() as db:
            await self._lock_conversation(db, conversation_key)
            row = await db.fetchrow(
                "DELETE FROM messages WHERE conversation = $1 AND platform_message_id = $2"
                " RETURNING terms IS NOT NULL, content",
                conversation_key,
                message_id,
            )
            if row is None:
                return False
            if row[0]:  # it was in the index
                await search.recount(db, conversation_key, search.counted_terms(row[1]), [])
        return True

    async def mark_message(self, *, channel_key: str, message_id: str, delta: int) -> bool:
        count = await self._write(
            "UPDATE messages SET marks = GREATEST(marks + $1, 0)"
            " WHERE conversation IN (SELECT key FROM conversations WHERE channel_key = $2)"
            " AND platform_message_id = $3",
            delta,
            channel_key,
            message_id,
        )
        return count > 0

    async def set_message_id(
        self, *, conversation_key: str, stored_id: int, message_id: str
    ) -> bool:
        count = await self._write(
            "UPDATE messages SET platform_message_id = $1 WHERE conversation = $2 AND id = $3",
            message_id,
            conversation_key,
            stored_id,
        )
        return count > 0

    async def rename_author(
        self, *, conversation_key: str, stored_id: int, author_name: str, tokens: int
    ) -> bool:
        count = await self._write(
            "UPDATE messages SET author_name = $1, tokens = $2 WHERE conversation = $3 AND id = $4",
            text(author_name),
            tokens,
            conversation_key,
            stored_id,
        )
        return count > 0

    async def newest_messages(self, *, platform: str, since: float) -> Sequence[NewestMessage]:
        rows = await self._rows(
            "SELECT conversation, platform_message_id, created_at FROM ("
            " SELECT DISTINCT ON (conversation) conversation, platform_message_id, created_at"
            " FROM messages WHERE role = 'user' AND platform_message_id IS NOT NULL"
            " AND created_at >= $1 AND left(conversation, length($2)) = $2"
            " ORDER BY conversation, created_at DESC, id DESC) newest"
            " ORDER BY created_at DESC",
            since,
            f"{platform}:",
        )
        return [NewestMessage(str(key), str(mid), float(at)) for key, mid, at in rows]

    async def find_message(self, *, conversation_key: str, message_id: str) -> StoredMessage | None:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = $1 AND platform_message_id = $2 LIMIT 1",
            conversation_key,
            message_id,
        )
        return next((message(row) for row in rows), None)

    async def recent_messages(
        self, *, conversation_key: str, through_id: int, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        # A message's turn is never later than its id: ``id > after_turn`` bounds the range.
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = $1 AND id > $2 AND id <= $3 AND COALESCE(reply_to, id) > $2"
            " ORDER BY id DESC LIMIT $4",
            conversation_key,
            after_turn,
            through_id,
            limit,
        )
        return [message(row) for row in rows]

    async def messages_between(
        self, *, conversation_key: str, first_id: int, through_id: int
    ) -> Sequence[StoredMessage]:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = $1 AND id >= $2 AND id <= $3 ORDER BY id",
            conversation_key,
            first_id,
            through_id,
        )
        return [message(row) for row in rows]

    async def window_messages(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        return await self.messages_by_id(conversation_key=conversation_key, ids=ids)

    async def messages_by_id(
        self, *, conversation_key: str, ids: Sequence[int]
    ) -> Sequence[StoredMessage]:
        if not ids:
            return []
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = $1 AND id = ANY($2::bigint[]) ORDER BY id",
            conversation_key,
            [int(i) for i in ids],
        )
        return [message(row) for row in rows]

    async def messages_after_turn(
        self, *, conversation_key: str, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = $1 AND id > $2 AND COALESCE(reply_to, id) > $2"
            " ORDER BY id LIMIT $3",
            conversation_key,
            after_turn,
            limit,
        )
        return [message(row) for row in rows]

    async def messages_through_turn(
        self, *, conversation_key: str, through_turn: int, after_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = $1 AND id > $2 AND COALESCE(reply_to, id) <= $3"
            " ORDER BY id LIMIT $4",
            conversation_key,
            after_id,
            through_turn,
            limit,
        )
        return [message(row) for row in rows]

    async def last_message_id(self, *, conversation_key: str) -> int | None:
        value = await self._pool.fetchval(
            "SELECT MAX(id) FROM messages WHERE conversation = $1", conversation_key
        )
        return int(value) if value is not None else None

    async def count_messages(self, *, conversation_key: str) -> int:
        value = await self._pool.fetchval(
            "SELECT COUNT(*) FROM messages WHERE conversation = $1", conversation_key
        )
        return int(value or 0)

    async def has_answered(self, *, conversation_key: str) -> bool:
        value = await self._pool.fetchval(
            "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation = $1 AND role = $2)",
            conversation_key,
            Role.ASSISTANT.value,
        )
        return bool(value)
