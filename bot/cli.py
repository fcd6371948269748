"""The ``bot`` command line: chat, run, doctor, stats and the operator commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from bot import __version__
from bot.commands_cli import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, archive, conversations
from bot.commands_cli.evaluate import add_parsers as add_eval_parser
from bot.commands_cli.evaluate import evaluate
from bot.commands_cli.migrate import add_parser as add_migrate_parser
from bot.commands_cli.migrate import migrate_store
from bot.commands_cli.settings import add_parser as add_settings_parser
from bot.commands_cli.usage import add_parser as add_usage_parser
from bot.commands_cli.usage import usage
from bot.config import (
    Config,
    ConfigError,
    config_files,
    config_path,
    load_config,
    require_platform_tokens,
)
from bot.core.models import Conversation
from bot.core.ports.platform import NoPlatformEnabled, PlatformError
from bot.core.ports.store import StorageError, Store, StoreUnavailable
from bot.ops.http_server import serve_http
from bot.run import enabled_platforms, run_platforms
from bot.telemetry.logs import setup_logging
from bot.wiring import READ_FAILURES, missing_keys, open_app, open_store

log = logging.getLogger(__name__)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config",
        metavar="FILE",
        default=argparse.SUPPRESS,
        help="config file, or several separated by ':' (default: $BOT_CONFIG, else"
        " ./config.yaml); NAME.local.yaml beside the first is merged over them",
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
    chat.add_argument(
        "--user", default=os.environ.get("USER") or "you", type=_utf8, help="your name"
    )
    run = commands.add_parser(
        "run", parents=[common], help="connect every platform enabled in config"
    )
    run.add_argument(
        "--check",
        action="store_true",
        help="only check the configuration bot run would use, and exit (0: valid)",
    )
    manifest = commands.add_parser(
        "slack-manifest",
        help="print the Slack app manifest (YAML) for the bot's commands",
        description="Print the Slack app manifest: Socket Mode, or with --request-url, HTTP"
        " mode with every request (events, interactivity, slash commands) sent to URL.",
    )
    manifest.add_argument(
        "--request-url",
        metavar="URL",
        type=_request_url,
        help="the public https URL of the bot's /slack/events (HTTP mode)",
    )
    commands.add_parser(
        "doctor", parents=[common], help="check config, database and model endpoints"
    )
    conversations.add_stats_parser(commands, common)
    archive.add_parsers(commands, common)
    add_migrate_parser(commands, common)
    commands.add_parser(
        "health",
        parents=[common],
        help="ask the running bot's /healthz (exit 0 when healthy or no http.port is set)",
    )
    conversations.add_reset_parser(commands, common)
    add_settings_parser(commands, common)
    add_usage_parser(commands, common)
    add_eval_parser(commands, common)
    return parser


def _utf8(value: str) -> str:
    """An argument that can be stored: bytes that are not UTF-8 are refused, not crashed on."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError("not valid UTF-8 text") from None
    return value


def _channel_name(value: str) -> str:
    try:
        Conversation.console(_utf8(value))
    except ValueError:
        raise argparse.ArgumentTypeError("a channel name is non-empty, without ':'") from None
    return value


def _request_url(value: str) -> str:
    """Slack sends requests only to https URLs."""
    parts = urllib.parse.urlsplit(value)
    if parts.scheme != "https" or not parts.hostname:
        raise argparse.ArgumentTypeError(
            "Slack needs an https URL, e.g. https://bot.example.com/slack/events"
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, so that a closed pipe is caught rather than met at exit
    except BrokenPipeError:
        # Whoever read stdout stopped (``bot stats | head``): exit quietly, as the Python docs'
        # "Note on SIGPIPE" does, with stdout sent to devnull for the final flush.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILED
    return code


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "slack-manifest":  # needs no configuration
        from bot.adapters.slack.manifest import manifest_yaml

        print(manifest_yaml(args.request_url), end="")
        return EXIT_OK
    path = config_path(getattr(args, "config", None), os.environ)
    try:
        config = load_config(path)
        if args.command == "run":
            require_platform_tokens(config)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"bot: {problem}", file=sys.stderr)
        return EXIT_CONFIG
    if args.command == "run" and args.check:
        files = " + ".join(str(file) for file in config_files(path))
        print(f"config ok: {files}")
        return EXIT_OK
    setup_logging(
        config.logging.level,
        os.environ,
        config.logging.format,
        slack_sdk_debug=config.logging.slack_sdk_debug,
    )
    if args.command == "health":
        return _health(config)
    try:
        if args.command == "eval":
            return asyncio.run(evaluate(args, config))
        if args.command == "migrate-store":
            return asyncio.run(migrate_store(args, config))
        return asyncio.run(_dispatch(args, config, path))
    except (StoreUnavailable, StorageError) as exc:
        print(f"bot: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except READ_FAILURES as exc:
        print(f"bot: database {config.storage.name}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


async def _dispatch(args: argparse.Namespace, config: Config, path: Path) -> int:
    if args.command in _STORE_COMMANDS:
        store = await open_store(config)
        try:
            return await _STORE_COMMANDS[args.command](store, args, config)
        finally:
            await store.close()
    if args.command in ("run", "chat"):
        for line in missing_keys(config):
            log.warning("%s", line)
    async with open_app(config) as app:
        if args.command == "run":
            await app.engine.backfill_embeddings()
            try:
                platforms = enabled_platforms(app)
                async with serve_http(app, platforms):
                    await run_platforms(platforms)
            except PlatformError as exc:
                print(f"bot run: {exc}", file=sys.stderr)
                return EXIT_FAILED
            except NoPlatformEnabled:
                print(
                    "bot run: no chat platform is enabled: set slack.enabled or "
                    "discord.enabled to true in the config (docs/slack.md, docs/discord.md), "
                    "or use `bot chat` to talk to the bot in the terminal.",
                    file=sys.stderr,
                )
                return EXIT_CONFIG
            return EXIT_OK
        if args.command == "chat":
            from bot.adapters.console import chat

            await chat(app.engine, channel=args.channel, user=args.user)
            return EXIT_OK
        if args.command == "doctor":
            from bot.ops.doctor import run_checks

            ok = await run_checks(app, path, lambda check: print(check.line(), flush=True))
            return EXIT_OK if ok else EXIT_FAILED
        if args.command == "stats":
            return await conversations.stats(app, args.channel)
        if args.command == "settings":
            from bot.commands_cli.settings import settings

            return await settings(app, args)
    raise AssertionError(args.command)


_STORE_COMMANDS: dict[str, Callable[[Store, argparse.Namespace, Config], Awaitable[int]]] = {
    "backup": lambda store, args, config: archive.backup(store, args, config.storage.path),
    "export": lambda store, args, config: archive.export(store, args),
    "import": lambda store, args, config: archive.import_(store, args),
    "reset": lambda store, args, config: conversations.reset(store, args),
    "usage": usage,
}
"""The commands that need only the database (no model endpoint, no platform)."""


def _health(config: Config) -> int:
    """The container's HEALTHCHECK: the running bot's ``/healthz``, on this machine."""
    import urllib.error
    import urllib.request

    if config.http.port is None:
        print("no http.port configured; nothing to check")
        return EXIT_OK
    url = f"http://127.0.0.1:{config.http.port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            print(response.read().decode(), end="")
            return EXIT_OK
    except urllib.error.HTTPError as exc:
        print(exc.read().decode(), end="")
    except OSError as exc:
        print(f"bot health: {url}: {exc}", file=sys.stderr)
    return EXIT_FAILED
