"""Recall's keyword search on PostgreSQL: each message's terms in an array column, and each
conversation's term counts.

A message's terms are :func:`bot.core.memory.terms.document_terms` of its text, computed in
Python — the very terms SQLite's FTS5 index holds — with their accents folded as FTS5 folds
them (:mod:`bot.store.accents`), in a ``terms TEXT[]`` column with a GIN index; a search is
``terms && <query terms, folded>``. PostgreSQL's own text search was not used: ``tsvector``
parsers do not split Chinese or Japanese text into words, and ``pg_trgm`` cannot match the
two-character words those languages are full of. With the same Python terms, folded alike,
both stores find the same messages, in any language. ``search_terms`` counts, per
conversation, the messages that hold each term as written (not folded: as SQLite counts them),
in the transaction that stores, edits or deletes the message.

Candidates come back with the most query terms matched first, then the newest: recall
(``bot.core.memory.recall``) scores them within the conversation, which is the real ranking.

``terms`` is NULL for a message not in the index: stored while the store's ``index`` was off.
Those are indexed when the store next opens with it on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from bot.core.memory.terms import document_terms
from bot.core.models import StoredMessage
from bot.store.accents import folded
from bot.store.postgres.connection import Connection
from bot.store.sqlite.rows import MESSAGE_COLUMNS, message

if TYPE_CHECKING:
    from bot.store.postgres.connection import Db

_BATCH = 2000  # messages indexed at a time when catching up

SEARCH = (
    f"SELECT {MESSAGE_COLUMNS} FROM messages"  # noqa: S608 (constant columns)
    " WHERE conversation = $1 AND id < $2 AND terms && $3::text[]"
    " ORDER BY cardinality(ARRAY(SELECT unnest(terms) INTERSECT SELECT unnest($3::text[])))"
    " DESC, id DESC LIMIT $4"
)
_ADD_TERMS = (
    "INSERT INTO search_terms (conversation, term, docs)"
    " SELECT $1, term, docs FROM unnest($2::text[], $3::integer[]) AS t (term, docs)"
    " ORDER BY term"
    " ON CONFLICT (conversation, term) DO UPDATE SET docs = search_terms.docs + excluded.docs"
)
_TAKE_TERMS = (
    "UPDATE search_terms SET docs = search_terms.docs - t.docs"
    " FROM unnest($2::text[], $3::integer[]) AS t (term, docs)"
    " WHERE search_terms.conversation = $1 AND search_terms.term = t.term"
)
_DROP_TERMS = (
    "DELETE FROM search_terms WHERE conversation = $1 AND term = ANY($2::text[]) AND docs <= 0"
)


def terms_of(content: str) -> list[str]:
    """The terms a message is found under (its ``terms``): folded, sorted."""
    return matched(document_terms(content))


def counted_terms(content: str) -> list[str]:
    """The terms a message is counted under in ``search_terms``, sorted (rows are locked in
    one order)."""
    return sorted(document_terms(content))


def matched(terms: Iterable[str]) -> list[str]:
    """``terms`` as the ``terms`` column holds them: folded, distinct, sorted."""
    return sorted({folded(term) for term in terms})


async def _count(db: Db, key: str, counts: Counter[str], *, add: bool) -> None:
    terms = sorted(term for term, n in counts.items() if n)
    if not terms:
        return
    docs = [counts[term] for term in terms]
    if add:
        await db.execute(_ADD_TERMS, key, terms, docs)
    else:
        await db.execute(_TAKE_TERMS, key, terms, docs)
        await db.execute(_DROP_TERMS, key, terms)


async def recount(db: Db, key: str, old: Sequence[str], new: Sequence[str]) -> None:
    """A message of conversation ``key`` counted under ``old`` is now under ``new``
    (:func:`counted_terms`)."""
    before, after = set(old), set(new)
    await _count(db, key, Counter(before - after), add=False)
    await _count(db, key, Counter(after - before), add=True)


async def catch_up(db: Db, conversations: Iterable[str] | None = None) -> int:
    """Index the stored messages not indexed yet (of ``conversations``; None: all); returns
    how many. Run in the caller's transaction."""
    keys = sorted(set(conversations)) if conversations is not None else None
    done, after = 0, 0
    while True:
        rows = await db.fetch(
            "SELECT id, conversation, content FROM messages WHERE terms IS NULL AND id > $1"
            " AND ($2::text[] IS NULL OR conversation = ANY($2::text[])) ORDER BY id LIMIT $3",
            after,
            keys,
            _BATCH,
        )
        if not rows:
            return done
        counts: dict[str, Counter[str]] = {}
        updates = []
        for message_id, key, content in rows:
            updates.append((terms_of(content), message_id))
            counts.setdefault(key, Counter()).update(counted_terms(content))
        await db.executemany("UPDATE messages SET terms = $1::text[] WHERE id = $2", updates)
        for key in sorted(counts):
            await _count(db, key, counts[key], add=True)
        done += len(rows)
        after = int(rows[-1][0])


_ADD_COUNTS = (
    "INSERT INTO search_terms (conversation, term, docs)"
    " SELECT * FROM unnest($1::text[], $2::text[], $3::integer[]) ORDER BY 1, 2"
    " ON CONFLICT (conversation, term) DO UPDATE SET docs = search_terms.docs + excluded.docs"
)


async def add_counts(db: Db, counts: dict[str, Counter[str]]) -> None:
    """Add ``counts`` (per conversation, how many more messages hold each term) in one
    statement: for messages stored with their terms in bulk, in their transaction."""
    pairs = sorted((key, term, n) for key, terms in counts.items() for term, n in terms.items())
    if pairs:
        keys, terms, docs = zip(*pairs, strict=True)
        await db.execute(_ADD_COUNTS, list(keys), list(terms), list(docs))


async def unindexed(db: Db) -> bool:
    """Whether some stored message is not in the index."""
    return bool(await db.fetchval("SELECT EXISTS (SELECT 1 FROM messages WHERE terms IS NULL)"))


class Search(Connection):
    async def term_counts(self, *, conversation_key: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the conversation's messages hold each term (0: none)."""
        if not terms:
            return {}
        rows = await self._rows(
            "SELECT term, docs FROM search_terms WHERE conversation = $1 AND term = ANY($2)",
            conversation_key,
            list(terms),
        )
        found = {str(row[0]): int(row[1]) for row in rows}
        return {term: found.get(term, 0) for term in terms}

    async def search_messages(
        self, *, conversation_key: str, terms: Sequence[str], before_id: int, limit: int
    ) -> Sequence[StoredMessage]:
        """The conversation's messages before ``before_id`` holding any of ``terms`` (with or
        without their accents), those matching the most terms first, then the newest."""
        if not terms:
            return []
        rows = await self._rows(SEARCH, conversation_key, before_id, matched(terms), limit)
        return [message(row) for row in rows]
