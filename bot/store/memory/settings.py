"""Settings set per channel or thread, and their changes, in memory."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bot.core.ports.settings import SettingChange
from bot.store.memory.tables import Tables


class Settings(Tables):
    async def settings_of(self, *, scopes: Sequence[str]) -> Mapping[str, Mapping[str, str]]:
        return {
            scope: dict(self.setting_rows[scope])
            for scope in scopes
            if self.setting_rows.get(scope)
        }

    async def change_setting(
        self, *, scope: str, key: str, value: str | None, by_id: str, by_name: str, at: float
    ) -> SettingChange:
        values = self.setting_rows.setdefault(scope, {})
        change = SettingChange(scope, key, values.get(key), value, by_id, by_name, at)
        if change.old == change.new:
            return change
        if value is None:
            del values[key]
        else:
            values[key] = value
        self.setting_log.append(change)
        return change

    async def setting_changes(self, *, scope: str, limit: int) -> Sequence[SettingChange]:
        return [c for c in reversed(self.setting_log) if c.scope == scope][:limit]

    async def scopes_where(self, *, prefix: str, key: str, value: str) -> Sequence[str]:
        return sorted(
            scope
            for scope, values in self.setting_rows.items()
            if scope.startswith(prefix) and values.get(key) == value
        )
