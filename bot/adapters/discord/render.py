"""Pure rendering of replies for Discord: parts of at most 2,000 characters.

Parts break at paragraph boundaries where they can, else at line ends, and a code block
that spans two parts is closed at the end of the first and reopened (with its language) at
the start of the next, so every part renders on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MESSAGE_LIMIT = 2000
_MAX_OPENER = 100  # a fence line longer than this is treated as text
_MAX_LINE = MESSAGE_LIMIT - 2 * _MAX_OPENER - 10
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


@dataclass(frozen=True)
class Part:
    text: str
    """What is sent."""
    body: str
    """The slice of the original text it carries (the parts' bodies join to the text)."""


def _toggle(opener: str | None, line: str) -> str | None:
    """The fence state after ``line``: the opening fence line while inside a block."""
    stripped = line.rstrip("\r\n")
    match = _FENCE.match(stripped)
    if match is None or len(stripped) > _MAX_OPENER:
        return opener
    if opener is None:
        return stripped.strip()
    marker = _FENCE.match(opener)
    assert marker is not None
    fence = marker.group(1)
    if match.group(1).startswith(fence) and not match.group(2).strip():
        return None
    return opener


def _closer(opener: str) -> str:
    marker = _FENCE.match(opener)
    assert marker is not None
    return marker.group(1)


def _pieces(text: str, max_line: int) -> list[str]:
    """The text's lines (ends kept), lines longer than ``max_line`` cut at spaces if possible."""
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        while len(line) > max_line:
            cut = line.rfind(" ", max_line // 2, max_line)
            cut = cut + 1 if cut > 0 else max_line
            pieces.append(line[:cut])
            line = line[cut:]
        if line:
            pieces.append(line)
    return pieces


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[Part]:
    """Split ``text`` into parts of at most ``limit`` characters with balanced code fences."""
    if len(text) <= limit and _toggle_all(text) is None:
        return [Part(text, text)] if text.strip() else []
    pieces = _pieces(text, max_line=min(_MAX_LINE, limit - 2 * _MAX_OPENER - 10))
    parts: list[Part] = []
    start, opener = 0, None
    while start < len(pieces):
        end, state_at_end = _next_break(pieces, start, opener, limit)
        body = "".join(pieces[start:end])
        parts.append(Part(_render(body, opener, state_at_end), body))
        start, opener = end, state_at_end
    return [part for part in parts if part.body.strip()]


def _toggle_all(text: str) -> str | None:
    state: str | None = None
    for line in text.splitlines():
        state = _toggle(state, line)
    return state


def _next_break(
    pieces: list[str], start: int, opener: str | None, limit: int
) -> tuple[int, str | None]:
    """Where the part starting at ``start`` ends, and the fence state there."""
    size = len(opener) + 1 if opener else 0
    state = opener
    paragraph: tuple[int, str | None] | None = None
    line_end: tuple[int, str | None] | None = None
    index = start
    while index < len(pieces):
        piece = pieces[index]
        after = _toggle(state, piece)
        closing = len(_closer(after)) + 1 if after else 0
        if size + len(piece) + closing > limit and index > start:
            break
        size += len(piece)
        state = after
        index += 1
        line_end = (index, state)
        if not piece.strip() and state is None:
            paragraph = (index, state)
    if index == len(pieces):
        return index, state
    if paragraph is not None and paragraph[0] - start > (index - start) // 4:
        return paragraph
    assert line_end is not None
    return line_end


def _render(body: str, opener: str | None, state_at_end: str | None) -> str:
    text = body.rstrip("\n") if state_at_end else body
    if opener:
        text = f"{opener}\n{text}"
    if state_at_end:
        text = f"{text}\n{_closer(state_at_end)}"
    return text
