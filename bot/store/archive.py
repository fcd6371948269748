"""Backups and JSON Lines export/import of the SQLite store (``bot backup``, ``bot export``,
``bot import``).

An export is one JSON object a line, each with a ``type``: ``conversation``, ``message``,
``pin`` or ``summary``, and the row's columns by name. Ids are kept, so that turns
(``reply_to``), summaries' ranges and pin numbers mean the same after an import: a round trip
is exact.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import aiosqlite

# Table, record type, columns.
_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (table, kind, tuple(columns.split()))
    for table, kind, columns in (
        ("conversations", "conversation", "key channel_key generation created_at"),
        (
            "messages",
            "message",
            "id conversation reply_to role author_id author_name content tokens"
            " platform_message_id created_at",
        ),
        ("pins", "pin", "id channel_key text tokens author_id author_name created_at"),
        (
            "summaries",
            "summary",
            "id conversation content tokens covers_through_turn message_count first_message_id"
            " last_message_id compactions rebuilt model created_at",
        ),
    )
)
_BY_TYPE = {kind: (table, columns) for table, kind, columns in _TABLES}
# Which rows belong to a channel: the channel's own conversation, its threads, its pins.
_CHANNEL_FILTER = {
    "conversations": "channel_key = :channel",
    "messages": "conversation IN (SELECT key FROM conversations WHERE channel_key = :channel)",
    "pins": "channel_key = :channel",
    "summaries": "conversation IN (SELECT key FROM conversations WHERE channel_key = :channel)",
}


class ArchiveError(Exception):
    """An export cannot be read or imported; the message says why."""


async def backup(db: aiosqlite.Connection, target: Path) -> None:
    """A consistent copy of the live database at ``target`` (SQLite's online backup API),
    written beside it and renamed into place, so ``target`` is never half-written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    copy = sqlite3.connect(partial, check_same_thread=False)
    try:
        await db.backup(copy)
        copy.execute("PRAGMA journal_mode = DELETE")
    finally:
        copy.close()
    os.replace(partial, target)


async def export_records(
    db: aiosqlite.Connection, *, channel_key: str | None
) -> list[dict[str, Any]]:
    """Every row of one channel (its conversation and threads), or of the whole database."""
    records: list[dict[str, Any]] = []
    await db.execute("BEGIN")  # one snapshot for every table
    try:
        for table, kind, columns in _TABLES:
            where = f" WHERE {_CHANNEL_FILTER[table]}" if channel_key else ""
            rows = await db.execute_fetchall(
                f"SELECT {', '.join(columns)} FROM {table}{where} ORDER BY rowid",  # noqa: S608
                {"channel": channel_key} if channel_key else {},
            )
            records.extend({"type": kind, **dict(zip(columns, row, strict=True))} for row in rows)
    finally:
        await db.execute("COMMIT")
    return records


def dump_lines(records: Iterable[dict[str, Any]]) -> Iterator[str]:
    for record in records:
        yield json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n"


def parse_lines(lines: Iterable[str]) -> list[dict[str, Any]]:
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ArchiveError(f"line {number}: not JSON: {exc.msg}") from None
        if not isinstance(record, dict) or record.get("type") not in _BY_TYPE:
            raise ArchiveError(f"line {number}: not an export record (no known 'type')")
        _, columns = _BY_TYPE[record["type"]]
        missing = [column for column in columns if column not in record]
        if missing:
            raise ArchiveError(f"line {number}: {record['type']} lacks {', '.join(missing)}")
        records.append(record)
    return records


async def import_records(db: aiosqlite.Connection, records: list[dict[str, Any]]) -> int:
    """Insert the records in one transaction, ids kept; nothing is written when any of them
    is already there (import into a database without that channel, e.g. after a reset)."""
    await db.execute("BEGIN IMMEDIATE")
    try:
        for record in records:
            table, columns = _BY_TYPE[record["type"]]
            try:
                await db.execute(
                    f"INSERT INTO {table} ({', '.join(columns)})"  # noqa: S608 (constant names)
                    f" VALUES ({', '.join('?' for _ in columns)})",
                    [record[column] for column in columns],
                )
            except sqlite3.IntegrityError:
                ident = record.get("id", record.get("key"))
                raise ArchiveError(
                    f"{record['type']} {ident} is already in the database; nothing imported"
                    " (reset that channel first, or import into another database)"
                ) from None
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
    return len(records)
