"""Why recall chose a message, in words the page shows: the query's words it holds (the
keyword search), its rank by meaning (the vector search), both, and whether it is important
(scored so, or marked with 📌)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.core.models import StoredMessage
from bot.core.ports.prompts import RecallNote


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``22nd``."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def why(words: Sequence[str], rank: int | None, important: bool) -> str:
    """``words: budget, march; meaning: 2nd nearest; 📌 important`` (the parts that hold)."""
    parts = []
    if words:
        parts.append("words: " + ", ".join(words))
    if rank is not None:
        parts.append(f"meaning: {ordinal(rank)} nearest")
    if important:
        parts.append("📌 important")
    return "; ".join(parts)


def reasons(
    ranked: Sequence[StoredMessage],
    matched: Mapping[int, Sequence[str]],
    nearest: Sequence[int],
) -> dict[int, str]:
    """Why each of ``ranked`` was found, by message id: the words it ``matched`` (by id) and
    its place among the ``nearest`` ids in meaning, nearest first."""
    rank = {message_id: n for n, message_id in enumerate(nearest, 1)}
    return {m.id: why(matched.get(m.id, ()), rank.get(m.id), m.important) for m in ranked}


def notes(
    messages: Sequence[StoredMessage],
    where: str | Mapping[int, str],
    reasons: Mapping[int, str],
) -> list[RecallNote]:
    """A note for each recalled message: said in conversation ``where`` (or, by id, in
    those of a memory group), and why it was chosen."""
    return [
        RecallNote(
            stored_id=m.id,
            conversation_key=where if isinstance(where, str) else where[m.id],
            author_name=m.author_name,
            content=m.content,
            created_at=m.created_at,
            why=reasons.get(m.id, ""),
        )
        for m in messages
    ]
