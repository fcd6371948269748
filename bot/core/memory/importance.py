"""Which messages matter: a cheap, deterministic score given to each message when it is stored.

A message scores a point for each kind of signal it carries, in English or Chinese:

- an explicit request to keep it: "remember", "important", "don't forget", "记住", "重要"...
- a decision or commitment: "we decided", "agreed", "deadline", "决定", "确定", "截止"...
- a number or a date: amounts, versions, times, dates ("2026-12-15", "Dec 15", "3pm",
  "12月15日", "明天"); a lone single digit does not count.

A message with a score above zero is important: it is kept verbatim longer when the window must
evict turns, and its content is guaranteed to reach the summary (:func:`key_terms` are the
facts checked there). People mark messages by hand too, with a 📌 reaction.
"""

from __future__ import annotations

import re

_EXPLICIT = re.compile(
    # Not reminiscing ("remember when...", 记得那次...): measured on chat, that is most uses.
    r"\b(remember(?!\s+(?:when|that time|the time|how)\b)|important|don'?t forget|do not forget"
    r"|note that|keep in mind|crucial)\b"
    r"|记住|记得(?!那|上次|以前|小时候|当时)|别忘|不要忘|重要|务必|注意",
    re.IGNORECASE,
)
_DECISION = re.compile(
    r"\b(decided|decision|agreed|we will|we'll|let'?s go with|deadline|due|approved|"
    r"must(?!\s+(?:have|be|feel|suck)\b)|"
    r"confirmed|final)\b"
    r"|决定|确定|同意|定了|截止|必须|批准|确认",
    re.IGNORECASE,
)
_MONTHS = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_WEEKDAYS = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight"
_NUMBER_OR_DATE = re.compile(
    # ISO and slashed dates, times, versions, amounts and any number of two digits or more
    r"(?<![\w.])(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}(?:/\d{2,4})?|\d{1,2}:\d{2}"
    r"|v?\d+(?:\.\d+){1,3}|[$€£¥]\s?\d[\d,.]*|\d[\d,.]*\s?(?:%|k\b|m\b|am\b|pm\b)"
    r"|\d{2,}(?:[,.]\d+)*)(?![\w])"
    rf"|\b(?:{_MONTHS})\.?\s+\d{{1,2}}\b|\b\d{{1,2}}\s+(?:{_MONTHS})\b|\b(?:{_WEEKDAYS})\b"
    # Chinese dates and amounts: 12月15日, 3号, 下周五, 明天, 5点, 100元, 3万
    r"|\d+\s?(?:年|月|日|号|点|元|块|万|亿|个|天|周|小时|分钟)"
    r"|[一二三四五六七八九十两]+(?:月|号|点|元|块|万|亿|天|周)"
    r"|明天|后天|今晚|下周[一二三四五六日天]?|周[一二三四五六日天]|星期[一二三四五六日天]",
    re.IGNORECASE,
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{3,}|[\u4e00-\u9fff]{2,}")
_STOP = frozenset(
    [
        "remember",
        "important",
        "please",
        "that",
        "this",
        "with",
        "from",
        "have",
        "will",
        "would",
        "should",
        "about",
        "there",
        "their",
        "they",
        "them",
        "what",
        "when",
        "where",
        "which",
        "while",
        "your",
        "yours",
        "just",
        "also",
        "into",
        "than",
        "then",
        "been",
        "were",
        "note",
        "keep",
        "mind",
        "don't",
        "forget",
    ]
)


def score(text: str) -> int:
    """0 for small talk; one point per kind of signal (explicit, decision, number or date)."""
    return sum(1 for pattern in (_EXPLICIT, _DECISION, _NUMBER_OR_DATE) if pattern.search(text))


def key_terms(text: str) -> list[str]:
    """What must be found in a summary for it to hold this message: its numbers and dates,
    or, when it has none, its distinctive words (up to four)."""
    numbers = [m.group(0).strip() for m in _NUMBER_OR_DATE.finditer(text)]
    if numbers:
        return list(dict.fromkeys(numbers))
    words = [w for w in _WORD.findall(text) if w.lower() not in _STOP]
    return sorted(dict.fromkeys(words), key=len, reverse=True)[:4]


def covered(text: str, summary: str) -> bool:
    """Whether ``summary`` holds the message: every number and date of it, or (for a message
    without any) at least half of its distinctive words; case-insensitive."""
    lowered = summary.casefold()
    numbers = [m.group(0).strip() for m in _NUMBER_OR_DATE.finditer(text)]
    if numbers:
        return all(number.casefold() in lowered for number in numbers)
    terms = key_terms(text)
    found = sum(1 for term in terms if term.casefold() in lowered)
    return found * 2 >= len(terms)
