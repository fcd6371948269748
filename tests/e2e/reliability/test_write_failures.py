"""A write the database refuses is never silent: ``bot run`` on Discord (which never delivers a
message again) tells the conversation once, ``/healthz`` is 503 with the reason, ``/metrics``
counts each failure, and all recovers once a write succeeds. Three real faults: a full
filesystem, a read-only (immutable) file, a damaged page."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import config_dict
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, TOKEN, team_guild
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM

NOTICE = "I couldn't save that message: the bot's storage is failing; an operator has been told"


@pytest.fixture
def discord_thread() -> Iterator[FakeDiscord]:
    fake = FakeDiscord.start_in_thread(guilds=[team_guild()], bot=BOT, token=TOKEN)
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 8 MB ext4 filesystem (a loop device), to fill and to set files immutable on."""
    if os.geteuid() != 0 or not shutil.which("mkfs.ext4") or not shutil.which("chattr"):
        pytest.skip("needs root, mkfs.ext4 and chattr to mount a small filesystem")
    image, mount = tmp_path / "disk.img", tmp_path / "disk"
    with image.open("wb") as out:
        out.truncate(8 * 1024 * 1024)
    mount.mkdir()
    subprocess.run(["mkfs.ext4", "-q", str(image)], check=True)
    mounted = subprocess.run(["mount", "-o", "loop", str(image), str(mount)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a loop device here: {mounted.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["chattr", "-R", "-i", str(mount)], capture_output=True)
        subprocess.run(["umount", "-l", str(mount)], check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


class Running:
    def __init__(self, folder: Path, llm: FakeLLM, fake: FakeDiscord, tmp_path: Path) -> None:
        self.fake = fake
        self.db = folder / "bot.sqlite3"
        self.port = free_port()
        discord = {"enabled": True, "api_base_url": fake.api_base, "gateway_url": fake.gateway_url}
        data = config_dict(
            llm.url, self.db, discord=discord, http={"host": "127.0.0.1", "port": self.port}
        )
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(data))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "DISCORD_TOKEN": TOKEN},
        )

    def wait_for(self, condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 30
        while not condition():
            assert self.process.poll() is None, self.process.communicate()[1]
            assert time.monotonic() < deadline, "timed out"
            time.sleep(0.05)

    def say(self, text: str) -> None:
        fake = self.fake
        fake.call(
            fake.say(BO, f"<@{BOT.id}> {text}", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,))
        )

    def health(self) -> tuple[int, str]:
        try:
            return fetch(f"http://127.0.0.1:{self.port}/healthz")
        except OSError:  # not serving yet
            return 0, ""

    def failures_counted(self) -> float:
        _, page = fetch(f"http://127.0.0.1:{self.port}/metrics")
        line = next(
            x for x in page.splitlines() if x.startswith("bot_storage_write_failures_total")
        )
        return float(line.split()[1])

    def stop(self) -> str:
        self.process.terminate()
        _, stderr = self.process.communicate(timeout=30)
        return stderr


