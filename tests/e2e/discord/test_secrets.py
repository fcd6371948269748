"""``bot run`` with Discord at DEBUG: neither the bot token nor the model key reaches the output,
even when the model refuses the key (echoing it back) and Discord rate-limits the bot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import config_dict
from tests.e2e.discord.test_bot_run import discord_thread, wait_for
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, TOKEN
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM, Reply

__all__ = ["discord_thread"]
KEY = "sk-proj-SECRETdiscordcase0123456789"


def test_no_token_or_key_in_debug_output_when_requests_fail(
    tmp_path: Path, llm_thread: FakeLLM, discord_thread: FakeDiscord
) -> None:
    fake = discord_thread
    discord = {"enabled": True, "api_base_url": fake.api_base, "gateway_url": fake.gateway_url}
    data = config_dict(
        llm_thread.url, tmp_path / "bot.sqlite3", discord=discord, logging={"level": "DEBUG"}
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    message = f"Incorrect API key provided: {KEY}."
    llm_thread.script(Reply(status=401, error={"error": {"message": message, "code": None}}))
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DISCORD_TOKEN": TOKEN, "OPENAI_API_KEY": KEY},
    )
    try:
        wait_for(lambda: bool(fake.command_syncs) and fake.identify is not None, process)
        fake.rate_limit_once("POST", r"/channels/\d+/messages")
        here = {"channel_id": GENERAL, "guild_id": GUILD, "mentions": (BOT,)}
        fake.call(fake.say(BO, f"<@{BOT.id}> first", **here))
        wait_for(lambda: len(fake.sent) == 1, process)
        fake.call(fake.say(BO, f"<@{BOT.id}> second", **here))
        # streamed: the reply is edited until it holds the whole answer
        wait_for(
            lambda: len(fake.sent) == 2 and fake.sent[1].content == "echo: [Bo] second", process
        )
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert "credentials" in fake.sent[0].content and fake.sent[1].content == "echo: [Bo] second"
    assert "DEBUG" in stderr  # discord.py's own debug lines were on
    for secret in (TOKEN, KEY):
        assert secret not in stdout + stderr
        assert all(secret not in sent.content for sent in fake.sent)
