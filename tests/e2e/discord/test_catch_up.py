"""``bot run`` on Discord catches up on start: what people wrote while it was stopped is read
back from the (fake) channel history, stored once, in order, and never answered."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import config_dict
from tests.e2e.discord.test_bot_run import bot_run, discord_thread, wait_for
from tests.support.discord_bot import ANA, BO, BOT, GENERAL, GUILD
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM

__all__ = ["discord_thread"]  # the fixture, used by name

CONVERSATION = f"discord:{GUILD}:{GENERAL}"


class Bot:
    def __init__(self, tmp_path: Path, llm: FakeLLM, fake: FakeDiscord, **catch_up: Any) -> None:
        self.fake = fake
        self.db = tmp_path / "bot.sqlite3"
        discord = {"enabled": True, "api_base_url": fake.api_base, "gateway_url": fake.gateway_url}
        data = config_dict(llm.url, self.db, discord=discord, logging={"level": "DEBUG"})
        if catch_up:
            data["catch_up"] = catch_up
        self.config = tmp_path / "config.yaml"
        self.config.write_text(yaml.safe_dump(data))
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.fake.identify = None
        self.process = bot_run(self.config)
        wait_for(lambda: self.fake.identify is not None, self.process)

    def stop(self) -> str:
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        _, stderr = self.process.communicate(timeout=60)
        assert self.process.returncode == 0, stderr
        self.process = None
        return stderr

    def until(self, condition: Any) -> None:
        assert self.process is not None
        wait_for(condition, self.process)

    def say(self, text: str, *, addressed: bool = False) -> None:
        content = f"<@{BOT.id}> {text}" if addressed else text
        mentions = (BOT,) if addressed else ()
        sent = len(self.fake.sent)
        self.fake.call(
            self.fake.say(BO, content, channel_id=GENERAL, guild_id=GUILD, mentions=mentions)
        )
        if addressed:
            self.until(lambda: len(self.fake.sent) > sent)

    def stored(self) -> list[tuple[str, str]]:
        with sqlite3.connect(self.db) as db:
            rows = db.execute(
                "SELECT content, platform_message_id FROM messages"
                " WHERE conversation = ? AND role = 'user' ORDER BY id",
                (CONVERSATION,),
            ).fetchall()
        return [(str(content), str(mid)) for content, mid in rows]


def test_what_was_written_while_stopped_is_in_the_next_prompt_once_and_not_answered(
    tmp_path: Path, llm_thread: FakeLLM, discord_thread: FakeDiscord
) -> None:
    fake = discord_thread
    bot = Bot(tmp_path, llm_thread, fake)
    bot.start()
    bot.say("first, just said")
    bot.until(lambda: len(bot.stored()) == 1)
    bot.say("hi", addressed=True)
    bot.stop()
    # "hi" is stored already but is not the newest by time: history after "first" holds it.
    with sqlite3.connect(bot.db) as db:
        db.execute("UPDATE messages SET created_at = created_at - 1000 WHERE content = 'hi'")
    for text in ("the build server moved to rack 4", "standup is at ten now"):
        fake.write(ANA, text, channel_id=GENERAL, guild_id=GUILD)

    bot.start()
    bot.until(lambda: len(bot.stored()) == 4)
    sent = len(fake.sent)
    bot.say("where is the build server?", addressed=True)
    stderr = bot.stop()

    prompt = json.dumps(llm_thread.chat_requests[-1]["messages"])
    assert "[Ana N] the build server moved to rack 4" in prompt
    assert "[Ana N] standup is at ten now" in prompt
    texts = [text for text, _ in bot.stored()]
    assert texts == [
        "first, just said",
        "hi",
        "the build server moved to rack 4",
        "standup is at ten now",
        "where is the build server?",
    ]
    ids = [mid for _, mid in bot.stored()]
    assert len(set(ids)) == len(ids)
    assert len(fake.sent) == sent + 1  # only the question was answered
    assert "discord catch-up: started (1 conversation)" in stderr
    assert "discord: caught up 2 messages written while stopped, in 1 conversation" in stderr


def test_at_most_max_messages_the_most_recent_are_caught_up(
    tmp_path: Path, llm_thread: FakeLLM, discord_thread: FakeDiscord
) -> None:
    fake = discord_thread
    bot = Bot(tmp_path, llm_thread, fake, max_messages=2)
    bot.start()
    bot.say("before")
    bot.until(lambda: len(bot.stored()) == 1)
    bot.stop()
    for n in range(4):
        fake.write(ANA, f"note {n}", channel_id=GENERAL, guild_id=GUILD)

    bot.start()
    bot.until(lambda: len(bot.stored()) == 3)
    stderr = bot.stop()

    assert [text for text, _ in bot.stored()] == ["before", "note 2", "note 3"]
    assert "discord: caught up 2 messages" in stderr
    assert "more than 2 written while stopped" in stderr
