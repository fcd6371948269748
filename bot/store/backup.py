"""Backups of the SQLite store (``bot backup``): a consistent copy taken while the bot runs,
and how a file that cannot be written is named."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import aiosqlite

_BACKUP_STEP = 256  # pages copied at a time, so that progress can be shown


class BackupError(Exception):
    """A backup cannot be written where it was asked for; the message says why."""


class _Restarted(Exception):
    """Another connection wrote while a stepped backup ran: SQLite started it over."""


def _watch(pages: Callable[[int, int], None]) -> Callable[[int, int, int], None]:
    """SQLite's backup callback: pages done and total; a restart (the pages left grow)
    ends the stepped copy."""
    least: list[int] = []

    def step(status: int, remaining: int, total: int) -> None:
        if least and remaining >= least[0]:
            raise _Restarted
        least[:] = [remaining]
        pages(total - remaining, total)

    return step


async def backup(
    db: aiosqlite.Connection,
    target: Path,
    pages: Callable[[int, int], None] = lambda done, total: None,
) -> None:
    """A consistent copy of the live database at ``target`` (SQLite's online backup API),
    written beside it and renamed into place, so ``target`` is never half-written; on
    failure nothing is left behind. ``pages`` is told the pages copied and the total after
    each step (from another thread); when another process writes meanwhile, the rest is
    copied in one step."""
    partial = _partial_for(target)
    try:
        partial.unlink(missing_ok=True)
        copy = sqlite3.connect(partial, check_same_thread=False)
        try:
            try:
                await db.backup(copy, pages=_BACKUP_STEP, progress=_watch(pages))
            except _Restarted:
                await db.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")
        finally:
            copy.close()
        os.replace(partial, target)
    except (OSError, sqlite3.Error) as exc:
        raise BackupError(f"cannot write {target}: {os_reason(exc, target)}") from None
    finally:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _partial_for(target: Path) -> Path:
    """Where the copy is written before it is renamed to ``target``, its folder made."""
    if target.is_dir():
        raise BackupError(f"{target} is a folder: name the file, e.g. {target / 'bot.sqlite3'}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BackupError(
            f"cannot create the folder {target.parent}: {os_reason(exc, target.parent)}"
        ) from None
    return target.with_name(target.name + ".partial")


def os_reason(exc: BaseException, path: object = None) -> str:
    """What went wrong with ``path``, naming the path at fault when it is another one
    (``FileExistsError`` from ``mkdir``: a file is where a folder must be)."""
    culprit = getattr(exc, "filename", None)
    if isinstance(exc, FileExistsError) and culprit:
        return f"{culprit} is a file, not a folder"
    if isinstance(exc, OSError) and exc.strerror:
        other = culprit is not None and str(culprit) != str(path)
        return f"{exc.strerror}: {culprit}" if other else exc.strerror
    return str(exc)
