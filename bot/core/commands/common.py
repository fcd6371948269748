"""What every command shares: its entry in the table, and how it answers."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.core.engine import Engine
from bot.core.models import CommandCall, Person, Reply, ReplyKind
from bot.core.ports.llm import clean_text

Handler = Callable[[Engine, CommandCall], Awaitable[Reply]]


@dataclass(frozen=True)
class CommandSpec:
    name: str
    usage: str
    description: str
    handler: Handler
    admin: bool = False
    ephemeral: bool = False
    """Whether the answer is for the caller only (Slack and Discord)."""
    public_options: tuple[str, ...] = ()
    """Arguments whose answer everyone in the channel sees, the command being ``ephemeral``
    otherwise (``chart``: a chart is posted)."""

    def ephemeral_for(self, argument: str) -> bool:
        """Whether the answer to ``/NAME argument`` is for the caller only."""
        return self.ephemeral and argument.strip().lower() not in self.public_options


def info(text: str, *, ephemeral: bool = False) -> Reply:
    return Reply(text, kind=ReplyKind.INFO, ephemeral=ephemeral)


def error(text: str) -> Reply:
    return Reply(text, kind=ReplyKind.ERROR, ephemeral=True)


NUMBER = re.compile(r"^#?(\d{1,18})$")
"""A pin's or fact's number as typed: ``3`` or ``#3``."""


def person_of(call: CommandCall) -> Person:
    return Person.of(call.conversation, call.user_id)


def name_of(call: CommandCall) -> str:
    """The caller as messages name them (their id when the platform gave no name)."""
    return clean_text(call.user_name) or call.user_id
