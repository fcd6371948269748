"""Spending caps: how much the models may spend a UTC day and a UTC month for one channel (its
threads included), one person in a workspace or server, and one workspace or server; each in
money, tokens, or both (whichever is reached first).

A cap is written ``$2.50`` (a bare number, ``2.5``, is money too), ``150k tokens`` (``k`` and
``M`` multiply), ``$2.50 or 150k tokens``, or ``off``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field, field_validator

from bot.config.section import Section

CURRENCY = "$"
_MONEY = re.compile(r"^\$?\s*(\d[\d,_]*(?:\.\d+)?|\.\d+)$")
_TOKENS = re.compile(r"^(\d[\d,_]*(?:\.\d+)?)\s*([km]?)\s*tokens?$")
_SEPARATOR = re.compile(r"\s+or\s+|\s*\+\s*")
OFF = "off"
CAP_FORMS = "off, money ($2.50 or 2.5), tokens (150k tokens) or both ($2.50 or 150k tokens)"


@dataclass(frozen=True)
class Cap:
    """A limit on spend in one period; a field None is not limited."""

    money: float | None = None
    tokens: int | None = None

    def __str__(self) -> str:
        parts = []
        if self.money is not None:
            cents = round(self.money, 2) == self.money
            shown = f"{self.money:,.2f}" if cents else f"{self.money:,.6f}".rstrip("0")
            parts.append(f"{CURRENCY}{shown}")
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        return " or ".join(parts) or OFF


def parse_cap(text: str) -> Cap | None:
    """The cap ``text`` spells (None: ``off``); ValueError naming the forms when it is none."""
    typed = text.strip().lower()
    if typed in ("off", "none", "no", "0", "false"):
        return None
    money: float | None = None
    tokens: int | None = None
    for part in _SEPARATOR.split(typed):
        if (found := _TOKENS.match(part)) is not None and tokens is None:
            scale = {"": 1, "k": 1_000, "m": 1_000_000}[found[2]]
            tokens = round(float(_digits(found[1])) * scale)
            if tokens <= 0:
                break
        elif (found := _MONEY.match(part)) is not None and money is None:
            money = float(_digits(found[1]))
            if money <= 0:
                break
        else:
            break
    else:
        return Cap(money=money, tokens=tokens)
    raise ValueError(f"{text.strip()!r} is not a cap: {CAP_FORMS}")


def _digits(text: str) -> str:
    return text.replace(",", "").replace("_", "")


class PeriodCaps(Section):
    """One scope's caps per UTC day and per UTC month; null: none."""

    day: str | None = None
    month: str | None = None

    @field_validator("day", "month", mode="before")
    @classmethod
    def _canonical(cls, value: Any) -> str | None:
        if value is None or value is False:
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ValueError(f"not a cap: {CAP_FORMS}")
        cap = parse_cap(str(value))
        return None if cap is None else str(cap)

    def cap(self, period: str) -> Cap | None:
        """The cap for ``day`` or ``month``, parsed."""
        value = self.day if period == "day" else self.month
        return None if value is None else parse_cap(value)


class BudgetsConfig(Section):
    """The caps' defaults; channels change theirs and their people's with ``/settings``, the
    workspace's are the operator's alone."""

    channel: PeriodCaps = PeriodCaps()
    """Each channel with its threads."""
    person: PeriodCaps = PeriodCaps()
    """Each person, in all the channels of one workspace or server."""
    workspace: PeriodCaps = PeriodCaps()
    """Each workspace or server (not DMs outside one: each is a channel of its own)."""
    notice_at: float = Field(default=0.8, gt=0, lt=1)
    """The share of a cap at which the channel is told, once."""
