"""``bot migrate-store``: the SQLite database copied into PostgreSQL, with the bot stopped."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from bot.commands_cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Commands
from bot.config import Config
from bot.config.model import POSTGRES_SCHEMES, shown_url
from bot.core.progress import shown
from bot.core.wording import counted
from bot.store.postgres.connection import FAILURES
from bot.store.postgres.schema import DatabaseError as PostgresDatabaseError
from bot.store.postgres.store import open_pool, reason
from bot.store.sqlite.schema import DatabaseError
from bot.store.sqlite_to_postgres import (
    Migrated,
    MigrationError,
    Source,
    SourceMissing,
    Target,
    check_free,
    migrate,
)

BATCH = 5000
"""Rows copied per transaction."""


def add_parser(commands: Commands, common: argparse.ArgumentParser) -> None:
    move = commands.add_parser(
        "migrate-store",
        parents=[common],
        help="copy the SQLite database into PostgreSQL (with the bot stopped)",
        description="Copy everything in the SQLite database into an empty PostgreSQL"
        " database, ids kept, then count each table's rows on both sides. Stop the bot first."
        " Run again after an interruption: it goes on where it stopped.",
    )
    move.add_argument(
        "--from",
        dest="source",
        metavar="PATH",
        type=Path,
        help="the SQLite file (default: the config's storage.path)",
    )
    move.add_argument(
        "--to",
        dest="target",
        metavar="URL",
        type=_postgres_url,
        help="postgresql://USER@HOST:PORT/DATABASE (default: $DATABASE_URL, else storage.url);"
        " the password is best left to DATABASE_URL, PGPASSWORD or ~/.pgpass",
    )
    move.add_argument(
        "--batch-size",
        metavar="ROWS",
        type=_positive,
        default=BATCH,
        help=f"rows copied per transaction (default {BATCH})",
    )


def _postgres_url(value: str) -> str:
    try:
        scheme = urlsplit(value).scheme
    except ValueError:
        scheme = ""
    if scheme not in POSTGRES_SCHEMES:
        raise argparse.ArgumentTypeError("must start with postgresql://")
    return value


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise argparse.ArgumentTypeError("a whole number of rows, at least 1")
    return number


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


async def migrate_store(args: argparse.Namespace, config: Config) -> int:
    """``bot migrate-store``: exit 0 when both sides count the same rows; 2 when there is no
    SQLite file or no PostgreSQL database to be had; 1 when the file is in use or damaged, the
    copy is refused or fails, or the counts differ."""
    path = str(args.source or config.storage.path)
    url = args.target or config.storage.postgres_url
    if url is None:
        _say(
            "bot migrate-store: no PostgreSQL database to copy into: pass --to"
            " postgresql://USER@HOST/DATABASE, or set DATABASE_URL"
        )
        return EXIT_USAGE
    try:
        check_free(path)  # before the slow checks: cheap refusals first
        pool = await open_pool(url, pool_size=1)
    except MigrationError as exc:
        _say(f"bot migrate-store: {exc}")
        return EXIT_USAGE if isinstance(exc, SourceMissing) else EXIT_FAILED
    except PostgresDatabaseError as exc:
        _say(f"bot migrate-store: {exc}")
        return EXIT_USAGE
    where = shown_url(url)
    _say(f"copying {path} into {where}")
    try:
        source = await Source.open(path)  # checked (the whole file is read) and migrated
    except (MigrationError, DatabaseError) as exc:
        await pool.close()
        _say(f"bot migrate-store: {exc}")
        return EXIT_FAILED
    try:
        async with pool.acquire() as db:
            return await _run(source, Target(db, where), args.batch_size, url)
    finally:
        await source.close()
        await pool.close()


async def _run(source: Source, target: Target, batch: int, url: str) -> int:
    started = time.monotonic()
    try:
        with shown("migrate-store", total=None, unit="row") as progress:
            migrated = await migrate(
                source, target, batch=batch, sized=progress.set_total, advance=progress.advance
            )
    except MigrationError as exc:
        _say(f"bot migrate-store: {exc}")
        return EXIT_FAILED
    except FAILURES as exc:
        _say(
            f"bot migrate-store: copying into {target.name} failed: {reason(exc, url)}; what was"
            " copied is kept: run bot migrate-store again to go on"
        )
        return EXIT_FAILED
    except asyncio.CancelledError:
        _say("bot migrate-store: interrupted; what was copied is kept: run it again to go on")
        raise
    seconds = time.monotonic() - started
    if migrated.copied:
        _say(f"copied {counted(migrated.copied, 'row')} in {seconds:.1f} s")
    else:
        _say(f"nothing to copy: {target.name} already holds everything in {source.path}")
    _print_counts(migrated)
    if migrated.mismatched:
        differ = ", ".join(
            f"{c.table} ({c.source:,} in SQLite, {c.target:,} in PostgreSQL)"
            for c in migrated.mismatched
        )
        _say(f"bot migrate-store: the counts differ: {differ}")
        return EXIT_FAILED
    _say(
        f"verified: every table holds as many rows in {target.name} as in {source.path}."
        " Point storage.url (or DATABASE_URL) at it and start the bot."
    )
    return EXIT_OK


def _print_counts(migrated: Migrated) -> None:
    width = max(len(c.table) for c in migrated.counts)
    print(f"{'table':<{width}}  {'sqlite':>12}  {'postgresql':>12}")
    for c in migrated.counts:
        mark = "" if c.source == c.target else "  differs"
        print(f"{c.table:<{width}}  {c.source:>12,}  {c.target:>12,}{mark}")
