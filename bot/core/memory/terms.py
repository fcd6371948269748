"""Search terms, in English and Chinese alike, and when a term is too common to search.

FTS5's ``unicode61`` tokenizer splits on spaces and punctuation, which suits English but
turns a run of Chinese characters (a whole clause: Chinese has no spaces) into one token;
its ``trigram`` tokenizer cannot match two-character words, the commonest kind. So the index
holds a derived text: every run of CJK characters (Han, kana) is spelled out as its single
characters and its overlapping two-character pairs ("访客密码" → 访 客 密 码 访客 客密 密码),
and everything else is left for ``unicode61`` (case and diacritics folded). A query goes through
the same expansion, using the pairs (or the single character of a one-character run), so
"密码" finds "访客WiFi密码是多少" and "wifi" finds "WiFi"; a query's pairs that hold a particle or
pronoun ("码是", "我的") are left out: they join two words' edges and would match at random.
"""

from __future__ import annotations

import math
import re

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_CJK_RUN = re.compile(f"[{_CJK}]+")
_WORD = re.compile(r"[^\W_]+")
_FUNCTION_CHARACTERS = frozenset("的了着吗呢吧啊呀么我你您他她它们是在和就也都这那个于把被又还")
"""Chinese particles, pronouns and the like: a pair holding one is nearly always two words'
edges ("移的" from "迁移的", "我写" from "帮我写"), rare as a pair yet meaning nothing."""
MAX_QUERY_TERMS = 64
"""The most distinct terms read from one query (a long paste is cut there)."""
COMMON_SHARE = 0.01
"""A term held by more than this share of a conversation's messages is too common to search:
its weight in bm25 is small (about ln 100 against ln N for a rare word), and scoring every
message that holds it costs a scan that grows with the conversation."""
COMMON_FLOOR = 20
"""However small the conversation, a term held by this many of its messages is still searched:
in a new channel a word said a few times is as likely the fact asked about as chatter."""


def _pairs(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)]


def index_text(text: str) -> str:
    """What the index stores for ``text``: CJK runs as characters and character pairs."""
    if _CJK_RUN.search(text) is None:
        return text
    return _CJK_RUN.sub(lambda m: f" {' '.join([*m.group(), *_pairs(m.group())])} ", text)


def document_terms(text: str) -> set[str]:
    """The distinct terms ``text`` is indexed under: lowercased words, CJK characters and
    character pairs. Their counts over a conversation's messages tell how common a query term
    is there without scanning the index."""
    terms = {word.lower() for word in _WORD.findall(_CJK_RUN.sub(" ", text))}
    for match in _CJK_RUN.finditer(text):
        run = match.group()
        terms.update(run)
        terms.update(_pairs(run))
    return terms


def too_common(docs: int, messages: int) -> bool:
    """Whether a term held by ``docs`` of a conversation's ``messages`` is left out of its
    search: held by more than :data:`COMMON_SHARE` of them and more than :data:`COMMON_FLOOR`.
    Decided within the conversation being answered, so another channel's chatter never hides
    a fact."""
    return docs > max(COMMON_FLOOR, COMMON_SHARE * messages)


def weight(docs: int, messages: int) -> float:
    """What matching a term held by ``docs`` of a conversation's ``messages`` is worth: bm25's
    inverse document frequency, within the conversation (a word every message holds is worth
    about nothing, one only a single message holds the most)."""
    return math.log(1.0 + (messages - docs + 0.5) / (docs + 0.5))


def query_terms(text: str) -> list[str]:
    """The distinct search terms of ``text``, in order: words, and CJK character pairs
    (those holding a particle or pronoun left out)."""
    terms: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        if term not in seen and len(terms) < MAX_QUERY_TERMS:
            seen.add(term)
            terms.append(term)

    position = 0
    for match in _CJK_RUN.finditer(text):
        for word in _WORD.findall(text[position : match.start()]):
            add(word.lower())
        run = match.group()
        for pair in _pairs(run) or [run]:
            if _FUNCTION_CHARACTERS.isdisjoint(pair) or len(run) == 1:
                add(pair)
        position = match.end()
    for word in _WORD.findall(text[position:]):
        add(word.lower())
    return terms
