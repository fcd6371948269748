"""The Slack app manifest: `bot slack-manifest` prints it from the command table, the tracked
slack-manifest.yaml is its Socket Mode output, and both satisfy what Slack requires."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from bot.adapters.slack.translate import PIN_SHORTCUT
from bot.config import SlackAssistantConfig
from bot.core.commands import COMMANDS
from tests.support.paths import ROOT

URL = "https://bot.example.com/slack/events"


def run_manifest(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BOT_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "bot", "slack-manifest", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=60,
    )  # fmt: skip


def printed(*args: str, cwd: Path) -> dict[str, Any]:
    result = run_manifest(*args, cwd=cwd)
    assert result.returncode == 0, result.stderr
    manifest = yaml.safe_load(result.stdout)
    assert isinstance(manifest, dict)
    return manifest


def assert_valid_for_slack(manifest: dict[str, Any]) -> None:
    """The limits of Slack's manifest schema that this manifest could break."""
    assert manifest["display_information"]["name"]
    bot_user = manifest["features"]["bot_user"]["display_name"]
    assert re.fullmatch(r"[a-z0-9._-]{1,80}", bot_user)
    commands = manifest["features"]["slash_commands"]
    assert len(commands) <= 50
    for command in commands:
        assert re.fullmatch(r"/[a-z0-9_-]{1,31}", command["command"]), command
        assert 0 < len(command["description"]) <= 2000
        assert len(command.get("usage_hint", "")) <= 1000
    assistant = manifest["features"]["assistant_view"]
    assert 0 < len(assistant["assistant_description"]) <= 250
    assert len(assistant.get("suggested_prompts", [])) <= 4
    for shortcut in manifest["features"]["shortcuts"]:
        assert shortcut["type"] in ("message", "global")
        assert len(shortcut["callback_id"]) <= 255 and len(shortcut["description"]) <= 150


def test_the_manifest_lists_the_whole_command_table_and_nothing_else(tmp_path: Path) -> None:
    manifest = printed(cwd=tmp_path)  # no config file needed
    declared = [
        (c["command"], c["description"], c.get("usage_hint", ""))
        for c in manifest["features"]["slash_commands"]
    ]
    table = [
        (f"/{s.name}", s.description, s.usage.removeprefix(f"/{s.name}").strip()) for s in COMMANDS
    ]
    assert declared == table
    assert ("/help", "list the commands", "") in declared
    assert ("/pin", "keep a fact in every prompt of this channel", "TEXT") in declared
    assert_valid_for_slack(manifest)


def test_the_tracked_manifest_is_the_socket_mode_output(tmp_path: Path) -> None:
    result = run_manifest(cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (ROOT / "slack-manifest.yaml").read_text(encoding="utf-8") == result.stdout
    manifest = yaml.safe_load(result.stdout)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is True
    assert settings["interactivity"] == {"is_enabled": True}
    assert "request_url" not in settings["event_subscriptions"]
    assert all("url" not in c for c in manifest["features"]["slash_commands"])
    assert result.stdout.startswith("# Slack app manifest")


def test_with_a_request_url_every_request_goes_to_it(tmp_path: Path) -> None:
    manifest = printed("--request-url", URL, cwd=tmp_path)
    settings = manifest["settings"]
    assert settings["socket_mode_enabled"] is False
    assert settings["event_subscriptions"]["request_url"] == URL
    assert settings["interactivity"] == {"is_enabled": True, "request_url": URL}
    commands = manifest["features"]["slash_commands"]
    assert [c["url"] for c in commands] == [URL] * len(COMMANDS)
    assert_valid_for_slack(manifest)
    # Apart from the URLs, the same app as in Socket Mode.
    socket = printed(cwd=tmp_path)
    assert manifest["features"]["shortcuts"] == socket["features"]["shortcuts"]
    assert manifest["oauth_config"] == socket["oauth_config"]


def test_a_request_url_that_slack_would_refuse_is_refused(tmp_path: Path) -> None:
    for url in ("http://bot.example.com/slack/events", "bot.example.com/slack/events"):
        result = run_manifest("--request-url", url, cwd=tmp_path)
        assert result.returncode == 2
        assert result.stdout == ""
        assert "Slack needs an https URL" in result.stderr


def test_the_manifest_declares_shortcut_events_and_scopes(tmp_path: Path) -> None:
    manifest = printed(cwd=tmp_path)
    (shortcut,) = manifest["features"]["shortcuts"]
    assert (shortcut["type"], shortcut["callback_id"]) == ("message", PIN_SHORTCUT)
    settings = manifest["settings"]
    assert set(settings["event_subscriptions"]["bot_events"]) == {
        "assistant_thread_context_changed",
        "assistant_thread_started",
        "message.channels",
        "message.groups",
        "message.im",
        "message.mpim",
        "reaction_added",
        "reaction_removed",
    }
    assert settings["interactivity"]["is_enabled"]
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    assert {"chat:write", "commands", "users:read", "channels:history", "im:history"} <= scopes
    assert "reactions:read" in scopes  # reaction_added / reaction_removed need it
    assert "reactions:write" in scopes  # slack.status_reaction, when it is set
    assert "files:write" in scopes  # a long reply's whole text is shared as a file


def test_the_manifest_turns_the_assistant_pane_on_with_the_default_prompts(tmp_path: Path) -> None:
    manifest = printed(cwd=tmp_path)
    view = manifest["features"]["assistant_view"]
    assert "remembers" in view["assistant_description"]
    defaults = SlackAssistantConfig().suggested_prompts
    assert view["suggested_prompts"] == [p.model_dump() for p in defaults]
    assert "assistant:write" in manifest["oauth_config"]["scopes"]["bot"]  # status, title
    assert "message.im" in manifest["settings"]["event_subscriptions"]["bot_events"]
