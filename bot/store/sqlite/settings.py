"""Settings set per channel or thread (``/settings``), and their changes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.core.ports.settings import SettingChange
from bot.store.sqlite.connection import Connection

CHANGE_COLUMNS = "scope, key, old, new, by_id, by_name, at"


class Settings(Connection):
    async def settings_of(self, *, scopes: Sequence[str]) -> Mapping[str, Mapping[str, str]]:
        found: dict[str, dict[str, str]] = {}
        if not scopes:
            return found
        marks = ", ".join("?" for _ in scopes)
        rows = await self._rows(
            f"SELECT scope, key, value FROM settings WHERE scope IN ({marks})",  # noqa: S608
            list(scopes),
        )
        for scope, key, value in rows:
            found.setdefault(scope, {})[key] = value
        return found

    async def change_setting(
        self, *, scope: str, key: str, value: str | None, by_id: str, by_name: str, at: float
    ) -> SettingChange:
        """Read, write and log in one transaction that holds the database's write lock: a
        change another process makes at once comes before or after this one, whole."""
        async with self._transaction():
            rows = await self._rows(
                "SELECT value FROM settings WHERE scope = ? AND key = ?", (scope, key)
            )
            old = next((str(row[0]) for row in rows), None)
            change = SettingChange(scope, key, old, value, by_id, by_name, at)
            if old == value:
                return change
            if value is None:
                await self._db.execute(
                    "DELETE FROM settings WHERE scope = ? AND key = ?", (scope, key)
                )
            else:
                await self._db.execute(
                    "INSERT INTO settings (scope, key, value, by_id, by_name, at)"
                    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET"
                    " value = excluded.value, by_id = excluded.by_id,"
                    " by_name = excluded.by_name, at = excluded.at",
                    (scope, key, value, by_id, by_name, at),
                )
            await self._db.execute(
                f"INSERT INTO setting_changes ({CHANGE_COLUMNS})"  # noqa: S608
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (scope, key, old, value, by_id, by_name, at),
            )
        return change

    async def setting_changes(self, *, scope: str, limit: int) -> Sequence[SettingChange]:
        rows = await self._rows(
            f"SELECT {CHANGE_COLUMNS} FROM setting_changes"  # noqa: S608
            " WHERE scope = ? ORDER BY id DESC LIMIT ?",
            (scope, limit),
        )
        return [SettingChange(*row) for row in rows]

    async def scopes_where(self, *, prefix: str, key: str, value: str) -> Sequence[str]:
        rows = await self._rows(
            "SELECT scope FROM settings WHERE key = ? AND value = ?"
            " AND substr(scope, 1, ?) = ? ORDER BY scope",
            (key, value, len(prefix), prefix),
        )
        return [str(row[0]) for row in rows]
