"""Settings in an export: the ``setting`` and ``setting_change`` records, which belong to a
channel, and what an import does with those the database holds already.

A channel's export carries the settings and changes of the channel and of its threads. A
scope's settings are its channel's configuration, which a reset keeps, so an import skips those
of a scope whose settings here are exactly the file's (a channel restored after
``bot reset``), writes those of a scope that has none here, and refuses a scope whose settings
here differ. Changes keep their ids, as messages do: one whose id holds the same change here is
skipped, one whose id holds another is refused (the file came from another database).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiosqlite

TABLES: tuple[tuple[str, str, str], ...] = (
    ("settings", "setting", "scope key value by_id by_name at"),
    ("setting_changes", "setting_change", "id scope key old new by_id by_name at"),
)
"""Table, record type, columns."""
CHANGE_COLUMNS = ("scope", "key", "old", "new", "by_id", "by_name", "at")
KINDS = ("setting", "setting_change")
_NOTHING = "nothing imported"

Change = tuple[Any, ...]
"""A change as :data:`CHANGE_COLUMNS` (its id aside)."""


def in_channel(scope: str, channel_key: str) -> bool:
    """Whether ``scope`` is the channel's or one of its threads'."""
    return scope == channel_key or scope.startswith(channel_key + ":")


def malformed(record: dict[str, Any]) -> str | None:
    """What is wrong with a setting's or a change's values, if anything."""
    kind = record["type"]
    texts = ["scope", "key", "by_id", "by_name"] + (["value"] if kind == "setting" else [])
    if kind == "setting_change" and type(record["id"]) is not int:
        return f"{kind}'s id is not a whole number"
    if bad := [c for c in texts if not isinstance(record[c], str)]:
        return f"{kind}'s {bad[0]} is not text"
    if kind == "setting_change" and any(
        record[c] is not None and not isinstance(record[c], str) for c in ("old", "new")
    ):
        return f"{kind}'s old or new value is neither text nor null"
    if type(record["at"]) not in (int, float):
        return f"{kind}'s at is not a time"
    return None


def asked(records: Iterable[dict[str, Any]]) -> tuple[list[str], list[int]]:
    """The scopes the records' settings and changes are in, and the changes' ids: what an
    import reads of the database for :func:`compare`."""
    scopes = {str(r["scope"]) for r in records if r["type"] in KINDS}
    ids = {int(r["id"]) for r in records if r["type"] == "setting_change"}
    return sorted(scopes), sorted(ids)


@dataclass
class Here:
    """What an import does with the file's settings and changes."""

    skipped: set[int] = field(default_factory=set)
    """The positions in the records of those already here."""
    refusal: str | None = None
    """Why nothing may be imported, if the database holds others."""


def compare(
    records: list[dict[str, Any]],
    settings: Mapping[str, Mapping[str, str]],
    changes: Mapping[int, Change],
) -> Here:
    """The records' settings and changes against what the database holds of them
    (``settings``: the scopes' values here; ``changes``: the changes here, by id)."""
    ours: dict[str, dict[str, str]] = {}
    where: dict[str, list[int]] = {}
    seen: set[int] = set()
    here = Here()
    for number, record in enumerate(records):
        if record["type"] not in KINDS:
            continue
        scope = str(record["scope"])
        values = ours.setdefault(scope, {})
        if record["type"] == "setting":
            if record["key"] in values:
                return Here(
                    refusal=f"setting {record['key']} of {scope} is in the file twice; {_NOTHING}"
                )
            values[record["key"]] = record["value"]
            where.setdefault(scope, []).append(number)
            continue
        ident = int(record["id"])
        if ident in seen:
            return Here(refusal=f"setting_change {ident} is in the file twice; {_NOTHING}")
        seen.add(ident)
        held = changes.get(ident)
        if held is not None and held != tuple(record[c] for c in CHANGE_COLUMNS):
            return Here(refusal=_taken(ident, held[0]))
        if held is not None:
            here.skipped.add(number)
    for scope, values in ours.items():
        held_values = settings.get(scope) or {}
        if held_values and held_values != values:
            return Here(refusal=_differ(scope, held_values, values))
        if held_values:
            here.skipped.update(where.get(scope, ()))
    return here


def _taken(ident: int, scope: str) -> str:
    return (
        f"setting_change {ident} is another change here (of {scope}); nothing imported (an"
        " export keeps its ids: import it into the database it came from, or into a new one)"
    )


def _differ(scope: str, here: Mapping[str, str], there: Mapping[str, str]) -> str:
    key = min(k for k in {*here, *there} if here.get(k) != there.get(k))
    return (
        f"{scope} has other settings here ({key}: {_shown(here.get(key))} here,"
        f" {_shown(there.get(key))} in the file); nothing imported (change them here to the"
        " file's with /settings, or import into another database)"
    )


def _shown(value: str | None) -> str:
    return "not set" if value is None else json.dumps(value, ensure_ascii=False)


async def held_in_sqlite(
    db: aiosqlite.Connection, records: list[dict[str, Any]]
) -> tuple[dict[str, dict[str, str]], dict[int, Change]]:
    """What the SQLite database holds of the records' scopes and change ids."""
    scopes, ids = asked(records)
    settings: dict[str, dict[str, str]] = {}
    if not scopes:
        return settings, {}
    rows = await db.execute_fetchall(
        "SELECT scope, key, value FROM settings WHERE scope IN (SELECT value FROM json_each(?))",
        (json.dumps(scopes),),
    )
    for scope, key, value in rows:
        settings.setdefault(scope, {})[key] = value
    rows = await db.execute_fetchall(
        f"SELECT id, {', '.join(CHANGE_COLUMNS)} FROM setting_changes"  # noqa: S608
        " WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps(ids),),
    )
    return settings, {int(row[0]): tuple(row[1:]) for row in rows}
