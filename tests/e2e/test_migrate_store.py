"""``python -m bot migrate-store`` as a process: the config's SQLite file into the database
``DATABASE_URL`` names, the password never shown; refused while the bot has the file open;
a missing target or a bad ``--to`` is one line and exit 2."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from bot.store.sqlite_to_postgres import holder
from tests.e2e.test_cli import bot, write_config
from tests.support.big_sqlite import fill
from tests.support.fake_llm import FakeLLM
from tests.support.paths import ROOT

NO_MODEL = "http://127.0.0.1:9/v1"  # never called by migrate-store


def with_password(url: str) -> str:
    """The test server's URL with a password in it (its trust authentication ignores it)."""
    return url.replace("postgres@", "postgres:s3cret-word@")


def test_the_configured_file_is_copied_into_database_url_and_a_rerun_copies_nothing(
    tmp_path: Path, postgres_url: str
) -> None:
    config = write_config(tmp_path, NO_MODEL)
    fill(tmp_path / "bot.sqlite3", messages=500)
    env = {"DATABASE_URL": with_password(postgres_url)}
    first = bot("migrate-store", "--config", str(config), env=env)
    assert first.returncode == 0, first.stderr
    shown = postgres_url.replace("postgres@", "postgres:***@")
    assert first.stderr.splitlines()[0] == f"copying {tmp_path / 'bot.sqlite3'} into {shown}"
    table = {line.split()[0]: line.split()[1:] for line in first.stdout.splitlines()}
    assert table["table"] == ["sqlite", "postgresql"]
    assert table["messages"] == ["500", "500"]
    assert table["message_vectors"] == ["50", "50"]
    assert first.stderr.splitlines()[-1].startswith("verified: every table holds as many rows")
    again = bot("migrate-store", "--config", str(config), env=env)
    assert again.returncode == 0, again.stderr
    assert f"nothing to copy: {shown} already holds everything" in again.stderr
    for said in (first, again):
        assert "s3cret-word" not in said.stdout + said.stderr


def test_it_is_refused_while_the_bot_has_the_file_open(
    tmp_path: Path, llm_thread: FakeLLM, postgres_url: str
) -> None:
    config = write_config(tmp_path, llm_thread.url)
    database = tmp_path / "bot.sqlite3"
    chat = subprocess.Popen(
        [sys.executable, "-m", "bot", "chat", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while holder(str(database)) is None:
            assert chat.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        refused = bot("migrate-store", "--config", str(config), "--to", postgres_url)
    finally:
        chat.communicate(b"", timeout=60)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"bot migrate-store: {database} is open in process {chat.pid} (is the bot running?):"
        " stop it, then run this again"
    ]
    after = bot("migrate-store", "--config", str(config), "--to", postgres_url)
    assert after.returncode == 0, after.stderr


def test_a_missing_or_bad_target_is_one_line_and_exit_2(tmp_path: Path) -> None:
    config = write_config(tmp_path, NO_MODEL)
    fill(tmp_path / "bot.sqlite3", messages=10)
    missing = bot("migrate-store", "--config", str(config), env={"DATABASE_URL": ""})
    assert missing.returncode == 2
    assert missing.stderr.splitlines() == [
        "bot migrate-store: no PostgreSQL database to copy into: pass --to"
        " postgresql://USER@HOST/DATABASE, or set DATABASE_URL"
    ]
    bad = bot("migrate-store", "--config", str(config), "--to", "mysql://u:pw-word@db/bot")
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1].endswith(
        "migrate-store: error: argument --to: must start with postgresql://"
    )
    assert "pw-word" not in bad.stderr
    nowhere = bot(
        "migrate-store", "--config", str(config), "--from", str(tmp_path / "none.sqlite3"),
        "--to", "postgresql://bot@127.0.0.1:9/bot",
    )  # fmt: skip
    assert nowhere.returncode == 2
    assert nowhere.stderr.splitlines() == [
        f"bot migrate-store: no SQLite database at {tmp_path / 'none.sqlite3'}"
        " (storage.path, or --from PATH)"
    ]
    assert not (tmp_path / "none.sqlite3").exists()


def test_the_benchmark_runs_and_extrapolates_per_million(
    tmp_path: Path, postgres_server: object
) -> None:
    """The bench starts its own server; ``postgres_server`` skips it (or fails it where
    PostgreSQL is required) as every PostgreSQL test is."""
    ran = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "migrate_store.py"), "--messages", "2000",
         "--db-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert re.search(r"^messages +2,000 +2,000$", ran.stdout, re.MULTILINE), ran.stdout
    assert "for 2,000 messages" in ran.stdout and "per million messages about" in ran.stdout
