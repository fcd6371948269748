"""Databases of schema versions 1 to 9, as released (the bot's ``PRAGMA user_version``).

A database of any earlier version is built from the store's own first migrations, as that
version of the bot built it, so that a test can open it with today's store. Versions 2 to 9 call the
``recall_text`` and ``recall_terms`` functions those bots registered on every connection
(:func:`connect` registers them too).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.core.memory.terms import index_text
from bot.store.sqlite import schema

RELEASED = 9
"""Versions 1 to 9 were released; their SQL is the first nine of the store's migrations."""

RELEASED_SHA256 = (
    "c0b957328a57",
    "b491ba7bd3f1",
    "4a4931deb7e6",
    "d9124a757040",
    "5938bc73506b",
    "bd22d06e9e05",
    "7ebd48672f6b",
    "5d7b7232951a",
    "668347b8da6d",
)
"""The start of each released migration's SHA-256: a released migration is never edited (a
database it made would differ from one made by the edited script)."""

MIGRATIONS = schema.MIGRATIONS[:RELEASED]


def connect(path: Path | str) -> sqlite3.Connection:
    """A connection as an old bot had it: with the functions its triggers call."""
    db = sqlite3.connect(path, isolation_level=None)
    db.create_function("recall_text", 1, index_text, deterministic=True)
    db.create_function("recall_terms", 1, schema.legacy_terms, deterministic=True)
    return db


def build(db: sqlite3.Connection, version: int) -> None:
    """Make the empty database ``db`` one of schema ``version``."""
    for script in MIGRATIONS[:version]:
        for statement in schema.statements(script):
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {version}")
