"""JSON Lines export and import of the SQLite store (``bot export``, ``bot import``).

An export is one JSON object a line, each with a ``type``: ``conversation``, ``message``,
``pin``, ``summary``, ``profile_fact``, ``profile_forget``, ``setting`` or ``setting_change``,
and the row's columns by name.
Ids are kept, so that turns (``reply_to``), summaries' ranges and pin numbers mean the same
after an import: a round trip is exact.

Profiles belong to a person in a workspace, not to a channel: a channel's export carries the
profiles (facts, and when each person last used ``/forget``) of the people who wrote in it,
in its workspace. On import, a fact its person's profile already holds (the same text, as
``/remember`` compares) is skipped rather than refused, and so is a fact written before that
person's last ``/forget`` in the database imported into (deleted there, or cleared with the
rest of their profile: an import does not undo a ``/forget``); a fact whose id is taken gets a
new one, and the later of two ``/forget`` times is kept. Settings set in chat go with their
channel and its threads, and are skipped where the same are here already
(:mod:`bot.store.archive_settings`); every other record must be new.

A message from an export older than importance (no ``importance`` or ``marks``) is scored as
the bot scores a message it stores, with no 📌 marks. Embedding vectors are not exported:
with search by meaning on, ``bot run`` embeds the messages that lack one; recall's keyword
index is written in the import's transaction (or when the bot next opens the database with
recall on).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import aiosqlite

from bot.core.memory.importance import score
from bot.core.models import Conversation
from bot.store import archive_settings

# Table, record type, columns.
_TABLES: tuple[tuple[str, str, tuple[str, ...]], ...] = tuple(
    (table, kind, tuple(columns.split()))
    for table, kind, columns in (
        ("conversations", "conversation", "key channel_key generation created_at"),
        (
            "messages",
            "message",
            "id conversation reply_to role author_id author_name content tokens"
            " platform_message_id created_at importance marks",
        ),
        ("pins", "pin", "id channel_key text tokens author_id author_name created_at"),
        (
            "summaries",
            "summary",
            "id conversation content tokens covers_through_turn message_count first_message_id"
            " last_message_id compactions rebuilt model created_at",
        ),
        (
            "profile_facts",
            "profile_fact",
            "id platform workspace user_id text tokens source created_at",
        ),
        ("profile_forgets", "profile_forget", "platform workspace user_id forgot_at"),
        *archive_settings.TABLES,
    )
)
_BY_TYPE = {kind: (table, columns) for table, kind, columns in _TABLES}
# Columns an older export may lack (it was written before they existed).
_OPTIONAL = {"message": ("importance", "marks")}
_CHANNEL_MESSAGES = "conversation IN (SELECT key FROM conversations WHERE channel_key = :channel)"
# The people whose profiles go with a channel: who wrote in it, in its workspace.
_CHANNEL_PEOPLE = (
    "platform = :platform AND workspace = :workspace AND user_id IN"
    " (SELECT author_id FROM messages WHERE role = 'user' AND conversation IN"
    " (SELECT key FROM conversations WHERE channel_key = :channel))"
)
_CHANNEL_SCOPES = "scope = :channel OR substr(scope, 1, length(:channel) + 1) = :channel || ':'"
# Which rows belong to a channel: the channel's own conversation, its threads, its pins, the
# profiles of its people, its and its threads' settings.
_CHANNEL_FILTER = {
    "conversations": "channel_key = :channel",
    "messages": _CHANNEL_MESSAGES,
    "pins": "channel_key = :channel",
    "summaries": _CHANNEL_MESSAGES,
    "profile_facts": _CHANNEL_PEOPLE,
    "profile_forgets": _CHANNEL_PEOPLE,
    "settings": _CHANNEL_SCOPES,
    "setting_changes": _CHANNEL_SCOPES,
}
_ORDER = {"settings": "scope, key"}  # else rowid


class ArchiveError(Exception):
    """An export cannot be read or imported; the message says why."""


@dataclass(frozen=True)
class Imported:
    records: int
    """Records written."""
    known_facts: int
    """Profile facts skipped: their person's profile already held the same text."""
    forgotten_facts: int
    """Profile facts skipped: written before their person's last ``/forget`` here."""
    known_settings: int = 0
    """Settings and setting changes skipped: the same were here already."""


