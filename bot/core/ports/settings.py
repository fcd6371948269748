"""Settings set in chat, per channel or thread, and who changed them (``/settings``).

A scope is a conversation's key: a channel's (``platform:workspace:channel``, a DM's too) or a
thread's. Values are text, as ``/settings`` takes them once checked
(:mod:`bot.core.settings`); the store keeps them and every change, and knows nothing of what
they mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SettingChange:
    """One setting changed in one scope: who, when, old → new (None: not set)."""

    scope: str
    key: str
    old: str | None
    new: str | None
    by_id: str
    by_name: str
    at: float


class SettingsStore(Protocol):
    async def settings_of(self, *, scopes: Sequence[str]) -> Mapping[str, Mapping[str, str]]:
        """The settings stored for each of ``scopes``, by key; a scope with none is absent."""
        ...

    async def change_setting(
        self, *, scope: str, key: str, value: str | None, by_id: str, by_name: str, at: float
    ) -> SettingChange:
        """Set ``key`` in ``scope`` to ``value`` (None: clear it) and record the change, in
        one transaction; a change to what is already there is not recorded (the result's
        ``old`` equals its ``new``)."""
        ...

    async def setting_changes(self, *, scope: str, limit: int) -> Sequence[SettingChange]:
        """The latest ``limit`` changes in ``scope``, newest first."""
        ...

    async def scopes_where(self, *, prefix: str, key: str, value: str) -> Sequence[str]:
        """The scopes starting with ``prefix`` whose ``key`` is set to ``value`` (the
        channels of one workspace in a memory group), sorted."""
        ...
