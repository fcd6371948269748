"""``bot settings``: a conversation's ``/settings`` from the shell, as its admins have them."""

from __future__ import annotations

import argparse
import getpass
import sys

from bot.commands_cli import EXIT_OK, EXIT_USAGE, Commands
from bot.commands_cli.conversations import conversation_of
from bot.core.commands import run_command
from bot.core.models import CommandCall, ReplyKind
from bot.wiring import App


def add_parser(commands: Commands, common: argparse.ArgumentParser) -> None:
    settings = commands.add_parser(
        "settings",
        parents=[common],
        help="show or change a channel's settings, as /settings does (history: its changes)",
    )
    settings.add_argument(
        "--channel",
        metavar="NAME|KEY",
        required=True,
        help="a console channel name or a conversation key such as slack:T1:C1",
    )
    settings.add_argument(
        "words",
        nargs="*",
        metavar="KEY [VALUE] | reset KEY | history",
        help="as after /settings: nothing lists them all",
    )


def operator() -> str:
    """Who a change from the shell is recorded as."""
    try:
        return f"{getpass.getuser()} (shell)"
    except (KeyError, OSError):
        return "operator (shell)"


async def settings(app: App, args: argparse.Namespace) -> int:
    try:
        conversation = conversation_of(args.channel)
    except ValueError as exc:
        print(f"bot settings: --channel: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if conversation.key not in await app.store.known_keys():
        print(
            f"bot settings: note: nothing is stored in {conversation.key} yet; "
            "its settings apply once the bot hears from it",
            file=sys.stderr,
        )
    name = operator()
    call = CommandCall(
        conversation, "settings", " ".join(args.words), "shell", name, can_manage=True
    )
    reply = await run_command(app.engine, call)
    if reply.kind is ReplyKind.ERROR:
        print(f"bot settings: {reply.text}", file=sys.stderr)
        return EXIT_USAGE
    print(reply.text)
    return EXIT_OK
