"""Two ``bot run`` processes, each running one of two Discord shards, on one database."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import config_dict
from tests.e2e.discord.test_bot_run import bot_run, wait_for
from tests.support.discord_bot import BO, BOT, TOKEN
from tests.support.fake_discord import FakeDiscord, FakeGuild
from tests.support.fake_llm import FakeLLM

GUILD_A, CHANNEL_A = 5001, 6001  # shard 0 of 2
GUILD_B, CHANNEL_B = (1 << 22) + 5101, 6201  # shard 1 of 2


def write_config(tmp_path: Path, llm: FakeLLM, fake: FakeDiscord, **discord: Any) -> Path:
    settings = {
        "enabled": True,
        "api_base_url": fake.api_base,
        "gateway_url": fake.gateway_url,
        "shard_count": 2,
        **discord,
    }
    data = config_dict(llm.url, tmp_path / "bot.sqlite3", discord=settings)
    path = tmp_path / f"shard{settings['shard_ids'][0]}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_two_processes_each_answer_in_their_shards_servers(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    guilds = [
        FakeGuild(GUILD_A, "Alpha", channels={CHANNEL_A: "general"}),
        FakeGuild(GUILD_B, "Beta", channels={CHANNEL_B: "general"}),
    ]
    fake = FakeDiscord.start_in_thread(guilds=guilds, bot=BOT, token=TOKEN)
    zero = bot_run(write_config(tmp_path, llm_thread, fake, shard_ids=[0]))
    one = bot_run(write_config(tmp_path, llm_thread, fake, shard_ids=[1], register_commands=False))
    try:
        wait_for(lambda: len(fake.identifies) == 2 and bool(fake.command_syncs), zero)
        wait_for(lambda: len(fake.identifies) == 2, one)
        for guild, channel in ((GUILD_A, CHANNEL_A), (GUILD_B, CHANNEL_B)):
            answers = len(fake.sent) + 1
            text = f"<@{BOT.id}> hello {channel}"
            fake.call(fake.say(BO, text, channel_id=channel, guild_id=guild, mentions=(BOT,)))
            wait_for(lambda n=answers: len(fake.sent) >= n, zero)
        for process in (zero, one):
            process.send_signal(signal.SIGTERM)
        for process in (zero, one):
            process.communicate(timeout=30)
            assert process.returncode == 0
    finally:
        for process in (zero, one):
            if process.poll() is None:
                process.kill()
                process.communicate()
        fake.stop()
    assert sorted(i["shard"] for i in fake.identifies) == [[0, 2], [1, 2]]
    assert len(fake.command_syncs) == 1
    assert sorted(s.channel_id for s in fake.sent) == [CHANNEL_A, CHANNEL_B]  # once each
    with sqlite3.connect(tmp_path / "bot.sqlite3") as db:
        stored = {row[0] for row in db.execute("SELECT content FROM messages WHERE role = 'user'")}
    assert stored == {f"hello {CHANNEL_A}", f"hello {CHANNEL_B}"}
