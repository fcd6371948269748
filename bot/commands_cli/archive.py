"""``bot backup``, ``bot export`` and ``bot import``: the database copied, written out as
JSON Lines, read back."""

from __future__ import annotations

import argparse
import contextlib
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from bot.commands_cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Commands
from bot.commands_cli.conversations import known_conversation
from bot.config.textfile import NotUtf8, utf8_lines
from bot.core.ports.store import AdminStore
from bot.core.progress import shown
from bot.core.wording import counted
from bot.store.archive import ArchiveError, dump_lines, parse_lines
from bot.store.backup import BackupError, os_reason


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    backup = commands.add_parser(
        "backup", parents=[common], help="copy the database consistently, even while it runs"
    )
    backup.add_argument("path", metavar="PATH", type=Path, help="where to write the copy")
    export = commands.add_parser(
        "export",
        parents=[common],
        help="write messages, pins, summaries, profiles and settings as JSON Lines",
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
        " merged: one its person already has (the same text) is skipped. Settings are"
        " skipped where the same are here already (a reset keeps them), refused where"
        " others are.",
    )
    imp.add_argument("file", metavar="FILE", nargs="?", type=Path, help="default: stdin")


async def backup(store: AdminStore, args: argparse.Namespace, database: str) -> int:
    """``bot backup``: a consistent copy of ``database`` at ``args.path``."""
    with shown("backup", total=None, unit="page") as progress:

        def pages(done: int, total: int) -> None:
            if progress.total != total:
                progress.set_total(total)
            progress.advance(done - progress.done)

        try:
            await store.backup(target=args.path, pages=pages)
        except BackupError as exc:
            print(f"bot backup: {exc}", file=sys.stderr)
            return EXIT_FAILED
    print(f"backed up {database} to {args.path}", file=sys.stderr)
    return EXIT_OK


async def export(store: AdminStore, args: argparse.Namespace) -> int:
    """``bot export``: every record, or one channel's, to ``--output`` or stdout."""
    channel_key = None
    if args.channel:
        conversation = await known_conversation(store, "export", args.channel, channel=True)
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


async def import_(store: AdminStore, args: argparse.Namespace) -> int:
    """``bot import``: what an export wrote, from ``FILE`` or stdin, all or nothing."""
    try:
        if args.file:
            with args.file.open("rb") as source:
                records = parse_lines(utf8_lines(source, str(args.file)))
        else:
            records = parse_lines(utf8_lines(sys.stdin.buffer, "stdin"))
        with shown("import", total=len(records), unit="record") as progress:
            imported = await store.import_records(records=records, advance=progress.advance)
    except (ArchiveError, OSError, NotUtf8) as exc:
        print(f"bot import: {exc}", file=sys.stderr)
        return EXIT_FAILED
    known, forgotten = imported.known_facts, imported.forgotten_facts
    skipped = f"; {counted(known, 'profile fact')} already kept, skipped" if known else ""
    if forgotten:
        skipped += (
            f"; {counted(forgotten, 'profile fact')} deleted here with /forget, not brought back"
        )
    if imported.known_settings:
        skipped += f"; {counted(imported.known_settings, 'setting record')} already here, skipped"
    print(f"imported {counted(imported.records, 'record')}{skipped}", file=sys.stderr)
    return EXIT_OK
