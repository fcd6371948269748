"""The settings resolved per conversation: the config's defaults, with what ``/settings`` set
in its channel or thread (:mod:`.source`)."""

from bot.core.settings.keys import KEYS, BadValue, Key
from bot.core.settings.source import Resolved, SettingsSource
from bot.core.settings.values import (
    Answering,
    RecallSettings,
    Recording,
    Settings,
    SpendCaps,
    SummarySettings,
)

__all__ = [
    "KEYS",
    "Answering",
    "BadValue",
    "Key",
    "RecallSettings",
    "Recording",
    "Resolved",
    "Settings",
    "SettingsSource",
    "SpendCaps",
    "SummarySettings",
]
