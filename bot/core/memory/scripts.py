"""Which script a prompt's tokens are written in, as far as a foreign tokenizer cares.

Three classes: ``latin`` (ASCII and the Latin alphabets, their punctuation and digits, and the
chat format's overhead), ``cjk`` (Chinese, Japanese and Korean: Han, kana, hangul, their
punctuation and full-width forms) and ``other`` (every other script: Cyrillic, Greek, Arabic,
Hebrew, Indic, Thai..., and emoji). A model's tokenizer counts each class against ours at a
rate of its own (SmolLM2 on llama.cpp: about 1.0 for English, 1.2 to 1.6 for whole Chinese
prompts), so :mod:`.calibration` keeps a rate per class.

A prompt's tokens are split by counting its runs of CJK and of other scripts on their own;
what is left of the prompt's count is Latin. Text that is all ASCII is not scanned.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

SCRIPTS = ("latin", "cjk", "other")
NAMES = {"latin": "Latin", "cjk": "CJK", "other": "other scripts"}
"""How ``/stats`` names each class."""

_CJK = (
    "\u1100-\u11ff"  # hangul jamo
    "\u2e80-\u9fff"  # radicals, CJK symbols and punctuation, kana, bopomofo, Han
    "\ua960-\ua97f\uac00-\ud7ff"  # hangul
    "\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef"  # compatibility ideographs, full-width forms
    "\U00020000-\U0003ffff"  # Han extensions
)
_LATIN = (
    "\x00-\u036f"  # ASCII, Latin-1, Latin extended, IPA, combining diacritics
    "\u1e00-\u1eff"  # Latin extended additional (Vietnamese)
    "\u2000-\u206f\u20a0-\u20cf"  # general punctuation, currency
)
_GLUE = r"\s0-9!-/:-@\[-`{-~"
"""Spaces, digits and ASCII punctuation between two letters of a run stay in it, so that a
sentence is counted whole, as the tokenizer sees it."""
_RUNS = re.compile(
    f"(?P<cjk>[{_CJK}](?:[{_CJK}{_GLUE}]*[{_CJK}])?)"
    f"|(?P<other>[^{_LATIN}{_CJK}](?:[^{_LATIN}{_CJK}]|[{_GLUE}])*(?<![{_GLUE}]))"
)


@dataclass(frozen=True)
class ScriptTokens:
    """Tokens of a text or prompt in the bot's count, by script."""

    latin: int
    cjk: int = 0
    other: int = 0

    @property
    def total(self) -> int:
        return self.latin + self.cjk + self.other

    def as_tuple(self) -> tuple[int, int, int]:
        """In :data:`SCRIPTS` order."""
        return (self.latin, self.cjk, self.other)

    def shares(self) -> tuple[float, float, float]:
        """Each script's share of the tokens (all Latin when there are none)."""
        total = self.total
        if total <= 0:
            return (1.0, 0.0, 0.0)
        return (self.latin / total, self.cjk / total, self.other / total)


def split_tokens(count: Callable[[str], int], texts: Iterable[str], total: int) -> ScriptTokens:
    """``total`` (the bot's count of ``texts`` and whatever framing surrounds them) split by
    script: the CJK and other-script runs of ``texts`` counted on their own, the rest Latin."""
    cjk = other = 0
    for text in texts:
        if text.isascii():
            continue
        for run in _RUNS.finditer(text):
            if run.lastgroup == "cjk":
                cjk += count(run.group())
            else:
                other += count(run.group())
    foreign = cjk + other
    if foreign > total > 0:  # runs counted apart can take a token more than in place
        cjk = cjk * total // foreign
        other = min(total - cjk, other * total // foreign + 1)
    return ScriptTokens(latin=max(0, total - cjk - other), cjk=cjk, other=other)


def split_prompt(
    count: Callable[[str], int], messages: Iterable[Mapping[str, str]], total: int
) -> ScriptTokens:
    """A chat prompt's tokens (``total``, the bot's count of it) split by script."""
    return split_tokens(count, (value for m in messages for value in m.values()), total)
