"""Restoring, as the operator does it with the real commands: a channel from its export
after ``bot reset``, a whole database from a ``bot backup`` copy, and an upgrade (an older
database migrated at start; a newer one refused, untouched)."""

from __future__ import annotations

import hashlib
import shlex
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

from bot.store.sqlite.store import SCHEMA_VERSION
from tests.e2e.test_cli import bot, write_config
from tests.support import old_schemas
from tests.support.fake_llm import FakeLLM

HISTORY = "".join(f"note {n}: the deploy window is Tuesday {n}\n" for n in range(8))
SETUP = f"/pin Ana owns billing\n/remember I like green tea\n{HISTORY}/summarize\n"


def asked(llm: FakeLLM, config: str, question: str = "what do you know?") -> list[Any]:
    """What the model is sent when the channel is asked ``question``."""
    answered = bot("chat", "--config", config, "--channel", "team", "--user", "ana", stdin=question)
    assert answered.returncode == 0, answered.stderr
    return list(llm.chat_requests[-1]["messages"])


def filled(tmp_path: Path, llm: FakeLLM) -> str:
    config = str(write_config(tmp_path, llm.url, memory={"max_context_tokens": 2000}))
    chat = bot("chat", "--config", config, "--channel", "team", "--user", "ana", stdin=SETUP)
    assert chat.returncode == 0, chat.stderr
    assert "Summary updated; it now covers 2 messages" in chat.stdout, chat.stdout
    return config


def test_a_channel_comes_back_from_its_export_after_a_reset(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = filled(tmp_path, llm_thread)
    dump = tmp_path / "team.jsonl"
    assert bot("export", "--config", config, "--channel", "team", "-o", str(dump)).returncode == 0
    seen = asked(llm_thread, config)
    system = seen[0]["content"]  # pins, profile and summary; then the messages
    assert "#1 (ana): Ana owns billing" in system and "- I like green tea" in system
    assert "Summary of the earlier conversation" in system and len(seen) == 16
    refused = bot("import", "--config", config, str(dump))
    assert refused.returncode == 1
    assert refused.stderr == (
        "bot import: console:local:team already here; nothing imported. To replace what is"
        " here with the file's, run `bot reset --channel console:local:team --pins`, then"
        " import again (or import into another database)\n"
    )
    advice = refused.stderr.split("`")[1]
    reset = bot(*shlex.split(advice)[1:], "--config", config)
    assert reset.returncode == 0, reset.stderr
    gone = asked(llm_thread, config, "anyone?")
    assert "Ana owns billing" not in gone[0]["content"] and len(gone) == 2
    assert bot("reset", "--config", config, "--channel", "team", "--pins").returncode == 0
    restored = bot("import", "--config", config, str(dump))
    assert restored.returncode == 0, restored.stderr
    again = bot("export", "--config", config, "--channel", "team")
    old, new = dump.read_text().splitlines(), again.stdout.splitlines()
    assert new[1:] == old[1:]  # all but the conversation's reset count
    assert asked(llm_thread, config) == seen


def test_a_database_comes_back_from_a_backup_as_the_docs_say(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = filled(tmp_path, llm_thread)
    db = tmp_path / "bot.sqlite3"
    backup = tmp_path / "backups" / "bot-backup.sqlite3"
    assert bot("backup", "--config", config, str(backup)).returncode == 0
    listed = bot("stats", "--config", config).stdout
    seen = asked(llm_thread, config)
    with db.open("r+b") as damage:  # a disk error across the tables
        damage.seek(4096)
        damage.write(b"\xff" * 8192)
    broken = bot("stats", "--config", config)
    assert broken.returncode == 1 and "malformed" in broken.stderr, broken.stderr
    # The documented procedure, with the bot stopped: set the damaged file aside, drop its
    # WAL and shared memory, copy the backup into place.
    procedure = f"mv {db} {db}.damaged && rm -f {db}-wal {db}-shm && cp {backup} {db}"
    subprocess.run(["sh", "-c", procedure], check=True)
    # The question asked after the backup was taken is not in it.
    assert bot("stats", "--config", config).stdout == listed
    assert asked(llm_thread, config) == seen
    db.unlink()
    subprocess.run(["sh", "-c", f"rm -f {db}-wal {db}-shm && cp {backup} {db}"], check=True)
    assert asked(llm_thread, config) == seen


def old_database(path: Path, version: int) -> None:
    """A database as a bot of schema ``version`` left it, with a conversation in it."""
    db = old_schemas.connect(path)
    old_schemas.build(db, version)
    db.execute(
        "INSERT INTO conversations VALUES ('console:local:team', 'console:local:team', 0, 1)"
    )
    db.execute(
        "INSERT INTO messages (conversation, role, author_id, author_name, content, tokens,"
        " created_at) VALUES ('console:local:team', 'user', 'ana', 'ana', 'the code is 4417',"
        " 9, 1)"
    )
    db.close()


def test_an_older_database_is_migrated_at_start(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = str(write_config(tmp_path, llm_thread.url, memory={"recall_tokens": 200}))
    old_database(tmp_path / "bot.sqlite3", 3)
    stats = bot("stats", "--config", config)
    assert stats.returncode == 0, stats.stderr
    assert "console:local:team" in stats.stdout
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()
    sent = asked(llm_thread, config, "what is the code?")
    assert any("the code is 4417" in m["content"] for m in sent)


def test_a_database_from_a_newer_version_is_refused_and_left_untouched(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, "http://127.0.0.1:9/v1"))
    path = tmp_path / "bot.sqlite3"
    old_database(path, len(old_schemas.MIGRATIONS))
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for command in (["stats"], ["chat"], ["export"], ["backup", str(tmp_path / "b.sqlite3")]):
        refused = bot(*command, "--config", config, stdin="hi\n")
        assert refused.returncode == 1, command
        assert refused.stderr == (
            f"bot: database {path} was written by a newer version of the bot (schema"
            f" {SCHEMA_VERSION + 1}; this one knows {SCHEMA_VERSION}): upgrade the bot, or"
            " restore a backup taken before\n"
        ), command
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bot.sqlite3", "config.yaml"]
