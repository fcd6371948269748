"""Recall's full-text search: the FTS5 index and each conversation's term counts.

Both are written here, by the store, in the transaction that stores, edits or deletes the
message (no function of ours runs inside SQLite, so the ``sqlite3`` shell reads and writes the
file). The index holds each message's text as :func:`bot.core.memory.terms.index_text` spells
it, under its id; a search keeps the conversation's matches (a token per conversation in the
index would make FTS5's bm25 count every message of the conversation on each search).
``search_terms`` counts, per conversation, the messages that hold each term: how common a
query's terms are there is known without scanning the index.

A message is indexed only where recall is on (the store's ``index``); the messages stored
while it was off are indexed when the store next opens with it on.

The match expression quotes every term and joins them with OR: user text can never produce an
FTS5 syntax error, and ``"``, ``*``, ``NEAR``, ``AND``, ``-`` and the like are plain text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import aiosqlite

from bot.core.memory.terms import document_terms, index_text
from bot.core.models import StoredMessage
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.rows import MESSAGE_COLUMNS_M, message

_BATCH = 2000  # messages indexed at a time when catching up

SEARCH = (
    f"SELECT {MESSAGE_COLUMNS_M} FROM message_index"  # noqa: S608 (constant columns)
    " CROSS JOIN messages m ON m.id = message_index.rowid"
    " WHERE message_index MATCH ? AND message_index.rowid < ? AND m.conversation = ?"
    " ORDER BY bm25(message_index) LIMIT ?"
)
_ADD_TERMS = (
    "INSERT INTO search_terms (conversation, term, docs) VALUES (?, ?, ?)"
    " ON CONFLICT (conversation, term) DO UPDATE SET docs = docs + excluded.docs"
)
_TAKE_TERMS = "UPDATE search_terms SET docs = docs - ? WHERE conversation = ? AND term = ?"
_DROP_TERMS = "DELETE FROM search_terms WHERE conversation = ? AND term = ? AND docs <= 0"


def _quoted(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def match_expression(terms: Sequence[str]) -> str:
    """An FTS5 query for the messages holding any of ``terms``."""
    return " OR ".join(_quoted(term) for term in terms)


async def index(db: aiosqlite.Connection, messages: Iterable[tuple[int, str, str]]) -> None:
    """Enter ``(id, conversation, content)`` messages (not in the index yet)."""
    rows: list[tuple[int, str]] = []
    counts: Counter[tuple[str, str]] = Counter()
    for message_id, conversation_key, content in messages:
        rows.append((message_id, index_text(content)))
        counts.update((conversation_key, term) for term in document_terms(content))
    await db.executemany("INSERT INTO message_index (rowid, body) VALUES (?, ?)", rows)
    await db.executemany(_ADD_TERMS, [(key, term, n) for (key, term), n in counts.items()])


async def unindex(db: aiosqlite.Connection, messages: Iterable[tuple[int, str, str]]) -> None:
    """Take ``(id, conversation, content)`` messages out of the index, where they are in it
    (``content`` as indexed)."""
    counts: Counter[tuple[str, str]] = Counter()
    for message_id, conversation_key, content in messages:
        cursor = await db.execute("DELETE FROM message_index WHERE rowid = ?", (message_id,))
        if cursor.rowcount > 0:
            counts.update((conversation_key, term) for term in document_terms(content))
    taken = [(n, key, term) for (key, term), n in counts.items()]
    await db.executemany(_TAKE_TERMS, taken)
    await db.executemany(_DROP_TERMS, [(key, term) for _, key, term in taken])


async def replace(
    db: aiosqlite.Connection, message_id: int, conversation_key: str, old: str, new: str
) -> None:
    """A message's text changed from ``old`` to ``new``: its entry follows, when it has one."""
    rows = await db.execute_fetchall("SELECT 1 FROM message_index WHERE rowid = ?", (message_id,))
    if rows:
        await unindex(db, [(message_id, conversation_key, old)])
        await index(db, [(message_id, conversation_key, new)])


async def forget(db: aiosqlite.Connection, conversation_key: str) -> None:
    """Drop the conversation's entries and counts (before its messages are deleted)."""
    await db.execute(
        "DELETE FROM message_index WHERE rowid IN (SELECT id FROM messages WHERE conversation = ?)",
        (conversation_key,),
    )
    await db.execute("DELETE FROM search_terms WHERE conversation = ?", (conversation_key,))


async def catch_up(db: aiosqlite.Connection, conversations: Iterable[str] | None = None) -> int:
    """Index the stored messages the index lacks (of ``conversations``; None: all); returns
    how many. Run in the caller's transaction."""
    where = "id NOT IN (SELECT rowid FROM message_index)"
    keys = sorted(set(conversations)) if conversations is not None else None
    if keys is not None:
        where += f" AND conversation IN ({', '.join('?' for _ in keys)})"
    done, after = 0, 0
    while True:
        rows = await db.execute_fetchall(
            f"SELECT id, conversation, content FROM messages WHERE {where}"  # noqa: S608
            " AND id > ? ORDER BY id LIMIT ?",
            (*(keys or ()), after, _BATCH),
        )
        batch = [(int(r[0]), str(r[1]), str(r[2])) for r in rows]
        if not batch:
            return done
        await index(db, batch)
        done += len(batch)
        after = batch[-1][0]


async def unindexed(db: aiosqlite.Connection) -> bool:
    """Whether some stored message is not in the index (the index only ever holds stored
    messages: the same count means it holds them all)."""
    rows = await db.execute_fetchall(
        "SELECT (SELECT COUNT(*) FROM messages) - (SELECT COUNT(*) FROM message_index)"
    )
    return bool(next(iter(rows))[0])


class Search(Connection):
    async def term_counts(self, *, conversation_key: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the conversation's messages hold each term (0: none)."""
        if not terms:
            return {}
        marks = ", ".join("?" for _ in terms)
        rows = await self._rows(
            "SELECT term, docs FROM search_terms"  # noqa: S608 (constant text)
            f" WHERE conversation = ? AND term IN ({marks})",
            (conversation_key, *terms),
        )
        found = {str(row[0]): int(row[1]) for row in rows}
        return {term: found.get(term, 0) for term in terms}

    async def search_messages(
        self, *, conversation_key: str, terms: Sequence[str], before_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        """The conversation's messages before ``before_id`` holding any of ``terms``, in FTS5's
        bm25 order (which weighs terms over the whole database: recall scores the candidates
        within the conversation)."""
        if not terms:
            return []
        rows = await self._rows(
            SEARCH,
            (match_expression(terms), before_id, conversation_key, limit),
        )
        return [message(row) for row in rows]
