"""People's profile facts (per person in a workspace) and when each last used ``/forget``."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from bot.core.models import FactSource, Person, Pin, ProfileFact
from bot.store.sqlite.connection import Connection
from bot.store.sqlite.rows import FACT_COLUMNS, fact

_PERSON = "platform = ? AND workspace = ? AND user_id = ?"


def _pins_and_profile(keys: int, *, facts: bool) -> str:
    """One query for a prompt's pins (of ``keys`` channel keys) and the speaker's facts, each
    part read in id order from its index and merged, not sorted (by id alone: ordering by the
    constant first column too would make SQLite sort each part)."""
    pins = (
        "SELECT 0, id, channel_key, text, tokens, author_name, created_at, author_id, NULL"
        " FROM pins WHERE channel_key = ?"
    )
    parts = [pins] * keys
    if facts:
        parts.append(f"SELECT 1, {FACT_COLUMNS} FROM profile_facts WHERE {_PERSON}")  # noqa: S608 (constant columns)
    return " UNION ALL ".join(parts) + " ORDER BY 2"


def _person(person: Person) -> tuple[str, str, str]:
    return (person.platform, person.workspace, person.user_id)


class Profiles(Connection):
    async def add_profile_fact(
        self, *, person: Person, text: str, tokens: int, source: FactSource
    ) -> ProfileFact:
        created_at = time.time()
        async with self._writing():
            row = await self._db.execute_insert(
                "INSERT INTO profile_facts (platform, workspace, user_id, text, tokens, source,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*_person(person), text, tokens, source.value, created_at),
            )
        assert row is not None
        return ProfileFact(int(row[0]), person, text, tokens, source, created_at)

    async def profile_facts(self, *, person: Person) -> Sequence[ProfileFact]:
        rows = await self._rows(
            f"SELECT {FACT_COLUMNS} FROM profile_facts"  # noqa: S608 (constant columns)
            f" WHERE {_PERSON} ORDER BY id",
            _person(person),
        )
        return [fact(row) for row in rows]

    async def pins_and_profile(
        self, *, channel_keys: Sequence[str], person: Person | None
    ) -> tuple[Sequence[Pin], Sequence[ProfileFact]]:
        # One query for both: a prompt needs them together, and most people have no facts.
        sql = _pins_and_profile(len(channel_keys), facts=person is not None)
        rows = await self._rows(sql, (*channel_keys, *(_person(person) if person else ())))
        pins = [Pin(*row[1:8]) for row in rows if row[0] == 0]
        facts = [fact(row[1:]) for row in rows if row[0] == 1]
        return pins, facts

    async def remove_profile_facts(self, *, person: Person, fact_id: int | None) -> int:
        params: tuple[Any, ...] = _person(person)
        async with self._transaction():
            cursor = await self._db.execute(
                f"DELETE FROM profile_facts WHERE {_PERSON}"  # noqa: S608 (constant text)
                + (" AND id = ?" if fact_id is not None else ""),
                (*params, fact_id) if fact_id is not None else params,
            )
            removed = cursor.rowcount
            if removed:
                await self._db.execute(
                    "INSERT INTO profile_forgets (platform, workspace, user_id, forgot_at)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (platform, workspace, user_id)"
                    " DO UPDATE SET forgot_at = excluded.forgot_at",
                    (*params, time.time()),
                )
        return removed

    async def profile_forgot_at(self, *, person: Person) -> float | None:
        rows = await self._rows(
            f"SELECT forgot_at FROM profile_forgets WHERE {_PERSON}",  # noqa: S608
            _person(person),
        )
        return next((float(row[0]) for row in rows), None)