_CHUNK = 1000  # rows read (and written out) at a time


async def export_each(
    db: aiosqlite.Connection,
    *,
    channel_key: str | None,
    write: Callable[[list[dict[str, Any]]], None],
    sized: Callable[[int], None] = lambda total: None,
) -> int:
    """Every row of one channel (its conversation and threads, and the profiles of the people
    who wrote in it), or of the whole database, handed to ``write`` a chunk at a time, from
    one snapshot; ``sized`` is told the count first. Returns the count."""
    params: dict[str, str] = {}
    if channel_key:
        channel = Conversation.from_key(channel_key)
        params = {"channel": channel_key, "platform": channel.platform}
        params["workspace"] = channel.workspace
    written = 0
    await db.execute("BEGIN")  # one snapshot for every table
    try:
        wheres = {
            table: f" WHERE {_CHANNEL_FILTER[table]}" if channel_key else ""
            for table, _, _ in _TABLES
        }
        total = 0
        for table, _, _ in _TABLES:
            rows = await db.execute_fetchall(
                f"SELECT COUNT(*) FROM {table}{wheres[table]}",  # noqa: S608
                params,
            )
            total += int(next(iter(rows))[0])
        sized(total)
        for table, kind, columns in _TABLES:
            async with db.execute(
                f"SELECT {', '.join(columns)} FROM {table}{wheres[table]}"  # noqa: S608
                f" ORDER BY {_ORDER.get(table, 'rowid')}",
                params,
            ) as cursor:
                while rows := list(await cursor.fetchmany(_CHUNK)):
                    write([{"type": kind, **dict(zip(columns, row, strict=True))} for row in rows])
                    written += len(rows)
    finally:
        await db.execute("COMMIT")
    return written


async def export_records(
    db: aiosqlite.Connection, *, channel_key: str | None
) -> list[dict[str, Any]]:
    """:func:`export_each`'s records, as one list."""
    records: list[dict[str, Any]] = []
    await export_each(db, channel_key=channel_key, write=records.extend)
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
        kind = record["type"]
        _, columns = _BY_TYPE[kind]
        optional = _OPTIONAL.get(kind, ())
        missing = [c for c in columns if c not in record and c not in optional]
        if missing:
            raise ArchiveError(f"line {number}: {kind} lacks {', '.join(missing)}")
        if kind == "profile_fact" and not isinstance(record["text"], str):
            raise ArchiveError(f"line {number}: profile_fact's text is not text")
        if kind in archive_settings.KINDS and (wrong := archive_settings.malformed(record)):
            raise ArchiveError(f"line {number}: {wrong}")
        records.append(record)
    return records


def _values(record: dict[str, Any], columns: tuple[str, ...]) -> list[Any]:
    """The record's columns; a message without importance is scored as the bot scores a
    message it stores (people's messages only), and has no 📌 marks."""
    values = dict(record)
    if record["type"] == "message":
        if "importance" not in values:
            content = values["content"]
            user = values["role"] == "user" and isinstance(content, str)
            values["importance"] = score(content) if user else 0
        values.setdefault("marks", 0)
    return [values[column] for column in columns]


async def _insert(db: aiosqlite.Connection, record: dict[str, Any], *, keep_id: bool) -> None:
    table, columns = _BY_TYPE[record["type"]]
    if not keep_id:
        columns = tuple(column for column in columns if column != "id")
    try:
        await db.execute(
            f"INSERT INTO {table} ({', '.join(columns)})"  # noqa: S608 (constant names)
            f" VALUES ({', '.join('?' for _ in columns)})",
            _values(record, columns),
        )
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError) as exc:
        ident = record.get("id", record.get("key"))
        if "UNIQUE" in str(exc):
            raise _Clash from None
        raise ArchiveError(f"{record['type']} {ident}: {exc}; nothing imported") from None


