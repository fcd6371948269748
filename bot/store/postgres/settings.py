"""Settings set per channel or thread (``/settings``), and their changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.core.ports.settings import SettingChange
from bot.store.postgres.connection import Connection, text

CHANGE_COLUMNS = "scope, key, old, new, by_id, by_name, at"


class Settings(Connection):
    async def settings_of(self, *, scopes: Sequence[str]) -> Mapping[str, Mapping[str, str]]:
        rows = await self._rows(
            "SELECT scope, key, value FROM settings WHERE scope = ANY($1::text[])", list(scopes)
        )
        found: dict[str, dict[str, str]] = {}
        for scope, key, value in rows:
            found.setdefault(scope, {})[key] = value
        return found

    async def change_setting(
        self, *, scope: str, key: str, value: str | None, by_id: str, by_name: str, at: float
    ) -> SettingChange:
        """Read, write and log in one transaction holding the scope's lock, so that of two
        processes changing it at once, the second reads what the first wrote."""
        value = None if value is None else text(value)
        by_name = text(by_name)
        async with self._transaction() as db:
            await db.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "settings:" + scope
            )
            old = await db.fetchval(
                "SELECT value FROM settings WHERE scope = $1 AND key = $2", scope, key
            )
            change = SettingChange(scope, key, old, value, by_id, by_name, at)
            if old == value:
                return change
            if value is None:
                await db.execute("DELETE FROM settings WHERE scope = $1 AND key = $2", scope, key)
            else:
                await db.execute(
                    "INSERT INTO settings (scope, key, value, by_id, by_name, at)"
                    " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (scope, key) DO UPDATE SET"
                    " value = excluded.value, by_id = excluded.by_id,"
                    " by_name = excluded.by_name, at = excluded.at",
                    scope, key, value, by_id, by_name, at,
                )  # fmt: skip
            await db.execute(
                f"INSERT INTO setting_changes ({CHANGE_COLUMNS})"  # noqa: S608
                " VALUES ($1, $2, $3, $4, $5, $6, $7)",
                scope, key, old, value, by_id, by_name, at,
            )  # fmt: skip
        return change

    async def setting_changes(self, *, scope: str, limit: int) -> Sequence[SettingChange]:
        rows = await self._rows(
            f"SELECT {CHANGE_COLUMNS} FROM setting_changes"  # noqa: S608
            " WHERE scope = $1 ORDER BY id DESC LIMIT $2",
            scope,
            limit,
        )
        return [SettingChange(*row) for row in rows]

    async def scopes_where(self, *, prefix: str, key: str, value: str) -> Sequence[str]:
        rows = await self._rows(
            "SELECT scope FROM settings WHERE key = $1 AND value = $2"
            ' AND starts_with(scope, $3) ORDER BY scope COLLATE "C"',
            key,
            text(value),
            prefix,
        )
        return [str(row[0]) for row in rows]
