"""The profile facts a summary proposes: its ``PROFILE <name>: <fact>`` lines, taken out of
the summary and matched to the people who wrote the folded messages."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.models import Role, StoredMessage, clean_name

_PROFILE_LINE = re.compile(r"^[-*]?\s*PROFILE\s+(?P<name>[^:]+?)\s*:\s*(?P<fact>\S.*?)\s*$")
_PROFILE_START = re.compile(r"^[-*]?\s*PROFILE\b")
_MAX_FACT_CHARS = 300


def split_profiles(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The summary without its ``PROFILE`` lines (and their heading), and those lines as
    ``(name, fact)``; lines that start like one but don't parse are dropped."""
    kept: list[str] = []
    proposals: list[tuple[str, str]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if _PROFILE_START.match(stripped):
            match = _PROFILE_LINE.match(stripped)
            if match is not None:
                proposals.append((match["name"], match["fact"][:_MAX_FACT_CHARS]))
            continue
        if stripped.rstrip(":").strip().casefold() == "profiles":
            continue
        kept.append(line)
    return "\n".join(kept).strip(), proposals


def authors(
    named: Sequence[tuple[str, str]], rows: Sequence[StoredMessage]
) -> list[tuple[str, str]]:
    """``(name, fact)`` proposals as ``(author id, fact)``, for names that belong to exactly
    one person among the folded messages' authors."""
    ids: dict[str, set[str]] = {}
    for row in rows:
        if row.role is Role.USER:
            ids.setdefault(clean_name(row.author_name), set()).add(row.author_id)
    out = []
    for name, fact in named:
        owners = ids.get(name.strip(), set())
        if len(owners) == 1:
            out.append((next(iter(owners)), fact))
    return out