class _Clash(Exception):
    """A record is already in the database (``_refusal`` says what to do)."""


async def _import_conversation(db: aiosqlite.Connection, record: dict[str, Any]) -> None:
    """A conversation, unless it is here already; one that is here but holds no messages or
    summary (a reset left it) takes the export's, its generation moved past both."""
    held = await db.execute_fetchall(
        "SELECT generation, EXISTS (SELECT 1 FROM messages WHERE conversation = :key)"
        " OR EXISTS (SELECT 1 FROM summaries WHERE conversation = :key)"
        " FROM conversations WHERE key = :key",
        {"key": record["key"]},
    )
    row = next(iter(held), None)
    if row is None:
        await _insert(db, record, keep_id=True)
        return
    if row[1]:
        raise _Clash
    await db.execute(
        "UPDATE conversations SET generation = MAX(generation, ?) + 1, created_at = ?"
        " WHERE key = ?",
        (record["generation"], record["created_at"], record["key"]),
    )


async def _refusal(db: aiosqlite.Connection, records: list[dict[str, Any]]) -> str:
    async def holds(key: str) -> bool:
        rows = await db.execute_fetchall(
            "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation = :key)"
            " OR EXISTS (SELECT 1 FROM summaries WHERE conversation = :key)",
            {"key": key},
        )
        return bool(next(iter(rows))[0])

    async def owner_of(table: str, owner: str, ident: int) -> str | None:
        rows = await db.execute_fetchall(
            f"SELECT {owner} FROM {table} WHERE id = ?",  # noqa: S608 (constant names)
            (ident,),
        )
        return next((str(row[0]) for row in rows), None)

    return await refusal(records, holds, owner_of)


async def refusal(
    records: list[dict[str, Any]],
    holds: Callable[[str], Awaitable[bool]],
    owner_of: Callable[[str, str, int], Awaitable[str | None]],
) -> str:
    """What to do about records already in the database: the ``bot reset`` that makes room
    for them, or, when their ids are another conversation's, another database. ``holds``:
    whether a conversation holds messages or a summary; ``owner_of(table, column, id)``: the
    conversation (or channel) a row of that id belongs to, if any."""
    keys = {str(r["conversation"]) for r in records if r["type"] in ("message", "summary")}
    keys |= {str(r["key"]) for r in records if r["type"] == "conversation"}
    held: set[str] = {key for key in keys if await holds(key)}
    pinned: set[str] = set()
    for record in records:
        if record["type"] not in ("message", "summary", "pin"):
            continue
        table, _ = _BY_TYPE[record["type"]]
        owner = "channel_key" if record["type"] == "pin" else "conversation"
        here = await owner_of(table, owner, int(record["id"]))
        if here is None:
            continue
        if record["type"] == "pin" and here == record["channel_key"]:
            pinned.add(here)
            continue
        if here in held:
            continue
        return (
            f"{record['type']} {record['id']} is another conversation's here ({here});"
            " nothing imported (an export keeps its ids: import it into the database it"
            " came from, or into a new one)"
        )
    channels = sorted({Conversation.from_key(key).channel_key for key in held} | pinned)
    commands = []
    for channel in channels:
        threads = any(key != channel and key.startswith(channel + ":") for key in held)
        flags = (" --threads" if threads else "") + (" --pins" if channel in pinned else "")
        commands.append(f"bot reset --channel {channel}{flags}")
    if len(commands) > 3:
        return (
            f"{len(channels)} of its channels are here already; nothing imported (import a"
            " whole database into a new one, or restore a backup)"
        )
    return (
        f"{', '.join(channels)} already here; nothing imported. To replace what is here with"
        f" the file's, run {' and '.join(f'`{c}`' for c in commands)}, then import again"
        " (or import into another database)"
    )


