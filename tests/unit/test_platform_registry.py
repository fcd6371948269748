"""The platform registry and the config agree: one entry per platform section."""

from __future__ import annotations

from bot import adapters
from bot.config import Config


def test_every_platform_section_has_its_entry_and_model() -> None:
    registered = {entry.name: entry.settings for entry in adapters.entries()}
    assert registered == Config.platform_sections()
    assert list(registered) == ["slack", "discord"]
