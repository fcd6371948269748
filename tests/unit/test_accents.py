"""PostgreSQL's search folds accents exactly as SQLite's FTS5 index does (the sqlite3 module's
own FTS5, ``unicode61 remove_diacritics 2`` as bot.store.sqlite's schema declares it)."""

from __future__ import annotations

import re
import sqlite3

from bot.store.accents import folded

_WORD = re.compile(r"[^\W_]")  # what bot.core.memory.terms keeps in a word


def fts5_folds(letters: list[str]) -> dict[str, str]:
    """What FTS5 indexes each of ``letters`` as (between two a's, so that none is alone)."""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab (t, 'instance')")
    db.executemany(
        "INSERT INTO t (rowid, body) VALUES (?, ?)",
        [(i, f"a{letter}a") for i, letter in enumerate(letters, 1)],
    )
    tokens = db.execute("SELECT doc, term FROM v").fetchall()
    db.close()
    found: dict[int, list[str]] = {}
    for doc, term in tokens:
        found.setdefault(doc, []).append(term)
    return {
        letter: found[i][0][1]
        for i, letter in enumerate(letters, 1)
        if len(found.get(i, [])) == 1 and len(found[i][0]) == 3  # not a separator to FTS5
    }


def test_every_letter_a_search_term_holds_is_folded_as_fts5_folds_it() -> None:
    letters = sorted(
        {chr(c).lower() for c in range(0x80, 0x30000) if _WORD.fullmatch(chr(c))}
        - {"\u0130".lower()}  # İ lowercases to two characters
    )
    letters = [letter for letter in letters if len(letter) == 1]
    expected = fts5_folds(letters)
    assert len(expected) > 100_000
    differ = {c: (folded(c), fts5) for c, fts5 in expected.items() if folded(c) != fts5}
    assert differ == {}
    assert folded("zoë") == "zoe" and folded("ǿ") == "ǿ" and folded("访客") == "访客"