async def _import_fact(
    db: aiosqlite.Connection, record: dict[str, Any], forgot_at: float | None
) -> Literal["written", "known", "forgotten"]:
    """A profile fact, unless its person's profile holds the same text (compared as
    ``/remember`` does) or it was written before the person's last ``/forget`` here
    (``forgot_at``); under a new id when its own is another fact's."""
    person = (record["platform"], record["workspace"], record["user_id"])
    kept = await db.execute_fetchall(
        "SELECT text FROM profile_facts WHERE platform = ? AND workspace = ? AND user_id = ?",
        person,
    )
    text = record["text"].casefold()
    if any(str(row[0]).casefold() == text for row in kept):
        return "known"
    if forgot_at is not None and _created_at(record) <= forgot_at:
        return "forgotten"
    taken = await db.execute_fetchall("SELECT 1 FROM profile_facts WHERE id = ?", (record["id"],))
    await _insert(db, record, keep_id=not taken)
    return "written"


async def _import_forget(db: aiosqlite.Connection, record: dict[str, Any]) -> None:
    """When the person last used ``/forget``: the later of the two times."""
    try:
        await db.execute(
            "INSERT INTO profile_forgets (platform, workspace, user_id, forgot_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (platform, workspace, user_id)"
            " DO UPDATE SET forgot_at = MAX(forgot_at, excluded.forgot_at)",
            _values(record, _BY_TYPE["profile_forget"][1]),
        )
    except (sqlite3.IntegrityError, sqlite3.ProgrammingError) as exc:
        raise ArchiveError(f"profile_forget {record['user_id']}: {exc}; nothing imported") from None


async def import_records(
    db: aiosqlite.Connection,
    records: list[dict[str, Any]],
    advance: Callable[[int], None] = lambda count: None,
    *,
    index: Callable[[aiosqlite.Connection, Iterable[str]], Awaitable[int]] | None = None,
) -> Imported:
    """Insert the records in one transaction, ids kept; nothing is written when any of them
    is already there (import into a database without that channel, e.g. after a reset),
    except profiles, which are merged (the module's docstring says how). ``index``: enters
    the imported conversations' messages in the search index, in the same transaction."""
    written = known = forgotten = 0
    touched: set[str] = set()
    await db.execute("BEGIN IMMEDIATE")
    try:
        # As this database had them before the import: the archive's own /forget times are
        # the source's, and its facts outlived them there.
        forgot = {
            (str(row[0]), str(row[1]), str(row[2])): float(row[3])
            for row in await db.execute_fetchall(
                "SELECT platform, workspace, user_id, forgot_at FROM profile_forgets"
            )
        }
        settings = archive_settings.compare(
            records, *await archive_settings.held_in_sqlite(db, records)
        )
        if settings.refusal is not None:
            raise ArchiveError(settings.refusal)
        for number, record in enumerate(records, 1):
            if number % _CHUNK == 0:
                advance(_CHUNK)
            if number - 1 in settings.skipped:
                continue
            if record["type"] == "profile_fact":
                person = (record["platform"], record["workspace"], record["user_id"])
                outcome = await _import_fact(db, record, forgot.get(person))
                known += outcome == "known"
                forgotten += outcome == "forgotten"
                if outcome != "written":
                    continue
            elif record["type"] == "profile_forget":
                await _import_forget(db, record)
            elif record["type"] == "conversation":
                await _import_conversation(db, record)
            else:
                await _insert(db, record, keep_id=True)
                if record["type"] == "message":
                    touched.add(str(record["conversation"]))
            written += 1
        if index is not None and touched:
            await index(db, touched)
        advance(len(records) % _CHUNK)
    except _Clash:
        await db.execute("ROLLBACK")
        raise ArchiveError(await _refusal(db, records)) from None
    except BaseException:
        await db.execute("ROLLBACK")
        raise
    await db.execute("COMMIT")
    return Imported(written, known, forgotten, len(settings.skipped))


def _created_at(record: dict[str, Any]) -> float:
    try:
        return float(record["created_at"])
    except (TypeError, ValueError):
        raise ArchiveError(
            f"profile_fact {record.get('id')}: created_at is not a time; nothing imported"
        ) from None
