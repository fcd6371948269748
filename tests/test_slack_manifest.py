"""slack-manifest.yaml declares what the adapter handles."""

from __future__ import annotations

from pathlib import Path

import yaml

from bot.commands import COMMANDS
from bot.slack_adapter.translate import PIN_SHORTCUT

ROOT = Path(__file__).resolve().parent.parent


def test_the_manifest_declares_commands_shortcut_events_and_scopes() -> None:
    manifest = yaml.safe_load((ROOT / "slack-manifest.yaml").read_text(encoding="utf-8"))
    features = manifest["features"]
    commands = {c["command"] for c in features["slash_commands"]}
    assert commands == {
        "/pin",
        "/unpin",
        "/pins",
        "/summarize",
        "/stats",
        "/reset",
        "/remember",
        "/profile",
        "/forget",
    }
    assert commands <= {f"/{spec.name}" for spec in COMMANDS}
    (shortcut,) = features["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", PIN_SHORTCUT)
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "message.channels",
        "message.groups",
        "message.im",
        "message.mpim",
        "reaction_added",
        "reaction_removed",
    }
    assert settings["socket_mode_enabled"] and settings["interactivity"]["is_enabled"]
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"chat:write", "commands", "users:read", "channels:history", "im:history"} <= scopes
    assert "reactions:read" in scopes  # reaction_added / reaction_removed need it
    assert "files:write" in scopes  # a long reply's whole text is shared as a file
