"""The ``bot`` command line: chat, run, doctor, stats."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import logging
import os
import sqlite3
import sys
import urllib.parse
from collections.abc import Awaitable, Callable, Collection, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from bot import __version__
from bot.config import (
    Config,
    ConfigError,
    Strategy,
    config_files,
    config_path,
    load_config,
    require_platform_tokens,
)
from bot.config.textfile import NotUtf8, utf8_lines
from bot.core.models import Conversation
from bot.core.ports.platform import NoPlatformEnabled, PlatformError
from bot.core.ports.store import StorageError
from bot.core.progress import shown
from bot.core.wording import counted
from bot.ops.http_server import serve_http
from bot.run import enabled_platforms, run_platforms
from bot.store.archive import ArchiveError, BackupError, dump_lines, os_reason, parse_lines
from bot.store.sqlite.store import DatabaseError, SqliteStore
from bot.telemetry.logs import setup_logging
from bot.wiring import App, missing_keys, open_app

log = logging.getLogger(__name__)
EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_CONFIG = 78
"""The configuration is unusable (sysexits' EX_CONFIG): a supervisor can tell it from a crash
and not restart the bot until the file is fixed."""


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
    stats = commands.add_parser("stats", parents=[common], help="token usage per conversation")
    stats.add_argument(
        "--channel",
        metavar="NAME",
        help="a console channel name or a conversation key such as slack:T1:C1",
    )
    backup = commands.add_parser(
        "backup", parents=[common], help="copy the database consistently, even while it runs"
    )
    backup.add_argument("path", metavar="PATH", type=Path, help="where to write the copy")
    export = commands.add_parser(
        "export",
        parents=[common],
        help="write messages, pins, summaries and profiles as JSON Lines",
        description="Write the database, or one channel, as JSON Lines (bot import reads it).",
    )
    export.add_argument(
        "--channel",
        metavar="NAME|KEY",
        help="one channel (and its threads), with the profiles of the people who wrote in it"
        " (profiles are per person per workspace: their facts from every channel of that"
        " workspace, none from other workspaces)",
    )
    export.add_argument("--output", "-o", metavar="FILE", type=Path, help="default: stdout")
    imp = commands.add_parser(
        "import",
        parents=[common],
        help="read back what export wrote",
        description="Read back what bot export wrote, in one transaction: nothing is written"
        " when a conversation, message, pin or summary is already there. Profile facts are"
        " merged: one its person already has (the same text) is skipped.",
    )
    imp.add_argument("file", metavar="FILE", nargs="?", type=Path, help="default: stdin")
    commands.add_parser(
        "health",
        parents=[common],
        help="ask the running bot's /healthz (exit 0 when healthy or no http.port is set)",
    )
    reset = commands.add_parser(
        "reset", parents=[common], help="forget a conversation's messages and summary"
    )
    reset.add_argument("--channel", metavar="NAME|KEY", required=True)
    reset.add_argument("--pins", action="store_true", help="its channel's pins too")
    reset.add_argument(
        "--threads", action="store_true", help="the channel's threads too (what export takes)"
    )
    evaluate = commands.add_parser(
        "eval",
        parents=[common],
        help="forgetting probe: replay a transcript with planted facts through each strategy",
    )
    evaluate.add_argument(
        "transcript", type=Path, help="a JSON Lines transcript (docs/evaluation.md)"
    )
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
    evaluate.add_argument(
        "--recall-tokens",
        type=int,
        help="memory.recall_tokens for the replay (0: no recall; default: the configured one)",
    )
    evaluate.add_argument("--json", action="store_true", help="print the figures as JSON")
    return parser


def _conversation(value: str) -> Conversation:
    """A console channel name, or a conversation key such as ``slack:T1:C1``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("not valid UTF-8 text") from None
    return Conversation.from_key(value) if ":" in value else Conversation.console(value)


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
            return asyncio.run(_eval(args, config))
        return asyncio.run(_dispatch(args, config, path))
    except (DatabaseError, StorageError) as exc:
        print(f"bot: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except sqlite3.Error as exc:
        print(f"bot: database {config.storage.path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


async def _dispatch(args: argparse.Namespace, config: Config, path: Path) -> int:
    if args.command in _STORE_COMMANDS:
        store = await SqliteStore.open(
            config.storage.path,
            busy_timeout_ms=config.storage.busy_timeout_ms,
            synchronous=config.storage.synchronous,
        )
        try:
            return await _STORE_COMMANDS[args.command](store, args)
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
            return await _stats(app, args.channel)
    raise AssertionError(args.command)


async def _eval(args: argparse.Namespace, config: Config) -> int:
    """``bot eval``: never opens the configured database; each strategy gets a fresh one."""
    import json

    from bot.ops.evaluate import (
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
    overrides = {
        key: value
        for key, value in (
            ("max_context_tokens", args.budget),
            ("recall_tokens", args.recall_tokens),
        )
        if value is not None
    }
    if overrides:
        try:
            memory = config.memory.model_validate({**config.memory.model_dump(), **overrides})
        except ValueError as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            detail = first["msg"].removeprefix("Value error, ") if first else str(exc)
            print(f"bot eval: --budget/--recall-tokens: {detail}", file=sys.stderr)
            return EXIT_USAGE
        config = config.model_copy(update={"memory": memory})
    strategies = [Strategy(s) for s in args.strategies or [s.value for s in Strategy]]
    steps = len(transcript.steps) + len(transcript.probes)
    try:
        with shown("eval", total=steps * len(strategies), unit="step", final=True) as progress:
            results = await evaluate(config, transcript, strategies, progress.advance)
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


async def _known_conversation(
    store: SqliteStore, command: str, value: str, *, channel: bool = False
) -> Conversation | None:
    """``--channel``'s conversation when the database holds it (``channel``: or any thread
    of it); else None, the refusal printed."""
    try:
        conversation = _conversation(value)
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


async def _stats(app: App, channel: str | None) -> int:
    from bot.core.commands import format_stats

    if channel:
        conversation = await _known_conversation(app.store, "stats", channel)
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


async def _backup(store: SqliteStore, args: argparse.Namespace) -> int:
    with shown("backup", total=None, unit="page") as progress:

        def pages(done: int, total: int) -> None:
            if progress.total != total:
                progress.set_total(total)
            progress.advance(done - progress.done)

        try:
            await store.backup(args.path, pages)
        except BackupError as exc:
            print(f"bot backup: {exc}", file=sys.stderr)
            return EXIT_FAILED
    print(f"backed up {store.path} to {args.path}", file=sys.stderr)
    return EXIT_OK


async def _export(store: SqliteStore, args: argparse.Namespace) -> int:
    channel_key = None
    if args.channel:
        conversation = await _known_conversation(store, "export", args.channel, channel=True)
        if conversation is None:
            return EXIT_USAGE
        channel_key = conversation.channel_key
    # A file is written beside its name and renamed once complete: an earlier export under
    # that name stays whole until then.
    partial = args.output.with_name(args.output.name + ".partial") if args.output else None
    try:
        with (
            partial.open("w", encoding="utf-8") if partial else nullcontext(sys.stdout) as out,
            shown("export", total=None, unit="record") as progress,
        ):

            def write(records: list[dict[str, Any]]) -> None:
                out.writelines(dump_lines(records))
                progress.advance(len(records))

            count = await store.export_each(
                channel_key=channel_key, write=write, sized=progress.set_total
            )
        if partial:
            partial.replace(args.output)
    except OSError as exc:
        if partial is None:
            raise
        reason = os_reason(exc, exc.filename or args.output)
        print(f"bot export: cannot write {args.output}: {reason}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if partial:
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
    print(f"exported {counted(count, 'record')}", file=sys.stderr)
    return EXIT_OK


async def _import(store: SqliteStore, args: argparse.Namespace) -> int:
    try:
        if args.file:
            with args.file.open("rb") as source:
                records = parse_lines(utf8_lines(source, str(args.file)))
        else:
            records = parse_lines(utf8_lines(sys.stdin.buffer, "stdin"))
        with shown("import", total=len(records), unit="record") as progress:
            imported = await store.import_records(records, progress.advance)
    except (ArchiveError, OSError, NotUtf8) as exc:
        print(f"bot import: {exc}", file=sys.stderr)
        return EXIT_FAILED
    known, forgotten = imported.known_facts, imported.forgotten_facts
    skipped = f"; {counted(known, 'profile fact')} already kept, skipped" if known else ""
    if forgotten:
        skipped += (
            f"; {counted(forgotten, 'profile fact')} deleted here with /forget, not brought back"
        )
    print(f"imported {counted(imported.records, 'record')}{skipped}", file=sys.stderr)
    return EXIT_OK


async def _reset(store: SqliteStore, args: argparse.Namespace) -> int:
    conversation = await _known_conversation(store, "reset", args.channel, channel=args.threads)
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
        reset = Conversation.from_key(key)
        deleted += await store.reset(conversation=reset, include_pins=args.pins and key == keys[0])
    threads_too = f" and {len(keys) - 1} of its threads" if len(keys) > 1 else ""
    pins = " and its channel's pins" if args.pins else ""
    print(f"reset {keys[0]}{threads_too}: {counted(deleted, 'message')} deleted{pins}")
    return EXIT_OK


_STORE_COMMANDS: dict[str, Callable[[SqliteStore, argparse.Namespace], Awaitable[int]]] = {
    "backup": _backup,
    "export": _export,
    "import": _import,
    "reset": _reset,
}


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
