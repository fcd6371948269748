"""The stored messages of each conversation's last prompt, kept in memory by id.

Consecutive prompts of a conversation share almost all their recent turns: with this cache
the next prompt reads from the database only the rows it has not seen (usually none: a new
message enters the cache as it is stored). The database stays the truth for which messages
a prompt holds and what they cost; the cache only spares reading their text again. What it
holds per conversation is about the last prompt's rows (and the messages stored since), so
memory follows the active conversations' windows, not their histories.

Correctness rests on three facts. Message ids are never reused (``AUTOINCREMENT``; an import
keeps its ids but only goes into a database without that conversation), so a row deleted by
another process (``bot reset``) is simply never asked for again. Every change this process
makes to a stored message (edit, delete, new platform id, reset, import, recount) goes through
the store, which drops what it changed once the change is committed. And a read that saw the
text before an edit is cached before that edit's drop, never after it: the store's short reads
run on the event loop's own thread and are cached in the same step (with no read connection,
its statements run one at a time in the order they were issued, results in that order).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence

from bot.core.models import StoredMessage

MAX_CHARS = 4_000_000
"""Characters of message text kept in all (a few MB); past it, the conversations used least
recently are forgotten first."""
MAX_ROWS = 20_000
"""Rows kept per conversation (the newest), however many are stored between two prompts."""


class RowCache:
    def __init__(self, *, max_chars: int = MAX_CHARS, max_rows: int = MAX_ROWS) -> None:
        self._max_chars = max_chars
        self._max_rows = max_rows
        # Least recently used first; each conversation's rows in id order.
        self._conversations: OrderedDict[str, dict[int, StoredMessage]] = OrderedDict()
        self._chars: dict[str, int] = {}
        self._total = 0

    @property
    def chars(self) -> int:
        return self._total

    def get_many(self, conversation_key: str, ids: Iterable[int]) -> list[StoredMessage | None]:
        """The cached row of each id, None where there is none."""
        rows = self._conversations.get(conversation_key)
        if rows is None:
            return [None for _ in ids]
        self._conversations.move_to_end(conversation_key)
        return [rows.get(message_id) for message_id in ids]

    def keep(self, conversation_key: str, window: Sequence[StoredMessage]) -> None:
        """Hold ``window`` (a prompt's rows, oldest first), the rows held before that are
        newer than its start (stored since, or left out of this window only), and a few just
        older than it: which turns a window holds moves back and forth from prompt to prompt
        (recall's share changes with each question, important turns take turns' places)."""
        if not window:
            return
        rows = self._conversations.get(conversation_key)
        if rows is None:
            self._set(conversation_key, {row.id: row for row in window})
            return
        self._conversations.move_to_end(conversation_key)
        grown = 0
        for row in window:
            if row.id not in rows:  # read from the database for this prompt
                rows[row.id] = row
                grown += len(row.content)
        self._chars[conversation_key] += grown
        self._total += grown
        self._let_go(conversation_key, rows, window)
        self._evict()

    def window(self, conversation_key: str, ids: Sequence[int]) -> list[StoredMessage] | None:
        """The rows of ``ids`` when every one is held (then kept as :meth:`keep` keeps a
        window), else None: the usual case, with no row to add."""
        rows = self._conversations.get(conversation_key)
        if rows is None or not ids:
            return None
        try:
            window = list(map(rows.__getitem__, ids))
        except KeyError:
            return None
        self._conversations.move_to_end(conversation_key)
        self._let_go(conversation_key, rows, window)
        return window

    def _let_go(
        self, conversation_key: str, rows: dict[int, StoredMessage], window: Sequence[StoredMessage]
    ) -> None:
        """Past ``len(window) // 2 + 16`` rows older than the window, let the oldest go down
        to half that (so that the rows held are looked through only every so many prompts)."""
        allowed = len(window) // 2 + 16
        if len(rows) - len(window) > allowed:  # else no more than that are older than it
            oldest = window[0].id
            before = sorted(i for i in rows if i < oldest)
            if len(before) > allowed:
                self._remove(conversation_key, before[: len(before) - allowed // 2])

    def add(self, conversation_key: str, row: StoredMessage) -> None:
        """A message just stored: the next prompt of its conversation will hold it."""
        rows = self._conversations.get(conversation_key)
        if rows is None:
            rows = self._conversations[conversation_key] = {}
            self._chars[conversation_key] = 0
        else:
            self._conversations.move_to_end(conversation_key)
        rows[row.id] = row
        grown = len(row.content)
        if len(rows) > self._max_rows:
            for oldest in sorted(rows)[: len(rows) - self._max_rows]:
                grown -= len(rows.pop(oldest).content)
        self._chars[conversation_key] += grown
        self._total += grown
        self._evict()

    def drop(self, conversation_key: str, *, platform_id: str | None = None) -> None:
        """Forget the conversation's rows (only those with ``platform_id``, when given)."""
        rows = self._conversations.get(conversation_key)
        if rows is None:
            return
        if platform_id is None:
            self._set(conversation_key, None)
        else:
            self._remove(
                conversation_key, [i for i, r in rows.items() if r.message_id == platform_id]
            )

    def conversations(self) -> list[str]:
        """The conversations with rows here."""
        return list(self._conversations)

    def drop_id(self, conversation_key: str, message_id: int) -> None:
        self._remove(conversation_key, [message_id])

    def clear(self) -> None:
        self._conversations.clear()
        self._chars.clear()
        self._total = 0

    def _remove(self, conversation_key: str, ids: Iterable[int]) -> None:
        rows = self._conversations.get(conversation_key)
        if rows is None:
            return
        removed = 0
        for message_id in ids:
            row = rows.pop(message_id, None)
            if row is not None:
                removed += 1
                self._chars[conversation_key] -= len(row.content)
                self._total -= len(row.content)
        if removed > len(rows):
            # A dict keeps the room it once needed, and going through it costs that much:
            # after a channel's unanswered chatter (thousands of rows) is let go, start small.
            self._conversations[conversation_key] = dict(rows)

    def _set(self, conversation_key: str, rows: dict[int, StoredMessage] | None) -> None:
        self._total -= self._chars.pop(conversation_key, 0)
        self._conversations.pop(conversation_key, None)
        if rows is None:
            return
        size = sum([len(row.content) for row in rows.values()])
        self._conversations[conversation_key] = rows
        self._chars[conversation_key] = size
        self._total += size
        self._evict()

    def _evict(self) -> None:
        while self._total > self._max_chars and self._conversations:
            key, _ = self._conversations.popitem(last=False)
            self._total -= self._chars.pop(key)
