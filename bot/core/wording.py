"""Counts in what the bot prints: the noun agrees with the number."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 message``, ``0 messages``, ``2,000 messages`` (``plural`` when not noun + s)."""
    return f"{count:,} {noun_for(count, noun, plural)}"


def noun_for(count: int, noun: str, plural: str | None = None) -> str:
    """``noun`` for one, else its plural."""
    return noun if count == 1 else plural or noun + "s"
