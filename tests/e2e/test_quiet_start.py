"""``bot run`` starts quietly: against the local fakes, with Slack in Socket Mode, Slack in
HTTP mode and Discord, every line on stderr is a log record, and none from a third-party
library is a warning or worse."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_lifecycle import LOG_LINE, SLACK_TOKENS, BotProcess, fake_discord, fake_slack
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import FakeSlack

__all__ = ["fake_discord", "fake_slack"]


def sections(setup: str, slack: FakeSlack, discord: FakeDiscord) -> dict[str, Any]:
    if setup == "slack-socket":
        return {"slack": {"enabled": True, "api_base_url": slack.api_url}}
    if setup == "slack-http":
        return {
            "slack": {
                "enabled": True,
                "api_base_url": slack.api_url,
                "mode": "http",
                "host": "127.0.0.1",
                "port": 0,
            },
            "http": {"host": "127.0.0.1", "port": 0},
        }
    return {
        "discord": {
            "enabled": True,
            "api_base_url": discord.api_base,
            "gateway_url": discord.gateway_url,
        }
    }


@pytest.mark.parametrize("setup", ["slack-socket", "slack-http", "discord"])
def test_bot_run_starts_and_stops_without_third_party_warnings(
    tmp_path: Path,
    llm_thread: FakeLLM,
    fake_slack: FakeSlack,
    fake_discord: FakeDiscord,
    setup: str,
) -> None:
    env = {**SLACK_TOKENS, "SLACK_SIGNING_SECRET": "signing-secret", "DISCORD_TOKEN": "fake"}
    env["DISCORD_TOKEN"] = fake_discord.token
    bot = BotProcess(tmp_path, llm_thread, env, **sections(setup, fake_slack, fake_discord))
    platform = setup.split("-")[0]
    try:
        bot.wait_for(lambda lines: any(f"{platform} connected" in x for x in lines), "connected")
        bot.stop(signal.SIGTERM)
    finally:
        bot.kill()
    assert bot.process.returncode == 0, "\n".join(bot.lines)
    records = [LOG_LINE.match(line) for line in bot.lines]
    assert all(records), "\n".join(bot.lines)
    loud = [
        line
        for line, record in zip(bot.lines, records, strict=True)
        if record and record[1] not in ("DEBUG", "INFO") and not record[2].startswith("bot.")
    ]
    assert loud == []
