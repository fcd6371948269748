"""The ``bot`` command line: chat, run, doctor, stats."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from bot import __version__
from bot.app import App, open_app
from bot.config import Config, ConfigError, Strategy, config_path, load_config
from bot.logs import setup_logging
from bot.models import Conversation
from bot.platforms import NoPlatformEnabled, PlatformError, enabled_platforms, run_platforms
from bot.store.sqlite import DatabaseError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="config file (default: $BOT_CONFIG, else ./config.yaml)",
    )
    parser = argparse.ArgumentParser(
        prog="bot",
        description="A Discord and Slack chatbot that remembers each channel's conversation.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chat = commands.add_parser(
        "chat", parents=[common], help="talk to the bot in the terminal (reads lines from stdin)"
    )
    chat.add_argument(
        "--channel", default="default", type=_channel_name, help="console channel name"
    )
    chat.add_argument("--user", default=os.environ.get("USER") or "you", help="your name")
    commands.add_parser("run", parents=[common], help="connect every platform enabled in config")
    commands.add_parser(
        "doctor", parents=[common], help="check config, database and model endpoints"
    )
    stats = commands.add_parser("stats", parents=[common], help="token usage per conversation")
    stats.add_argument(
        "--channel",
        metavar="NAME",
        help="a console channel name or a conversation key such as slack:T1:C1",
    )
    evaluate = commands.add_parser(
        "eval",
        parents=[common],
        help="forgetting probe: replay a transcript with planted facts through each strategy",
    )
    evaluate.add_argument("transcript", type=Path, help="a JSON Lines transcript (README)")
    evaluate.add_argument(
        "--strategy",
        dest="strategies",
        action="append",
        choices=[s.value for s in Strategy],
        help="a strategy to evaluate (repeatable; default: all four)",
    )
    evaluate.add_argument(
        "--budget", type=int, help="prompt budget in tokens (default: memory.max_context_tokens)"
    )
    evaluate.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser


def _channel_name(value: str) -> str:
    try:
        Conversation.console(value)
    except ValueError:
        raise argparse.ArgumentTypeError("a channel name is non-empty, without ':'") from None
    return value


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    path = config_path(getattr(args, "config", None), os.environ)
    try:
        config = load_config(path)
    except ConfigError as exc:
        print(f"bot: {exc}", file=sys.stderr)
        return EXIT_USAGE
    setup_logging(config.logging.level, os.environ)
    try:
        if args.command == "eval":
            return asyncio.run(_eval(args, config))
        return asyncio.run(_dispatch(args, config, path))
    except DatabaseError as exc:
        print(f"bot: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


async def _dispatch(args: argparse.Namespace, config: Config, path: Path) -> int:
    async with open_app(config) as app:
        if args.command == "run":
            try:
                await run_platforms(enabled_platforms(app))
            except PlatformError as exc:
                print(f"bot run: {exc}", file=sys.stderr)
                return EXIT_FAILED
            except NoPlatformEnabled:
                print(
                    "bot run: no chat platform is enabled: set slack.enabled or "
                    "discord.enabled to true in the config (README: Slack, Discord), or use "
                    "`bot chat` to talk to the bot in the terminal.",
                    file=sys.stderr,
                )
                return EXIT_USAGE
            return EXIT_OK
        if args.command == "chat":
            from bot.console import chat

            await chat(app.engine, channel=args.channel, user=args.user)
            return EXIT_OK
        if args.command == "doctor":
            from bot.doctor import run_checks

            ok = await run_checks(app, path, lambda check: print(check.line(), flush=True))
            return EXIT_OK if ok else EXIT_FAILED
        if args.command == "stats":
            return await _stats(app, args.channel)
    raise AssertionError(args.command)


async def _eval(args: argparse.Namespace, config: Config) -> int:
    """``bot eval``: never opens the configured database; each strategy gets a fresh one."""
    import json

    from bot.evaluate import (
        ModelFailed,
        TranscriptError,
        evaluate,
        format_report,
        load_transcript,
    )

    try:
        transcript = load_transcript(args.transcript)
    except TranscriptError as exc:
        print(f"bot eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if args.budget is not None:
        try:
            memory = config.memory.model_validate(
                {**config.memory.model_dump(), "max_context_tokens": args.budget}
            )
        except ValueError as exc:
            print(f"bot eval: --budget: {exc}", file=sys.stderr)
            return EXIT_USAGE
        config = config.model_copy(update={"memory": memory})
    strategies = [Strategy(s) for s in args.strategies or [s.value for s in Strategy]]
    try:
        results = await evaluate(config, transcript, strategies)
    except ModelFailed as exc:
        print(f"bot eval: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        print(
            format_report(
                transcript, results, model=config.llm.chat_model, name=str(args.transcript)
            )
        )
    return EXIT_OK


async def _stats(app: App, channel: str | None) -> int:
    from bot.commands import format_stats

    if channel:
        try:
            conversation = (
                Conversation.from_key(channel) if ":" in channel else Conversation.console(channel)
            )
        except ValueError as exc:
            print(f"bot stats: --channel: {exc}", file=sys.stderr)
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
