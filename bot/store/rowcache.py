"""The stored messages recent prompts were built from, kept in memory by id.

Consecutive prompts of a conversation share almost all their recent turns: with this cache
the next prompt reads from the database only the rows it has not seen (usually none: a new
message enters the cache as it is stored). The database stays the truth for which messages
a prompt holds and what they cost; the cache only spares reading their text again.

Correctness rests on three facts. Message ids are never reused (``AUTOINCREMENT``; an import
keeps its ids but only goes into a database without that conversation), so a row deleted by
another process (``bot reset``) is simply never asked for again. Every change this process
makes to a stored message (edit, delete, new platform id, reset, import, recount) goes through
the store, which drops what it changed after the change. And the store's statements run one at
a time in the order they were issued, their results delivered in that order: a read issued
before an edit is cached before the edit's drop, never after it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from bot.models import StoredMessage

MAX_CHARS = 4_000_000
"""Characters of message text kept in all (a few MB; the oldest cached go first)."""
MAX_ENTRY_CHARS = 16_000
"""Longer messages are read from the database each time rather than cached."""


class RowCache:
    def __init__(self, *, max_chars: int = MAX_CHARS, max_entry_chars: int = MAX_ENTRY_CHARS):
        self._max_chars = max_chars
        self._max_entry_chars = max_entry_chars
        self._rows: OrderedDict[int, tuple[str, StoredMessage]] = OrderedDict()
        self._chars = 0

    def __len__(self) -> int:
        return len(self._rows)

    def get_many(self, conversation_key: str, ids: Iterable[int]) -> list[StoredMessage | None]:
        """The cached row of each id, None where there is none. Hits don't reorder: rows
        leave in the order they came, which is the order messages leave prompts."""
        rows = self._rows
        found: list[StoredMessage | None] = []
        for message_id in ids:
            entry = rows.get(message_id)
            found.append(entry[1] if entry is not None and entry[0] == conversation_key else None)
        return found

    def put(self, conversation_key: str, rows: Iterable[StoredMessage]) -> None:
        for row in rows:
            size = len(row.content) + len(row.author_name)
            if size > self._max_entry_chars:
                continue
            old = self._rows.pop(row.id, None)
            if old is not None:
                self._chars -= len(old[1].content) + len(old[1].author_name)
            self._rows[row.id] = (conversation_key, row)
            self._chars += size
        while self._chars > self._max_chars and self._rows:
            _, (_, evicted) = self._rows.popitem(last=False)
            self._chars -= len(evicted.content) + len(evicted.author_name)

    def drop(self, conversation_key: str, *, platform_id: str | None = None) -> None:
        """Forget the conversation's rows (only those with ``platform_id``, when given)."""
        for message_id, (key, row) in list(self._rows.items()):
            if key == conversation_key and (platform_id is None or row.message_id == platform_id):
                del self._rows[message_id]
                self._chars -= len(row.content) + len(row.author_name)

    def drop_id(self, message_id: int) -> None:
        entry = self._rows.pop(message_id, None)
        if entry is not None:
            self._chars -= len(entry[1].content) + len(entry[1].author_name)

    def clear(self) -> None:
        self._rows.clear()
        self._chars = 0
