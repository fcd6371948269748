"""Text both platforms post: replies split into messages, and replies too long to post.

Pure. :func:`split` cuts a text into parts of at most a platform's limit, at a paragraph, line
or word break, never through a link, an entity or a run of backticks, and never inside a code
block without closing it at the end of the part and reopening it at the start of the next, so
every part renders on its own. Platforms differ only in what opens a code block
(:func:`line_fences`: a fence line, Markdown's rule; :func:`any_fences`: any triple backtick,
Slack's). :func:`shorten` keeps the start of a reply too long to post; each adapter posts
:attr:`LongReply.shown` as messages and :attr:`LongReply.whole` as an attachment named
:data:`ATTACHMENT_NAME`, with :attr:`LongReply.note` beside it. Mentions of people in what
people write are read the same way on every platform (:func:`mentioned`,
:func:`without_mentions_of`, :func:`named_mentions`), each platform giving only its syntax.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass

ATTACHMENT_NAME = "reply.md"


@dataclass(frozen=True)
class Fence:
    """A code fence in a text: where it is, and whether it opens or closes a block."""

    start: int
    end: int
    opens: bool
    reopen: str
    """What reopens its block in the next part (an opening fence line, with its language)."""
    close: str
    """What closes its block at the end of a part."""


Fences = Callable[[str], Sequence[Fence]]
"""A platform's rule for finding the code fences of a text, in order."""

_FENCE_LINE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$", re.MULTILINE)
_MAX_OPENER = 100  # a fence line longer than this is text


def line_fences(text: str) -> list[Fence]:
    """Markdown's fences: a line of three or more backticks or tildes (and a language) opens
    a block; a line of the same marker, at least as long and with nothing after it, closes
    it."""
    fences: list[Fence] = []
    opened: str | None = None
    for match in _FENCE_LINE.finditer(text):
        marker, info = match.group(1), match.group(2)
        if len(match.group(0)) > _MAX_OPENER:
            continue
        if opened is None:
            opened = marker
            fences.append(Fence(match.start(), match.end(), True, match.group(0).strip(), marker))
        elif marker.startswith(opened) and not info.strip():
            fences.append(Fence(match.start(), match.end(), False, "", opened))
            opened = None
    return fences


def any_fences(text: str) -> list[Fence]:
    """Slack's fences: every ``` opens or closes a block, at the start of a line or not."""
    return [
        Fence(match.start(), match.end(), index % 2 == 0, "```", "```")
        for index, match in enumerate(re.finditer("```", text))
    ]


# Never cut through: a <link> or <mention>, an &entity;, a run of backticks.
_ATOM = re.compile(r"<[^<>\n]*>|&#?\w{1,8};|`+")


@dataclass(frozen=True)
class Part:
    text: str
    """What is posted."""
    body: str
    """The slice of the original text it carries (the parts' bodies join to the text)."""


def split(text: str, limit: int, fences: Fences) -> list[Part]:
    """``text`` in parts of at most ``limit`` characters, with balanced code fences (the
    limit leaves room for a fence line reopened and one closed: Markdown's count up to 100
    characters)."""
    found = fences(text)
    cutter = _Cutter(text, found, fences)
    reserve = 1 + max((len(fence.close) for fence in found), default=0) if found else 0
    parts: list[Part] = []
    start, opened = 0, None
    while start < len(text):
        prefix = f"{opened.reopen}\n" if opened else ""
        end = len(text)
        if len(prefix) + len(text[start:].strip("\n")) + _closing(cutter.open_at(end)) > limit:
            end = cutter.cut(start, max(1, limit - len(prefix) - reserve))
        body = text[start:end]
        at_end = cutter.open_at(end)
        if body.strip():
            shown = prefix + body.strip("\n") + (f"\n{at_end.close}" if at_end else "")
            parts.append(Part(shown, body))
        start, opened = end, at_end
    return parts


def _closing(fence: Fence | None) -> int:
    return len(fence.close) + 1 if fence is not None else 0


