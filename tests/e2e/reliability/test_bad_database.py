"""A database that cannot be used stops every command with one line naming the file and the
cause, and a non-zero exit, never a traceback; a WAL file deleted under the running bot turns
its health check unhealthy."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from bot.core.models import Conversation, Role
from bot.store.sqlite.store import SqliteStore
from tests.conftest import config_dict
from tests.e2e.reliability.test_write_failures import Running, discord_thread
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM

__all__ = ["discord_thread"]  # the fixture, shared

COMMANDS: list[list[str]] = [
    ["run"],
    ["chat"],
    ["stats"],
    ["backup", "copy.sqlite3"],
    ["export"],
    ["import"],
    ["reset", "--channel", "team"],
    ["doctor"],
]


def seed(path: Path) -> None:
    async def fill() -> None:
        store = await SqliteStore.open(str(path))
        try:
            for n in range(300):
                await store.add_message(
                    conversation=Conversation.console("team"),
                    role=Role.USER,
                    author_id="ana",
                    author_name="ana",
                    content=f"message {n} " + "words " * 80,
                    tokens=90,
                    message_id=None,
                    created_at=float(n),
                )
        finally:
            await store.close()

    asyncio.run(fill())


def garbage(db: Path) -> None:
    db.write_bytes(os.urandom(64 * 1024))


def truncated(db: Path) -> None:
    seed(db)
    with db.open("r+b") as out:
        out.truncate(db.stat().st_size // 2)


def bad_header(db: Path) -> None:
    seed(db)
    with db.open("r+b") as out:
        out.write(b"not an sqlite file")


def damaged_pages(db: Path) -> None:
    seed(db)
    size = db.stat().st_size
    with db.open("r+b") as out:
        out.seek(size // 3)
        out.write(b"\xa5" * 16384)


def unreadable(db: Path) -> None:
    db.mkdir()  # a directory where the file should be: nothing can read it as a database


FAULTS: dict[str, Callable[[Path], None]] = {
    "garbage": garbage,
    "truncated": truncated,
    "bad header": bad_header,
    "damaged pages": damaged_pages,
    "unreadable": unreadable,
}


@pytest.fixture
def read_only_folder(tmp_path: Path) -> Iterator[Path]:
    """A folder holding a good database, on a filesystem mounted read-only."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("needs root to mount a read-only filesystem")
    folder = tmp_path / "ro"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)])
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        seed(folder / "bot.sqlite3")
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def run_each_command(tmp_path: Path, db: Path) -> None:
    config = tmp_path / "config.yaml"
    data = config_dict("http://127.0.0.1:9/v1", db, discord={"enabled": True})
    config.write_text(yaml.safe_dump(data))
    for command in COMMANDS:
        result = subprocess.run(
            [sys.executable, "-m", "bot", *command, "--config", str(config)],
            input="",
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env={**os.environ, "DISCORD_TOKEN": "x"},
        )
        lines = result.stderr.splitlines()
        assert result.returncode != 0, (command, result.stdout, result.stderr)
        assert "Traceback" not in result.stderr, (command, result.stderr)
        assert len(lines) == 1 and str(db) in lines[0], (command, result.stderr)


@pytest.mark.parametrize("fault", FAULTS)
def test_every_command_names_a_bad_database_in_one_line(tmp_path: Path, fault: str) -> None:
    db = tmp_path / "data" / "bot.sqlite3"
    db.parent.mkdir()
    FAULTS[fault](db)
    run_each_command(tmp_path, db)


def test_every_command_names_a_read_only_folder_in_one_line(
    tmp_path: Path, read_only_folder: Path
) -> None:
    run_each_command(tmp_path, read_only_folder / "bot.sqlite3")


def test_a_wal_deleted_under_the_running_bot_fails_the_health_check(
    tmp_path: Path, llm_thread: FakeLLM, discord_thread: FakeDiscord
) -> None:
    bot = Running(tmp_path, llm_thread, discord_thread, tmp_path)
    health = [sys.executable, "-m", "bot", "health", "--config", str(tmp_path / "config.yaml")]
    try:
        bot.wait_for(lambda: bot.health()[0] == 200)
        Path(f"{bot.db}-wal").unlink()
        other = sqlite3.connect(bot.db)  # a first read makes a new, empty WAL
        with contextlib.suppress(sqlite3.Error):  # and may fail: the shared memory is stale
            other.execute("SELECT COUNT(*) FROM messages").fetchone()
        other.close()
        assert Path(f"{bot.db}-wal").exists()
        status, body = bot.health()
        assert status == 503
        assert body.startswith(f"database: down ({bot.db}-wal was deleted while open"), body
        env = {**os.environ, "DISCORD_TOKEN": "x"}
        checked = subprocess.run(health, capture_output=True, text=True, timeout=30, env=env)
        assert checked.returncode == 1
        assert f"{bot.db}-wal was deleted" in checked.stdout
    finally:
        bot.stop()
