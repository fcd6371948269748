"""Accents folded as SQLite's full-text index folds them, so that keyword search finds the same
messages on every store (PostgreSQL's and the in-memory store compare folded terms).

SQLite's FTS5 tokenizer (``unicode61 remove_diacritics 2``) matches a word with or without its
accents: ``zoë`` finds ``Zoe``. It folds the accented Latin letters to their plain ones (not
those built on another letter than a-z, such as ``ǣ`` or ``ǿ``) and a few Greek letter forms
(``ς`` to ``σ``). The table is what it does to each lowercase letter a search term can hold,
taken from SQLite 3.40 (tests/unit/test_accents.py checks it against the sqlite3 module's own
FTS5); written as escapes where a letter looks like another.
"""

from __future__ import annotations

_ACCENTED = (
    "\u00b5àáâãäåçèéêëìíîïñòóôõöùúûüýÿāăąćĉċčďēĕėęěĝğġģĥĩīĭįĵķĺļľńņňōŏőŕŗřśŝşšţťũūŭůű"
    "ųŵŷźżžſơưǎǐǒǔǖǘǚǜǟǧǩǫǭǰǵǹǻȁȃȅȇȉȋȍȏȑȓȕȗșțȟȧȩȫȭȯȱȳ\u03c2\u03d0\u03d1\u03d5\u03d6"
    "\u03f0\u03f1\u03f5\u1e01\u1e03\u1e05\u1e07\u1e09\u1e0b\u1e0d\u1e0f\u1e11\u1e13"
    "\u1e15\u1e17\u1e19\u1e1b\u1e1d\u1e1f\u1e21\u1e23\u1e25\u1e27\u1e29\u1e2b\u1e2d"
    "\u1e2f\u1e31\u1e33\u1e35\u1e37\u1e39\u1e3b\u1e3d\u1e3f\u1e41\u1e43\u1e45\u1e47"
    "\u1e49\u1e4b\u1e4d\u1e4f\u1e51\u1e53\u1e55\u1e57\u1e59\u1e5b\u1e5d\u1e5f\u1e61"
    "\u1e63\u1e65\u1e67\u1e69\u1e6b\u1e6d\u1e6f\u1e71\u1e73\u1e75\u1e77\u1e79\u1e7b"
    "\u1e7d\u1e7f\u1e81\u1e83\u1e85\u1e87\u1e89\u1e8b\u1e8d\u1e8f\u1e91\u1e93\u1e95"
    "\u1e96\u1e97\u1e98\u1e99\u1e9b\u1ea1\u1ea3\u1ea5\u1ea7\u1ea9\u1eab\u1ead\u1eaf"
    "\u1eb1\u1eb3\u1eb5\u1eb7\u1eb9\u1ebb\u1ebd\u1ebf\u1ec1\u1ec3\u1ec5\u1ec7\u1ec9"
    "\u1ecb\u1ecd\u1ecf\u1ed1\u1ed3\u1ed5\u1ed7\u1ed9\u1edb\u1edd\u1edf\u1ee1\u1ee3"
    "\u1ee5\u1ee7\u1ee9\u1eeb\u1eed\u1eef\u1ef1\u1ef3\u1ef5\u1ef7\u1ef9\u1fbe"
)
_PLAIN = (
    "\u03bcaaaaaaceeeeiiiinooooouuuuyyaaaccccdeeeeegggghiiiijklllnnnooorrrssssttuuuuu"
    "uwyzzzsouaiouuuuuagkoojgnaaaeeiioorruusthaeooooy\u03c3\u03b2\u03b8\u03c6\u03c0"
    "\u03ba\u03c1\u03b5abbbcdddddeeeeefghhhhhiikkkllllmmmnnnnoooopprrrrsssssttttuuuuu"
    "vvwwwwwxxyzzzhtwysaaaaaaaaaaaaeeeeeeeeiioooooooooooouuuuuuuyyyy\u03b9"
)
_FOLD = str.maketrans(_ACCENTED, _PLAIN)


def folded(term: str) -> str:
    """``term`` (lowercase, as :mod:`bot.core.memory.terms` makes them) as FTS5 matches it."""
    return term.translate(_FOLD)