class _Cutter:
    """Where a text may be cut, and which code block is open at a point."""

    def __init__(self, text: str, fences: Sequence[Fence], rule: Fences) -> None:
        self._text = text
        self._fences = fences
        self._rule = rule
        self._starts = [fence.start for fence in fences]
        # soft[i]: a cut before text[i] would go through a link, an entity or backticks
        self._soft = bytearray(len(text) + 1)
        for match in _ATOM.finditer(text):
            start, end = match.span()
            self._soft[start + 1 : end] = b"\x01" * (end - start - 1)

    def _hard(self, point: int) -> bool:
        """Whether a cut before ``text[point]`` would change what is code: through a fence,
        or where the next part would start with a fence the text does not have there."""
        index = bisect.bisect_right(self._starts, point) - 1
        if index >= 0 and self._fences[index].start < point < self._fences[index].end:
            return True
        if self._text[point - 1 : point] == "\n" or (index >= 0 and self._starts[index] == point):
            return False
        ahead = self._rule(self._text[point : point + 2 * _MAX_OPENER])
        return bool(ahead) and ahead[0].start == 0

    def _allowed(self, point: int) -> bool:
        return not self._soft[point] and not self._hard(point)

    def open_at(self, point: int) -> Fence | None:
        """The fence whose block is open at ``point`` (None: outside code); a fence cut
        through (only when a part has no room for it) counts as open from its start to its
        end."""
        index = bisect.bisect_left(self._starts, point) - 1
        if index < 0:
            return None
        fence = self._fences[index]
        if fence.opens:
            return fence
        return self._fences[index - 1] if point < fence.end else None

    def cut(self, start: int, room: int) -> int:
        """Where a part from ``start`` with ``room`` characters of body should end: before
        or after a code block, else after a paragraph break (outside code), a line break or
        a space, in the second half of the room; else at the room's end, moved back to the
        start of what it would cut through."""
        high = min(len(self._text), start + room)
        for point in self._candidates(start + room // 2, high):
            if start < point <= high and self._allowed(point):
                return point
        for allowed in (self._allowed, lambda point: not self._hard(point)):
            point = next((p for p in range(high, start, -1) if allowed(p)), start)
            if point > start:
                return point
        return high  # through a fence longer than a part

    def _candidates(self, low: int, high: int) -> Iterator[int]:
        """Cut points between ``low`` and ``high``, best first."""
        edges = (fence.start if fence.opens else fence.end for fence in self._fences)
        yield from sorted((edge for edge in edges if low < edge <= high), reverse=True)
        text = self._text
        at = text.rfind("\n\n", low, high)
        while at >= 0 and self.open_at(at) is not None:
            at = text.rfind("\n\n", low, at)
        if at >= 0:
            yield at + 2
        for separator in ("\n", " "):
            at = text.rfind(separator, low, high)
            while at >= 0 and not self._allowed(at + 1):
                at = text.rfind(separator, low, at)
            if at >= 0:
                yield at + 1


def _break_before(text: str, limit: int) -> int:
    """The last paragraph break, else line break, else space in the second half of the
    first ``limit`` characters; ``limit`` itself when there is none."""
    for separator in ("\n\n", "\n", " "):
        at = text.rfind(separator, limit // 2, limit)
        if at > 0:
            return at
    return limit


@dataclass(frozen=True)
class LongReply:
    shown: str
    """The start of the reply, ended at a paragraph, line or word break."""
    whole: str
    note: str
    """Says that the reply was cut and where the rest is."""

    @property
    def attachment(self) -> bytes:
        return self.whole.encode("utf-8")


def shorten(text: str, limit: int) -> LongReply | None:
    """The reply cut to at most ``limit`` characters; None when it fits."""
    if len(text) <= limit:
        return None
    cut = _break_before(text, limit)
    note = (
        f"(The reply is {len(text):,} characters long, too long to post; "
        f"the whole of it is in {ATTACHMENT_NAME}.)"
    )
    return LongReply(shown=text[:cut].rstrip(), whole=text, note=note)


Mention = re.Pattern[str]
"""A platform's syntax for a mention in message text; its first group is the id mentioned."""


def mentioned(text: str, syntax: Mention) -> set[str]:
    """The ids ``text`` mentions."""
    return set(syntax.findall(text))


def without_mentions_of(text: str, ids: Collection[str], syntax: Mention) -> str:
    """``text`` with its mentions of ``ids`` (the bot's) removed, with the spaces after them."""
    return re.sub(rf"(?:{syntax.pattern})[ \t]*", lambda m: _unless(m, ids), text)


def named_mentions(text: str, names: Mapping[str, str], syntax: Mention) -> str:
    """Mentions of the people ``names`` knows shown as ``@name``, as a person reads them; the
    others are left as written."""

    def name(match: re.Match[str]) -> str:
        known = names.get(match.group(1))
        return f"@{known}" if known is not None else match.group(0)

    return syntax.sub(name, text)


def _unless(match: re.Match[str], ids: Collection[str]) -> str:
    return "" if match.group(1) in ids else match.group(0)
