"""Replies as Discord shows them: parts of at most 2,000 characters. Pure.

The Markdown is Discord's own; only the splitting is done here (:func:`bot.adapters.text.split`
with Markdown's fence lines, so a code block cut in two is reopened with its language).
"""

from __future__ import annotations

from bot.adapters.text import Part, line_fences, split

MESSAGE_LIMIT = 2000

__all__ = ["MESSAGE_LIMIT", "Part", "split_message"]


def split_message(text: str, limit: int = MESSAGE_LIMIT) -> list[Part]:
    """Split ``text`` into parts of at most ``limit`` characters with balanced code fences."""
    return split(text, limit, line_fences)
