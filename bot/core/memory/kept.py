"""What a summary keeps verbatim: the important messages it would otherwise lose, under
:data:`KEPT_HEADING`, ahead of the model's own text, all within the summary's cap."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.core.memory.importance import covered, key_terms
from bot.core.memory.tokens import ChatTokenizer
from bot.core.models import Role, StoredMessage, clean_name, quote_lines, utc_minute
from bot.core.wording import counted

log = logging.getLogger("bot.core.memory.summarizer")

KEPT_HEADING = "Kept verbatim:"
_HEADINGS = ("facts:", "narrative:")
_SHORTEST_CUT = 12
"""Tokens below which a line of the model's summary that does not fit is left out rather
than cut short."""
_TRUNCATE_NOTE = "… [truncated for the summary]"


def transcript_line(row: StoredMessage, input_limit: int) -> str:
    """A message as the summary model reads it: ``[when] who: text`` (cut when longer
    than a call's whole input)."""
    when = utc_minute(row.created_at)
    who = clean_name(row.author_name) if row.role is Role.USER else "assistant (you)"
    text = row.content
    if row.tokens > input_limit:
        text = text[: input_limit * 2] + _TRUNCATE_NOTE
    return f"[{when}] {who}: {quote_lines(text)}"


def _kept_lines(summary: str) -> list[str]:
    """The lines of a summary's "Kept verbatim:" part."""
    _, found, tail = summary.partition(KEPT_HEADING)
    return [line for line in tail.splitlines() if line.startswith("- ")] if found else []


def keep_verbatim(
    text: str,
    previous: str | None,
    important: Sequence[StoredMessage],
    limit: int,
    input_limit: int,
    tokenizer: ChatTokenizer,
) -> str:
    """The summary within its cap, with what it lost of the important messages (and of
    what earlier summaries kept verbatim) appended under :data:`KEPT_HEADING`. Those lines
    are what was said, the model's text a paraphrase: they go first, and the model's text
    is cut to make room (its narrative first), down to a quarter of the cap."""
    missing = [line for line in _kept_lines(previous or "") if not covered(_said(line), text)]
    for row in important:
        if not covered(row.content, text):
            missing.append("- " + transcript_line(row, input_limit))
    own = tokenizer.count(text)
    room = limit - min(own, limit // 4)  # what the kept lines may take
    kept: list[str] = []
    left_out = 0
    for line in dict.fromkeys(missing):
        if line in text:
            continue
        for candidate in (line, _condensed(line)):
            block = "\n".join([KEPT_HEADING, *kept, candidate])
            if tokenizer.count(block) <= room:
                kept.append(candidate)
                break
        else:
            left_out += 1
    if left_out:
        # One line per summary, however many, and not a warning: a channel full of numbers
        # and dates routinely has more "important" messages than a summary holds verbatim.
        log.info(
            "%s did not fit verbatim in the summary's cap; they stay stored, and recall"
            " can still find them",
            counted(left_out, "important message"),
        )
    if not kept:
        return _cut(text, limit, tokenizer)
    block = "\n".join([KEPT_HEADING, *kept])
    room = limit - tokenizer.count(block) - tokenizer.count("\n\n")
    return f"{_cut(text, room, tokenizer)}\n\n{block}".strip()


def _cut(text: str, room: int, tokenizer: ChatTokenizer) -> str:
    """The model's summary within ``room`` tokens: its narrative's last lines go first,
    then its last facts; a single line too long is cut short."""
    if tokenizer.count(text) <= room:
        return text
    lines = text.splitlines()
    heads = [i for i, line in enumerate(lines) if line.strip().casefold() in _HEADINGS]
    start = next((i for i in heads if lines[i].strip().casefold() == "narrative:"), None)
    end = next((i for i in heads if start is not None and i > start), len(lines))
    story = range(end - 1, start - 1, -1) if start is not None else range(0)
    # The narrative goes first, from its end; then the rest, from the end.
    order = [*story, *(i for i in range(len(lines) - 1, -1, -1) if i not in story)]
    dropped: set[int] = set()
    for index in order:
        dropped.add(index)
        left = [(i, line) for i, line in enumerate(lines) if i not in dropped]
        kept = "\n".join(line for _, line in left).strip()
        spare = room - tokenizer.count(kept) - 1  # the line break
        if spare < 0:
            continue
        if spare >= _SHORTEST_CUT and lines[index].strip().casefold() not in _HEADINGS:
            # The line that did not fit, cut short, in its place.
            cut = tokenizer.truncate(lines[index], spare - 1).rstrip() + "…"
            left = sorted([*left, (index, cut)])
            kept = "\n".join(line for _, line in left).strip()
        return kept
    return ""


def _said(line: str) -> str:
    """What was said, from a kept line ``- [when] who: text``."""
    return line.partition("] ")[2].partition(": ")[2] or line


def _condensed(line: str) -> str:
    """A kept line reduced to its speaker and key terms, when the whole does not fit."""
    text = _said(line)
    return f"{line[: len(line) - len(text)]}{'; '.join(key_terms(text))}"
