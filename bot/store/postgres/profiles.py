"""People's profile facts (per person in a workspace) and when each last used ``/forget``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bot.core.models import FactSource, Person, Pin, ProfileFact
from bot.store.postgres.connection import Connection, text
from bot.store.postgres.pins import PINS_OF
from bot.store.sqlite.rows import FACT_COLUMNS, fact

_PERSON = "platform = $1 AND workspace = $2 AND user_id = $3"
FACTS = f"SELECT {FACT_COLUMNS} FROM profile_facts WHERE {_PERSON} ORDER BY id"  # noqa: S608


def _person(person: Person) -> tuple[str, str, str]:
    return (person.platform, person.workspace, person.user_id)


class Profiles(Connection):
    async def add_profile_fact(
        self, *, person: Person, text: str, tokens: int, source: FactSource
    ) -> ProfileFact:
        created_at = time.time()
        body = _clean(text)
        async with self._writing():
            new_id = await self._pool.fetchval(
                "INSERT INTO profile_facts (platform, workspace, user_id, text, tokens, source,"
                " created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id",
                *_person(person),
                body,
                tokens,
                source.value,
                created_at,
            )
        return ProfileFact(int(new_id), person, body, tokens, source, created_at)

    async def profile_facts(self, *, person: Person) -> Sequence[ProfileFact]:
        rows = await self._rows(FACTS, *_person(person))
        return [fact(row) for row in rows]

    async def pins_and_profile(
        self, *, channel_keys: Sequence[str], person: Person | None
    ) -> tuple[Sequence[Pin], Sequence[ProfileFact]]:
        async with self._pool.acquire() as db:
            pins = await db.fetch(PINS_OF, list(channel_keys))
            facts = await db.fetch(FACTS, *_person(person)) if person is not None else []
        return [Pin(*row) for row in pins], [fact(row) for row in facts]

    async def remove_profile_facts(self, *, person: Person, fact_id: int | None) -> int:
        async with self._transaction() as db:
            status = await db.execute(
                f"DELETE FROM profile_facts WHERE {_PERSON}"  # noqa: S608 (constant text)
                " AND ($4::bigint IS NULL OR id = $4)",
                *_person(person),
                fact_id,
            )
            removed = int(status.rsplit(" ", 1)[-1])
            if removed:
                await db.execute(
                    "INSERT INTO profile_forgets (platform, workspace, user_id, forgot_at)"
                    " VALUES ($1, $2, $3, $4) ON CONFLICT (platform, workspace, user_id)"
                    " DO UPDATE SET forgot_at = excluded.forgot_at",
                    *_person(person),
                    time.time(),
                )
        return removed

    async def profile_forgot_at(self, *, person: Person) -> float | None:
        value = await self._pool.fetchval(
            f"SELECT forgot_at FROM profile_forgets WHERE {_PERSON}",  # noqa: S608
            *_person(person),
        )
        return float(value) if value is not None else None


_clean = text  # ``add_profile_fact``'s parameter named ``text`` hides the function
