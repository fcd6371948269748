"""``bot run`` as a process, connecting to the fake Discord through the config's endpoints."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import config_dict
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, TOKEN, team_guild
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM


@pytest.fixture
def discord_thread() -> Iterator[FakeDiscord]:
    fake = FakeDiscord.start_in_thread(guilds=[team_guild()], bot=BOT, token=TOKEN)
    try:
        yield fake
    finally:
        fake.stop()


def write_config(tmp_path: Path, llm: FakeLLM, fake: FakeDiscord) -> Path:
    discord = {"enabled": True, "api_base_url": fake.api_base, "gateway_url": fake.gateway_url}
    data = config_dict(llm.url, tmp_path / "bot.sqlite3", discord=discord)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def bot_run(config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "DISCORD_TOKEN": TOKEN},
    )


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_bot_run_connects_answers_and_stops_on_sigterm(
    tmp_path: Path, llm_thread: FakeLLM, discord_thread: FakeDiscord
) -> None:
    fake = discord_thread
    process = bot_run(write_config(tmp_path, llm_thread, fake))
    try:
        wait_for(lambda: bool(fake.command_syncs) and fake.identify is not None, process)
        fake.call(
            fake.say(BO, f"<@{BOT.id}> hi", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,))
        )
        # streamed: the reply is edited until it holds the whole answer
        wait_for(lambda: bool(fake.sent) and fake.sent[0].content == "echo: [Bo] hi", process)
        assert len(fake.sent) == 1
        assert process.stderr is not None
        seen = [next(process.stderr)]
        while "discord connected" not in seen[-1]:  # ready: a signal before stops it too
            seen.append(next(process.stderr))
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=30)
        stderr = "".join(seen) + rest
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert TOKEN not in stderr


def test_bot_run_without_the_intent_says_how_to_enable_it(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    fake = FakeDiscord.start_in_thread(grant_message_content=False, token=TOKEN)
    try:
        process = bot_run(write_config(tmp_path, llm_thread, fake))
        _, stderr = process.communicate(timeout=60)
    finally:
        fake.stop()
    assert process.returncode == 1
    assert "bot run: Discord refused the Message Content intent" in stderr
    assert "Privileged Gateway Intents" in stderr


def test_doctor_reports_discord_enabled(
    tmp_path: Path, llm_thread: FakeLLM, discord_thread: FakeDiscord
) -> None:
    config = write_config(tmp_path, llm_thread, discord_thread)
    result = subprocess.run(
        [sys.executable, "-m", "bot", "doctor", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "DISCORD_TOKEN": TOKEN},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "ok   platforms: discord: logged in as memory bot (application 901), Message Content "
        "intent on; records all messages; slash commands for all servers"
    ) in result.stdout
    assert discord_thread.command_syncs == []  # the doctor changes nothing
