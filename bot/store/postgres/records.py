"""Export and import of the PostgreSQL store in :mod:`bot.store.archive`'s record format:
the same records, the same checks and refusals as SQLite's, so that an export of either store
imports into the other."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import asyncpg

from bot.core.models import Conversation
from bot.store import archive, archive_settings
from bot.store.archive import _BY_TYPE, _CHUNK, _TABLES, ArchiveError, Imported, _values
from bot.store.postgres import search
from bot.store.postgres.connection import text

if TYPE_CHECKING:
    from bot.store.postgres.connection import Db

_CHANNEL_MESSAGES = "conversation IN (SELECT key FROM conversations WHERE channel_key = $1)"
_CHANNEL_PEOPLE = (
    "platform = $2 AND workspace = $3 AND user_id IN"
    " (SELECT author_id FROM messages WHERE role = 'user' AND conversation IN"
    " (SELECT key FROM conversations WHERE channel_key = $1))"
)
_CHANNEL_FILTER = {
    "conversations": "channel_key = $1",
    "messages": _CHANNEL_MESSAGES,
    "pins": "channel_key = $1",
    "summaries": _CHANNEL_MESSAGES,
    "profile_facts": _CHANNEL_PEOPLE,
    "profile_forgets": _CHANNEL_PEOPLE,
    "settings": "scope = $1 OR starts_with(scope, $1 || ':')",
    "setting_changes": "scope = $1 OR starts_with(scope, $1 || ':')",
}
_ORDER = {
    "conversations": "key",
    "profile_forgets": "platform, workspace, user_id",
    "settings": 'scope COLLATE "C", key COLLATE "C"',
}
# Columns whose NUL characters are replaced.
_TEXT = {"author_name", "content", "text", "value", "old", "new", "by_name"}
_IDENTITIES = ("messages", "pins", "summaries", "profile_facts", "setting_changes")


async def export_each(
    db: Db,
    *,
    channel_key: str | None,
    write: Callable[[list[dict[str, Any]]], None],
    sized: Callable[[int], None],
) -> int:
    """Every row of one channel (or of the whole database), from one snapshot."""
    params: list[str] = []
    if channel_key:
        channel = Conversation.from_key(channel_key)
        params = [channel_key, channel.platform, channel.workspace]
    written = 0
    async with db.transaction(isolation="repeatable_read", readonly=True):
        wheres = {}
        for table, _, _ in _TABLES:
            where = _CHANNEL_FILTER[table] if channel_key else ""
            used = [p for n, p in enumerate(params, 1) if f"${n}" in where]
            wheres[table] = (f" WHERE {where}" if where else "", used)
        total = 0
        for table, _, _ in _TABLES:
            where, used = wheres[table]
            total += int(await db.fetchval(f"SELECT COUNT(*) FROM {table}{where}", *used))  # noqa: S608
        sized(total)
        for table, kind, columns in _TABLES:
            where, used = wheres[table]
            order = _ORDER.get(table, "id")
            sql = f"SELECT {', '.join(columns)} FROM {table}{where} ORDER BY {order}"  # noqa: S608
            cursor = await db.cursor(sql, *used)
            while rows := await cursor.fetch(_CHUNK):
                write([{"type": kind, **dict(zip(columns, row, strict=True))} for row in rows])
                written += len(rows)
    return written


class _Clash(Exception):
    """A record is already in the database."""


async def _insert(db: Db, record: dict[str, Any], *, keep_id: bool) -> None:
    table, columns = _BY_TYPE[record["type"]]
    if not keep_id:
        columns = tuple(column for column in columns if column != "id")
    values = [
        text(v) if c in _TEXT and isinstance(v, str) else v
        for c, v in zip(columns, _values(record, columns), strict=True)
    ]
    marks = ", ".join(f"${n}" for n in range(1, len(columns) + 1))
    try:
        async with db.transaction():  # a savepoint: a refused row leaves the import usable
            await db.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",  # noqa: S608
                *values,
            )
    except asyncpg.UniqueViolationError:
        raise _Clash from None
    except (asyncpg.PostgresError, asyncpg.DataError, TypeError, ValueError) as exc:
        ident = record.get("id", record.get("key"))
        raise ArchiveError(f"{record['type']} {ident}: {exc}; nothing imported") from None


async def _import_conversation(db: Db, record: dict[str, Any]) -> None:
    """As SQLite's: a conversation a reset emptied takes the export's, generation moved on."""
    row = await db.fetchrow(
        "SELECT generation, EXISTS (SELECT 1 FROM messages WHERE conversation = $1)"
        " OR EXISTS (SELECT 1 FROM summaries WHERE conversation = $1)"
        " FROM conversations WHERE key = $1 FOR UPDATE",
        record["key"],
    )
    if row is None:
        await _insert(db, record, keep_id=True)
        return
    if row[1]:
        raise _Clash
    await db.execute(
        "UPDATE conversations SET generation = GREATEST(generation, $1) + 1, created_at = $2"
        " WHERE key = $3",
        int(record["generation"]),
        float(record["created_at"]),
        record["key"],
    )


async def _import_fact(
    db: Db, record: dict[str, Any], forgot_at: float | None
) -> Literal["written", "known", "forgotten"]:
    kept = await db.fetch(
        "SELECT text FROM profile_facts WHERE platform = $1 AND workspace = $2 AND user_id = $3",
        record["platform"],
        record["workspace"],
        record["user_id"],
    )
    body = text(record["text"]).casefold()
    if any(str(row[0]).casefold() == body for row in kept):
        return "known"
    if forgot_at is not None and archive._created_at(record) <= forgot_at:
        return "forgotten"
    taken = await db.fetchval("SELECT 1 FROM profile_facts WHERE id = $1", int(record["id"]))
    await _insert(db, record, keep_id=taken is None)
    return "written"


async def _import_forget(db: Db, record: dict[str, Any]) -> None:
    try:
        await db.execute(
            "INSERT INTO profile_forgets (platform, workspace, user_id, forgot_at)"
            " VALUES ($1, $2, $3, $4) ON CONFLICT (platform, workspace, user_id)"
            " DO UPDATE SET forgot_at = GREATEST(profile_forgets.forgot_at, excluded.forgot_at)",
            *_values(record, _BY_TYPE["profile_forget"][1]),
        )
    except (asyncpg.PostgresError, asyncpg.DataError, TypeError, ValueError) as exc:
        raise ArchiveError(f"profile_forget {record['user_id']}: {exc}; nothing imported") from None


async def _write_all(
    db: Db, records: list[dict[str, Any]], advance: Callable[[int], None]
) -> tuple[Imported, set[str]]:
    written = known = forgotten = 0
    touched: set[str] = set()
    forgot = {
        (str(r[0]), str(r[1]), str(r[2])): float(r[3])
        for r in await db.fetch(
            "SELECT platform, workspace, user_id, forgot_at FROM profile_forgets"
        )
    }
    settings = archive_settings.compare(records, *await _held_settings(db, records))
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
    advance(len(records) % _CHUNK)
    return Imported(written, known, forgotten, len(settings.skipped)), touched


async def _held_settings(
    db: Db, records: list[dict[str, Any]]
) -> tuple[dict[str, dict[str, str]], dict[int, archive_settings.Change]]:
    """What the database holds of the records' scopes and change ids."""
    scopes, ids = archive_settings.asked(records)
    settings: dict[str, dict[str, str]] = {}
    for scope, key, value in await db.fetch(
        "SELECT scope, key, value FROM settings WHERE scope = ANY($1::text[])", scopes
    ):
        settings.setdefault(scope, {})[key] = value
    changes = await db.fetch(
        f"SELECT id, {', '.join(archive_settings.CHANGE_COLUMNS)} FROM setting_changes"  # noqa: S608
        " WHERE id = ANY($1::bigint[])",
        ids,
    )
    return settings, {int(row[0]): tuple(row[1:]) for row in changes}


