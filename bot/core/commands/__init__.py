"""The bot's commands: one table every platform registers from, one implementation each."""

from __future__ import annotations

import re

from bot.core.commands.charts import CHART
from bot.core.commands.common import CommandSpec, Handler, error, info
from bot.core.commands.memory import reset, search, summarize
from bot.core.commands.pins import pin, pins, unpin
from bot.core.commands.profile import forget, profile, remember
from bot.core.commands.settings import settings
from bot.core.commands.stats import format_stats, stats
from bot.core.commands.usage import usage
from bot.core.engine import Engine
from bot.core.models import CommandCall, Reply
from bot.core.ports.store import StorageError

__all__ = [
    "COMMANDS",
    "CommandSpec",
    "Handler",
    "format_stats",
    "parse_command_line",
    "run_command",
]


async def help_(engine: Engine, call: CommandCall) -> Reply:
    lines = ["Commands:"]
    lines.extend(f"  {spec.usage} — {spec.description}" for spec in COMMANDS)
    return info("\n".join(lines), ephemeral=True)


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("pin", "/pin TEXT", "keep a fact in every prompt of this channel", pin),
    CommandSpec("unpin", "/unpin ID", "remove a pinned fact", unpin),
    CommandSpec("pins", "/pins", "list the pinned facts", pins),
    CommandSpec(
        "remember",
        "/remember TEXT",
        "keep a fact about you, shown to the model when you speak",
        remember,
        ephemeral=True,
    ),
    CommandSpec("profile", "/profile", "list what is kept about you", profile, ephemeral=True),
    CommandSpec(
        "forget",
        "/forget ID",
        "remove a fact about you (/forget all: every one)",
        forget,
        ephemeral=True,
    ),
    CommandSpec(
        "summarize",
        "/summarize [since WHEN]",
        "fold older messages into the summary now; since WHEN (or last N): a digest of that part",
        summarize,
    ),
    CommandSpec(
        "search",
        "/search TEXT",
        "what the bot finds in this conversation's memory for TEXT",
        search,
        ephemeral=True,
    ),
    CommandSpec(
        "stats",
        "/stats [chart]",
        "tokens in the prompt against the budget; chart: posts the layers as a bar",
        stats,
        ephemeral=True,
        public_options=(CHART,),
    ),
    CommandSpec(
        "usage",
        "/usage [chart]",
        "what the models cost here and for you; chart: posts this channel's last 30 days",
        usage,
        ephemeral=True,
        public_options=(CHART,),
    ),
    CommandSpec(
        "settings",
        "/settings [KEY [VALUE]]",
        "what the bot is set to here (persona, model, memory, answering); admins change it",
        settings,
    ),
    CommandSpec(
        "reset", "/reset [all]", "forget this conversation (all: pins too)", reset, admin=True
    ),
    CommandSpec("help", "/help", "list the commands", help_, ephemeral=True),
)


_BY_NAME = {spec.name: spec for spec in COMMANDS}


async def run_command(engine: Engine, call: CommandCall) -> Reply:
    spec = _BY_NAME.get(call.name.lower())
    if spec is None:
        names = ", ".join(f"/{s.name}" for s in COMMANDS)
        return error(f"Unknown command /{call.name}. Commands: {names}.")
    if spec.admin and not call.can_manage:
        return error(f"Only channel admins can use /{spec.name}.")
    try:
        return await spec.handler(engine, call)
    except StorageError:  # the store logged the cause; the person learns nothing was kept
        return error(
            f"/{spec.name} could not be saved: the bot's storage is failing; "
            "an operator has been told."
        )


_COMMAND_LINE = re.compile(r"/(?!/)(\S*)\s*(.*)", re.DOTALL)


def parse_command_line(line: str) -> tuple[str, str] | None:
    """``"/pin some text"`` → ``("pin", "some text")``, the name ending at any whitespace
    (``/pin<TAB>text`` too); None when it is not a command."""
    match = _COMMAND_LINE.match(line)
    return None if match is None else (match[1], match[2])
