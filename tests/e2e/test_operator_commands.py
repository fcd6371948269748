"""Operator commands (backup, export, import, reset, stats, health) need no chat platform
tokens: only ``bot run`` connects, and it names the variable it lacks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_cli import write_config
from tests.support.fake_llm import FakeLLM

PLATFORM_SECRETS = (
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "DISCORD_TOKEN",
)


def untokened(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """``bot ARGS`` with no platform secret in its environment."""
    env = {k: v for k, v in os.environ.items() if k not in PLATFORM_SECRETS}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )


def both_platforms(tmp_path: Path, url: str, mode: str = "socket") -> str:
    return str(
        write_config(
            tmp_path, url, slack={"enabled": True, "mode": mode}, discord={"enabled": True}
        )
    )


def test_operator_commands_run_with_both_platforms_enabled_and_no_tokens(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = both_platforms(tmp_path, llm_thread.url)
    chat = untokened("chat", "--config", config, "--channel", "team", stdin="hello\n/pin a fact\n")
    assert chat.returncode == 0, chat.stderr
    stats = untokened("stats", "--config", config)
    assert stats.returncode == 0, stats.stderr
    assert "console:local:team" in stats.stdout
    one = untokened("stats", "--config", config, "--channel", "team")
    assert one.returncode == 0 and "Messages stored: 2" in one.stdout, one.stderr
    backup = untokened("backup", "--config", config, str(tmp_path / "copy.sqlite3"))
    assert backup.returncode == 0, backup.stderr
    assert (tmp_path / "copy.sqlite3").stat().st_size > 0
    dump = tmp_path / "team.jsonl"
    export = untokened("export", "--config", config, "--channel", "team", "-o", str(dump))
    assert export.returncode == 0, export.stderr
    assert '"a fact"' in dump.read_text()
    reset = untokened("reset", "--config", config, "--channel", "team", "--pins")
    assert reset.returncode == 0, reset.stderr
    (tmp_path / "other").mkdir()
    other = both_platforms(tmp_path / "other", llm_thread.url)
    imported = untokened("import", "--config", other, str(dump))
    assert imported.returncode == 0, imported.stderr
    health = untokened("health", "--config", config)
    assert health.returncode == 0, health.stderr
    assert health.stdout == "no http.port configured; nothing to check\n"


def test_run_still_names_the_variable_it_lacks(tmp_path: Path) -> None:
    socket = both_platforms(tmp_path, "http://127.0.0.1:9/v1")
    refused = untokened("run", "--config", socket)
    assert refused.returncode == 78  # EX_CONFIG, as every configuration error
    assert refused.stderr == (
        "bot: slack: socket mode needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN in the environment\n"
    )
    http = write_config(tmp_path, "http://127.0.0.1:9/v1", slack={"enabled": True, "mode": "http"})
    assert untokened("run", "--config", str(http)).stderr == (
        "bot: slack: http mode needs SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET in the environment\n"
    )
    discord = write_config(tmp_path, "http://127.0.0.1:9/v1", discord={"enabled": True})
    assert untokened("run", "--config", str(discord)).stderr == (
        "bot: discord: enabled, but DISCORD_TOKEN is not set in the environment\n"
    )


def test_doctor_runs_its_checks_and_fails_the_platforms_naming_the_variables(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    result = untokened("doctor", "--config", both_platforms(tmp_path, llm_thread.url))
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "ok   chat endpoint" in "\n".join(lines)
    assert lines[-1] == (
        "FAIL platforms: slack: socket mode needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN in the "
        "environment; discord: enabled, but DISCORD_TOKEN is not set in the environment"
    )
