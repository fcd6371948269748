"""Adapters are imported only when their platform is enabled: ``bot run`` and ``bot doctor``
with one platform never import the other's library, nor the plotting library before a chart
is asked for (seen in the interpreter's own record of every import,
``PYTHONPROFILEIMPORTTIME``)."""

from __future__ import annotations

import signal
from pathlib import Path

from tests.e2e.test_cli import bot, write_config
from tests.e2e.test_lifecycle import SLACK_TOKENS, BotProcess, fake_discord, fake_slack
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import FakeSlack

__all__ = ["fake_discord", "fake_slack"]

RECORD_IMPORTS = {"PYTHONPROFILEIMPORTTIME": "1"}


def imported(stderr_lines: list[str]) -> set[str]:
    """The top-level packages named in ``import time:`` lines."""
    return {
        line.rsplit("|", 1)[1].strip().split(".")[0]
        for line in stderr_lines
        if line.startswith("import time:") and "|" in line
    }


def test_bot_run_with_only_slack_never_imports_discord(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack: FakeSlack
) -> None:
    slack = {"enabled": True, "api_base_url": fake_slack.api_url}
    process = BotProcess(tmp_path, llm_thread, {**SLACK_TOKENS, **RECORD_IMPORTS}, slack=slack)
    try:
        process.wait_for(lambda lines: any("slack connected" in x for x in lines), "connected")
        process.stop(signal.SIGTERM)
    finally:
        process.kill()
    modules = imported(process.lines)
    assert "slack_bolt" in modules
    assert "discord" not in modules
    assert "matplotlib" not in modules  # until the first chart is drawn


def test_bot_doctor_with_only_slack_never_imports_discord(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack: FakeSlack
) -> None:
    slack = {"enabled": True, "api_base_url": fake_slack.api_url}
    config = write_config(tmp_path, llm_thread.url, slack=slack)
    result = bot("doctor", "--config", str(config), env={**SLACK_TOKENS, **RECORD_IMPORTS})
    assert "ok   platforms: slack: socket mode, signed in as" in result.stdout, result.stdout
    modules = imported(result.stderr.splitlines())
    assert "slack_bolt" in modules
    assert "discord" not in modules


def test_bot_doctor_with_only_discord_never_imports_slack(
    tmp_path: Path, llm_thread: FakeLLM, fake_discord: FakeDiscord
) -> None:
    discord = {"enabled": True, "api_base_url": fake_discord.api_base}
    config = write_config(tmp_path, llm_thread.url, discord=discord)
    env = {"DISCORD_TOKEN": fake_discord.token, **RECORD_IMPORTS}
    result = bot("doctor", "--config", str(config), env=env)
    assert "ok   platforms: discord: logged in as" in result.stdout, result.stdout
    modules = imported(result.stderr.splitlines())
    assert "discord" in modules
    assert not modules & {"slack_bolt", "slack_sdk"}
