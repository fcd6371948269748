"""Stored messages: writing them (with their search entries) and reading them back."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.models import Conversation, Role, StoredMessage
from bot.core.ports.store import Duplicate, NewestMessage
from bot.store.sqlite import search
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.rows import MESSAGE_COLUMNS, message

_INSERT = (
    "INSERT INTO messages (conversation, reply_to, role, author_id, author_name,"
    " content, tokens, platform_message_id, created_at, importance)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
RECENT = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
    " WHERE conversation = ? AND id > ? AND id <= ? AND COALESCE(reply_to, id) > ?"
    " ORDER BY id DESC LIMIT ?"
)
BY_IDS = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
    " WHERE conversation = ? AND id IN (SELECT value FROM json_each(?)) ORDER BY id"
)
_BY_PLATFORM_ID = (
    "SELECT id, content FROM messages WHERE conversation = ? AND platform_message_id = ?"
)


def _ids(ids: Sequence[int]) -> str:
    return "[" + ",".join(str(int(i)) for i in ids) + "]"


class Messages(Connection):
    async def generation(self, *, conversation_key: str) -> int:
        rows = await self._rows(
            "SELECT generation FROM conversations WHERE key = ?", (conversation_key,)
        )
        return next((int(row[0]) for row in rows), 0)

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
        values = (key, reply_to, role.value, author_id, author_name, content, tokens)
        async with self._transaction():
            await self._db.execute(
                "INSERT OR IGNORE INTO conversations (key, channel_key, created_at)"
                " VALUES (?, ?, ?)",
                (key, conversation.channel_key, time.time()),
            )
            cursor = await self._db.execute(_INSERT, (*values, message_id, created_at, importance))
            inserted, new_id = cursor.rowcount, cursor.lastrowid
            if inserted > 0 and new_id is not None and self._index:
                await search.index(self._db, [(new_id, key, content)])
            if inserted > 0 and awaited_by is not None:
                await self._db.execute(
                    "INSERT INTO awaiting (message_id, conversation, platform, holder, queued_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (new_id, key, conversation.platform, awaited_by, time.time()),
                )
        if inserted < 1 or new_id is None:
            assert message_id is not None  # only a platform id can collide
            existing = await self.find_message(conversation_key=key, message_id=message_id)
            assert existing is not None
            raise Duplicate(existing)
        return StoredMessage(
            id=new_id,
            turn_id=reply_to if reply_to is not None else new_id,
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
        async with self._transaction():
            rows = await self._rows(_BY_PLATFORM_ID, (conversation_key, message_id))
            if not rows:
                return False
            stored_id, old = int(rows[0][0]), str(rows[0][1])
            await self._db.execute(
                "UPDATE messages SET content = ?, tokens = ?,"
                " importance = COALESCE(?, importance) WHERE id = ?",
                (content, tokens, importance, stored_id),
            )
            if old != content:
                await search.replace(self._db, stored_id, conversation_key, old, content)
        return True

    async def delete_message(self, *, conversation_key: str, message_id: str) -> bool:
        async with self._transaction():
            rows = await self._rows(_BY_PLATFORM_ID, (conversation_key, message_id))
            if not rows:
                return False
            stored_id, content = int(rows[0][0]), str(rows[0][1])
            await search.unindex(self._db, [(stored_id, conversation_key, content)])
            await self._db.execute("DELETE FROM messages WHERE id = ?", (stored_id,))
        return True

    async def mark_message(self, *, channel_key: str, message_id: str, delta: int) -> bool:
        changed = await self._write(
            "UPDATE messages SET marks = MAX(marks + ?, 0)"
            " WHERE conversation IN (SELECT key FROM conversations WHERE channel_key = ?)"
            " AND platform_message_id = ?",
            (delta, channel_key, message_id),
        )
        return changed > 0

    async def set_message_id(
        self, *, conversation_key: str, stored_id: int, message_id: str
    ) -> bool:
        changed = await self._write(
            "UPDATE messages SET platform_message_id = ? WHERE conversation = ? AND id = ?",
            (message_id, conversation_key, stored_id),
        )
        return changed > 0

    async def rename_author(
        self, *, conversation_key: str, stored_id: int, author_name: str, tokens: int
    ) -> bool:
        changed = await self._write(
            "UPDATE messages SET author_name = ?, tokens = ? WHERE conversation = ? AND id = ?",
            (author_name, tokens, conversation_key, stored_id),
        )
        return changed > 0

    async def newest_messages(self, *, platform: str, since: float) -> Sequence[NewestMessage]:
        # SQLite takes the bare columns from the row holding MAX(created_at).
        rows = await self._rows(
            "SELECT conversation, platform_message_id, MAX(created_at) FROM messages"
            " WHERE role = 'user' AND platform_message_id IS NOT NULL AND created_at >= ?"
            " AND substr(conversation, 1, ?) = ?"
            " GROUP BY conversation ORDER BY MAX(created_at) DESC",
            (since, len(platform) + 1, f"{platform}:"),
        )
        return [NewestMessage(str(key), str(mid), float(at)) for key, mid, at in rows]

    async def find_message(self, *, conversation_key: str, message_id: str) -> StoredMessage | None:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND platform_message_id = ? LIMIT 1",
            (conversation_key, message_id),
        )
        return next((message(row) for row in rows), None)

    async def recent_messages(
        self, *, conversation_key: str, through_id: int, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        # A message's turn is never later than its id, so ``id > after_turn`` bounds the
        # index range without losing a row.
        rows = await self._rows(
            RECENT, (conversation_key, after_turn, through_id, after_turn, limit)
        )
        return [message(row) for row in rows]

    async def messages_between(
        self, *, conversation_key: str, first_id: int, through_id: int
    ) -> Sequence[StoredMessage]:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id >= ? AND id <= ? ORDER BY id",
            (conversation_key, first_id, through_id),
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
        rows = await self._rows(BY_IDS, (conversation_key, _ids(ids)))
        return [message(row) for row in rows]

    async def messages_after_turn(
        self, *, conversation_key: str, after_turn: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id > ? AND COALESCE(reply_to, id) > ?"
            " ORDER BY id LIMIT ?",
            (conversation_key, after_turn, after_turn, limit),
        )
        return [message(row) for row in rows]

    async def messages_through_turn(
        self, *, conversation_key: str, through_turn: int, after_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        rows = await self._rows(
            f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
            " WHERE conversation = ? AND id > ? AND COALESCE(reply_to, id) <= ?"
            " ORDER BY id LIMIT ?",
            (conversation_key, after_id, through_turn, limit),
        )
        return [message(row) for row in rows]

    async def last_message_id(self, *, conversation_key: str) -> int | None:
        rows = await self._rows(
            "SELECT MAX(id) FROM messages WHERE conversation = ?", (conversation_key,)
        )
        value = next(iter(rows))[0]
        return int(value) if value is not None else None

    async def count_messages(self, *, conversation_key: str) -> int:
        # Counted as messages are stored and deleted (triggers), not by scanning them.
        rows = await self._rows(
            "SELECT messages FROM conversations WHERE key = ?", (conversation_key,)
        )
        return next((int(row[0]) for row in rows), 0)

    async def has_answered(self, *, conversation_key: str) -> bool:
        rows = await self._rows(
            "SELECT 1 FROM messages WHERE conversation = ? AND role = ? LIMIT 1",
            (conversation_key, Role.ASSISTANT.value),
        )
        return bool(rows)