def fill(folder: Path) -> Callable[[], None]:
    """Take every free block. Space the filesystem holds back for pending allocations is
    given back once they are written out, so keep writing, in smaller pieces, until the
    filesystem refuses even after a sync."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as out:
        for size in (65536, 4096, 1024):
            refusals = 0
            while refusals < 3:
                try:
                    out.write(b"\0" * size)
                    refusals = 0
                except OSError:
                    refusals += 1
                    os.fsync(out.fileno())
                    os.sync()
    return filler.unlink


def make_immutable(folder: Path) -> Callable[[], None]:
    files = [str(p) for p in folder.glob("bot.sqlite3*")]
    subprocess.run(["chattr", "+i", *files], check=True)
    return lambda: subprocess.run(["chattr", "-i", *files], check=True) and None


def damage_a_page(db: Path) -> Callable[[], None]:
    """Overwrite the messages table's root page in the file; another connection's commit
    makes the bot read it again."""
    with sqlite3.connect(db) as other:
        page_size = other.execute("PRAGMA page_size").fetchone()[0]
        root = other.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'messages'"
        ).fetchone()
    offset = (root[0] - 1) * page_size
    with db.open("r+b") as out:
        out.seek(offset)
        original = out.read(page_size)
        out.seek(offset)
        out.write(b"\xa5" * page_size)

    def touch() -> None:
        with sqlite3.connect(db) as other:
            other.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('poke', ?)", (time.time(),)
            )

    touch()

    def repair() -> None:
        with db.open("r+b") as out:
            out.seek(offset)
            out.write(original)
        touch()

    return repair


def seed_checkpointed(db: Path) -> None:
    """The database with its pages in the main file (as after a clean stop)."""
    with sqlite3.connect(db) as other:
        other.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@pytest.mark.parametrize("fault", ["disk full", "read-only file", "damaged page"])
def test_a_refused_write_is_told_once_shown_by_health_counted_and_recovers(
    fault: str,
    tmp_path: Path,
    llm_thread: FakeLLM,
    discord_thread: FakeDiscord,
    request: pytest.FixtureRequest,
) -> None:
    folder = request.getfixturevalue("small_disk") if fault != "damaged page" else tmp_path
    bot = Running(folder, llm_thread, discord_thread, tmp_path)
    fake = discord_thread
    try:
        bot.wait_for(lambda: fake.identify is not None and bool(fake.command_syncs))
        bot.say("hello")
        bot.wait_for(lambda: len(fake.sent) == 1)
        bot.wait_for(lambda: bot.health()[0] == 200)
        assert bot.health() == (200, "database: ok\ndiscord: ok\n")
        if fault == "damaged page":
            seed_checkpointed(bot.db)
            undo = damage_a_page(bot.db)
        elif fault == "disk full":
            undo = fill(folder)
        else:
            undo = make_immutable(folder)
        for n in range(3):
            bot.say(f"lost {n}")
        bot.wait_for(lambda: bot.failures_counted() >= 3)
        time.sleep(0.5)  # a second notice, were there one, would be out by now
        assert [s.content for s in fake.sent[1:]] == [NOTICE]
        status, body = bot.health()
        assert status == 503
        assert body.startswith("database: down (cannot write: "), body
        if fault != "damaged page":  # the damage is to the messages table; pins still work
            pin = fake.command(BO, "pin", {"text": "Use UTC"}, channel_id=GENERAL, guild_id=GUILD)
            fake.call(pin)
            bot.wait_for(lambda: len(fake.followups) == 1)
            assert "storage is failing" in fake.followups[0]["content"]
        undo()
        bot.say("back")
        bot.wait_for(lambda: fake.sent[-1].content == "echo: [Bo] back")
        assert bot.health() == (200, "database: ok\ndiscord: ok\n")
        bot.say("again")  # a new spell would be told again; this one is over and quiet
        bot.wait_for(lambda: fake.sent[-1].content.startswith("echo: [Bo] again"))
    finally:
        stderr = bot.stop()
    assert "Traceback" not in stderr, stderr
    failed = [line for line in stderr.splitlines() if "storage write to" in line]
    assert len(failed) >= 3 and all(str(bot.db) in line for line in failed), stderr
    with sqlite3.connect(bot.db) as db:
        kept = [row[0] for row in db.execute("SELECT content FROM messages WHERE role = 'user'")]
    # Answered means kept; on a full disk SQLite may still fit a message in WAL space it
    # reuses and fail on its answer: that message is kept, unanswered, and told.
    assert kept[0] == "hello" and kept[-2:] == ["back", "again"], kept
    assert "lost 2" not in kept
    if fault != "damaged page":
        with sqlite3.connect(bot.db) as db:
            assert db.execute("SELECT COUNT(*) FROM pins").fetchone()[0] == 0


def test_bot_chat_tells_once_that_its_messages_are_not_kept(
    tmp_path: Path, llm_thread: FakeLLM, small_disk: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(config_dict(llm_thread.url, small_disk / "bot.sqlite3")))
    chat = [sys.executable, "-m", "bot", "chat", "--config", str(config), "--user", "ana"]
    first = subprocess.run(chat, input="hello\n", capture_output=True, text=True, timeout=60)
    assert first.stdout == "echo: [ana] hello\n", first.stderr
    restore = make_immutable(small_disk)
    try:
        lost = subprocess.run(
            chat, input="one\ntwo\nthree\n", capture_output=True, text=True, timeout=60
        )
    finally:
        restore()
    assert lost.stdout == NOTICE + "\n", lost.stderr
    assert "Traceback" not in lost.stderr
    assert len([x for x in lost.stderr.splitlines() if "storage write to" in x]) == 3
