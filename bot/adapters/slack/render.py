"""Replies as Slack shows them: Markdown → mrkdwn, in messages Slack accepts. Pure.

Nothing the bot posts can mention anyone: every ``<``, ``>`` and ``&`` of the text is escaped,
so the only ``<…>`` in the output are links built here, to clean http(s) URLs, shown either as
the URL itself or as plain words (never as another address).
"""

from __future__ import annotations

import re
import unicodedata

from bot.adapters.text import any_fences
from bot.adapters.text import split as split_text

MAX_CHARS = 3500
"""Slack rejects long messages (``msg_too_long``) near 4,000 characters; stay well below."""

FENCE = "```"
_FENCE_LINE = re.compile(r"^\s*```")
_INLINE_CODE = re.compile(r"(`[^`\n]+`)")
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_BOLD = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_ITALIC = re.compile(r"(?<![*\w])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![*\w])")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_BULLET = re.compile(r"^(\s*)[-*+]\s+")
_LINK_LIKE = re.compile(r"://|www\.|[\w-]\.[^\W\d_]{2}", re.IGNORECASE)
_UNSAFE_IN_URL = re.compile(r"[\s<>|`\"]")
_PLACEHOLDER = re.compile(r"\x00(\d+)\x00")


def escape(text: str) -> str:
    """Slack's three control characters."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _invisible(text: str) -> bool:
    """Whether ``text`` holds control or invisible formatting characters."""
    return any(unicodedata.category(c) in ("Cc", "Cf") for c in text)


def link(text: str, url: str) -> str:
    """A Markdown link as mrkdwn: ``<url>`` when the text is the URL, ``<url|text>`` when the
    text is plain words; otherwise (an unclean URL, or text that names another address) the
    text and the URL, both shown, neither a link."""
    if _UNSAFE_IN_URL.search(url) or _invisible(url):
        return f"{escape(text)} ({escape(url)})"
    if text == url:
        return f"<{escape(url)}>"
    if "|" in text or _LINK_LIKE.search(text) or _invisible(text):
        return f"{escape(text)} ({escape(url)})"
    return f"<{escape(url)}|{escape(text)}>"


def _inline(text: str) -> str:
    """Markdown emphasis and links in prose (not code) as mrkdwn."""
    links: list[str] = []

    def keep_link(match: re.Match[str]) -> str:
        links.append(link(match.group(1), match.group(2)))
        return f"\x00{len(links) - 1}\x00"

    text = _LINK.sub(keep_link, text.replace("\x00", "\ufffd"))
    text = escape(text)
    text = _ITALIC.sub(r"_\1_", text)
    text = _BOLD.sub(r"*\2*", text)
    text = _STRIKE.sub(r"~\1~", text)
    return _PLACEHOLDER.sub(lambda m: links[int(m.group(1))], text)


def _line(line: str) -> str:
    heading = _HEADING.match(line)
    if heading:
        return f"*{_prose(heading.group(1)).strip('*')}*"
    bullet = _BULLET.match(line)
    if bullet and not re.match(r"^\s*([-*_])(\s*\1){2,}\s*$", line):
        line = f"{bullet.group(1)}• {line[bullet.end() :]}"
    return _prose(line)


def _prose(line: str) -> str:
    parts = _INLINE_CODE.split(line)
    return "".join(escape(p) if i % 2 else _inline(p) for i, p in enumerate(parts))


def to_mrkdwn(markdown: str) -> str:
    """Bold, italics, strikethrough, links, headings and bullets in Slack's syntax; code
    (fenced or inline) kept verbatim apart from escaping, fences without their language."""
    out: list[str] = []
    in_code = False
    for line in markdown.split("\n"):
        if _FENCE_LINE.match(line):
            in_code = not in_code
            out.append(FENCE)
        elif in_code:
            out.append(escape(line))
        else:
            out.append(_line(line))
    return "\n".join(out)


def split(text: str, limit: int = MAX_CHARS) -> list[str]:
    """Messages of at most ``limit`` characters (:func:`bot.adapters.text.split`, with
    Slack's rule that any ``` opens or closes a code block)."""
    return [part.text for part in split_text(text, limit, any_fences)]