async def import_records(
    db: Db,
    records: list[dict[str, Any]],
    advance: Callable[[int], None],
    *,
    index: bool,
) -> Imported:
    """Insert the records in one transaction, ids kept (see
    :func:`bot.store.archive.import_records`); ``index``: the imported messages enter the
    search index in it."""
    try:
        async with db.transaction():
            imported, touched = await _write_all(db, records, advance)
            if index and touched:
                await search.catch_up(db, touched)
            for table in _IDENTITIES:  # new rows' ids follow the imported ones
                await db.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'),"  # noqa: S608
                    f" GREATEST((SELECT MAX(id) FROM {table}),"
                    f" nextval(pg_get_serial_sequence('{table}', 'id'))))"
                )
    except _Clash:
        raise ArchiveError(await archive.refusal(records, _holds(db), _owner_of(db))) from None
    return imported


def _holds(db: Db) -> Callable[[str], Any]:
    async def holds(key: str) -> bool:
        return bool(
            await db.fetchval(
                "SELECT EXISTS (SELECT 1 FROM messages WHERE conversation = $1)"
                " OR EXISTS (SELECT 1 FROM summaries WHERE conversation = $1)",
                key,
            )
        )

    return holds


def _owner_of(db: Db) -> Callable[[str, str, int], Any]:
    async def owner_of(table: str, owner: str, ident: int) -> str | None:
        value = await db.fetchval(f"SELECT {owner} FROM {table} WHERE id = $1", ident)  # noqa: S608
        return None if value is None else str(value)

    return owner_of
