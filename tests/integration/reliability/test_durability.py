"""Commits are durable by default: the writing connection syncs each one (``synchronous=FULL``)."""

from __future__ import annotations

from pathlib import Path

from bot.store.sqlite.store import SqliteStore
from tests.e2e.test_cli import bot, write_config
from tests.support.fake_llm import FakeLLM


def _database_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "database" in line)


def test_doctor_reports_full_sync_unless_configured(tmp_path: Path, llm_thread: FakeLLM) -> None:
    default = bot("doctor", "--config", str(write_config(tmp_path, llm_thread.url)))
    assert default.returncode == 0, default.stdout + default.stderr
    assert _database_line(default.stdout).endswith("synchronous=full")
    normal = write_config(tmp_path, llm_thread.url, storage={"synchronous": "normal"})
    relaxed = bot("doctor", "--config", str(normal))
    assert relaxed.returncode == 0, relaxed.stdout + relaxed.stderr
    assert _database_line(relaxed.stdout).endswith("synchronous=normal")


async def test_a_new_connection_syncs_every_commit(tmp_path: Path) -> None:
    store = await SqliteStore.open(str(tmp_path / "bot.sqlite3"))
    try:
        assert await store.synchronous() == "full"  # PRAGMA synchronous = 2
    finally:
        await store.close()
    store = await SqliteStore.open(str(tmp_path / "bot.sqlite3"), synchronous="normal")
    try:
        assert await store.synchronous() == "normal"
    finally:
        await store.close()
