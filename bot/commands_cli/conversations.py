"""``bot stats`` and ``bot reset``, and how ``--channel`` names a stored conversation."""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Collection

from bot.commands_cli import EXIT_OK, EXIT_USAGE, Commands
from bot.core.models import Conversation
from bot.core.ports.store import AdminStore, Store
from bot.core.wording import counted
from bot.wiring import App


def add_stats_parser(commands: Commands, common: argparse.ArgumentParser) -> None:
    stats = commands.add_parser("stats", parents=[common], help="token usage per conversation")
    stats.add_argument(
        "--channel",
        metavar="NAME",
        help="a console channel name or a conversation key such as slack:T1:C1",
    )


def add_reset_parser(commands: Commands, common: argparse.ArgumentParser) -> None:
    reset = commands.add_parser(
        "reset", parents=[common], help="forget a conversation's messages and summary"
    )
    reset.add_argument("--channel", metavar="NAME|KEY", required=True)
    reset.add_argument("--pins", action="store_true", help="its channel's pins too")
    reset.add_argument(
        "--threads", action="store_true", help="the channel's threads too (what export takes)"
    )


def conversation_of(value: str) -> Conversation:
    """A console channel name, or a conversation key such as ``slack:T1:C1``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid UTF-8 text") from None
    return Conversation.from_key(value) if ":" in value else Conversation.console(value)


_CONSOLE = Conversation.console("x").key.removesuffix("x")


def _unknown(value: str, known: Collection[str]) -> str:
    """Why ``--channel value`` is refused: no such conversation, and the closest known ones
    (console channels by name, others by key)."""
    if not known:
        return f"no conversation {value!r}: the database holds none yet"
    forms: dict[str, str] = {}
    for key in sorted(known):
        name = key.removeprefix(_CONSOLE)
        forms[key] = forms[name] = name
    close = difflib.get_close_matches(value, forms, n=6, cutoff=0)
    nearest = list(dict.fromkeys(forms[form] for form in close))[:3]
    of = f" of the {len(known)} known" if len(known) > len(nearest) else ""
    return f"no conversation {value!r}; the closest{of}: {', '.join(nearest)}"


async def known_conversation(
    store: AdminStore, command: str, value: str, *, channel: bool = False
) -> Conversation | None:
    """``--channel``'s conversation when the database holds it (``channel``: or any thread
    of it); else None, the refusal printed."""
    try:
        conversation = conversation_of(value)
    except ValueError as exc:
        print(f"bot {command}: --channel: {exc}", file=sys.stderr)
        return None
    known = await store.known_keys()
    wanted = conversation.channel_key if channel else conversation.key
    held = {Conversation.from_key(key).channel_key for key in known} if channel else known
    if wanted in held:
        return conversation
    print(f"bot {command}: --channel: {_unknown(value, known)}", file=sys.stderr)
    return None


async def stats(app: App, channel: str | None) -> int:
    """``bot stats``: one conversation's figures, or a line per conversation."""
    from bot.core.commands import format_stats

    if channel:
        conversation = await known_conversation(app.store, "stats", channel)
        if conversation is None:
            return EXIT_USAGE
        print(await format_stats(app.engine, conversation))
        return EXIT_OK
    rows = await app.store.conversations()
    if not rows:
        print("No conversations yet.")
        return EXIT_OK
    width = max(len(row.key) for row in rows)
    print(f"{'conversation':<{width}}  {'messages':>8}  {'tokens':>10}  {'pins':>4}")
    for row in rows:
        print(f"{row.key:<{width}}  {row.messages:>8,}  {row.tokens:>10,}  {row.pins:>4}")
    return EXIT_OK


async def reset(store: Store, args: argparse.Namespace) -> int:
    """``bot reset``: a conversation (``--threads``: and its channel's threads) forgotten."""
    conversation = await known_conversation(store, "reset", args.channel, channel=args.threads)
    if conversation is None:
        return EXIT_USAGE
    keys = [conversation.key]
    if args.threads:
        channel = conversation.channel_key
        known = await store.known_keys()
        threads = sorted(k for k in known if Conversation.from_key(k).channel_key == channel)
        keys = [channel, *(k for k in threads if k != channel)]
    deleted = 0
    for key in keys:
        forgotten = Conversation.from_key(key)
        deleted += await store.reset(
            conversation=forgotten, include_pins=args.pins and key == keys[0]
        )
    threads_too = f" and {len(keys) - 1} of its threads" if len(keys) > 1 else ""
    pins = " and its channel's pins" if args.pins else ""
    print(f"reset {keys[0]}{threads_too}: {counted(deleted, 'message')} deleted{pins}")
    return EXIT_OK
