"""Settings set per channel or thread, and their changes, in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.core.ports.settings import SettingChange
from bot.store.memory.tables import SettingRow, Tables


class Settings(Tables):
    async def settings_of(self, *, scopes: Sequence[str]) -> Mapping[str, Mapping[str, str]]:
        return {
            scope: {key: row.value for key, row in self.setting_rows[scope].items()}
            for scope in scopes
            if self.setting_rows.get(scope)
        }

    async def change_setting(
        self, *, scope: str, key: str, value: str | None, by_id: str, by_name: str, at: float
    ) -> SettingChange:
        values = self.setting_rows.setdefault(scope, {})
        held = values.get(key)
        old = None if held is None else held.value
        change = SettingChange(scope, key, old, value, by_id, by_name, at)
        if change.old == change.new:
            return change
        if value is None:
            del values[key]
        else:
            values[key] = SettingRow(value, by_id, by_name, at)
        self.setting_log[self.next_id("setting_changes", self.setting_log)] = change
        return change

    async def setting_changes(self, *, scope: str, limit: int) -> Sequence[SettingChange]:
        newest = sorted(self.setting_log.items(), reverse=True)
        return [change for _, change in newest if change.scope == scope][:limit]

    async def scopes_where(self, *, prefix: str, key: str, value: str) -> Sequence[str]:
        return sorted(
            scope
            for scope, values in self.setting_rows.items()
            if scope.startswith(prefix) and key in values and values[key].value == value
        )
