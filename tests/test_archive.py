"""``bot backup``, ``bot export``, ``bot import`` and ``bot reset``: a channel round-trips
exactly, and a backup taken while the bot runs is a consistent database."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.app import App
from bot.models import Conversation, IncomingMessage
from bot.store.archive import ArchiveError, dump_lines, parse_lines
from bot.store.base import NewSummary
from bot.store.sqlite import SqliteStore
from tests.support.fake_llm import FakeLLM
from tests.test_cli import bot, write_config

TEAM = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "1700000000.000100")
OTHER = Conversation("slack", "T1", "C2")


async def fill(app: App) -> None:
    """Messages and answers in a channel, its thread and another channel; a pin; a summary."""
    for conversation in (TEAM, THREAD, OTHER):
        for n in range(3):
            await app.engine.handle_message(
                IncomingMessage(
                    conversation, "U1", "Ana", f"{conversation.key} says {n} ünïcode ✓",
                    addressed=n != 1, message_id=f"{conversation.key}-{n}",
                )
            )  # fmt: skip
    await app.store.add_pin(
        channel_key=TEAM.channel_key, text="Ana owns billing", tokens=5, author_id="U1",
        author_name="Ana",
    )  # fmt: skip
    first = await app.store.recent_messages(
        conversation_key=TEAM.key, through_id=10**9, after_turn=0, limit=100
    )
    ids = sorted(message.id for message in first)
    saved = await app.store.save_summary(
        NewSummary(TEAM.key, "Ana said things.", 4, ids[1], 2, ids[0], ids[1], 1, False, "m"),
        generation=0,
        previous_id=None,
    )
    assert saved is not None


async def test_a_channel_round_trips_exactly_through_export_and_import(
    app: App, tmp_path: Path
) -> None:
    await fill(app)
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    kinds = [record["type"] for record in exported]
    assert kinds.count("conversation") == 2  # the channel and its thread, not C2
    assert kinds.count("pin") == 1 and kinds.count("summary") == 1
    assert {r["conversation"] for r in exported if r["type"] == "message"} == {
        TEAM.key,
        THREAD.key,
    }
    text = "".join(dump_lines(exported))
    fresh = await SqliteStore.open(str(tmp_path / "fresh.sqlite3"))
    try:
        assert await fresh.import_records(parse_lines(text.splitlines())) == len(exported)
        assert await fresh.export_records(channel_key=TEAM.channel_key) == exported
        assert await fresh.pins(channel_key=TEAM.channel_key) == await app.store.pins(
            channel_key=TEAM.channel_key
        )
        assert await fresh.latest_summary(conversation_key=TEAM.key) == (
            await app.store.latest_summary(conversation_key=TEAM.key)
        )
    finally:
        await fresh.close()


async def test_import_after_a_reset_restores_the_channel_and_refuses_duplicates(
    app: App,
) -> None:
    await fill(app)
    exported = await app.store.export_records(channel_key=TEAM.channel_key)
    with pytest.raises(ArchiveError, match="already in the database; nothing imported"):
        await app.store.import_records(exported)
    assert await app.store.export_records(channel_key=TEAM.channel_key) == exported
    for conversation in (TEAM, THREAD):
        await app.store.reset(conversation=conversation, include_pins=True)
    # The conversations' rows stay (with their generation), so import only the rest.
    rows = [r for r in exported if r["type"] != "conversation"]
    assert await app.store.import_records(rows) == len(rows)
    again = await app.store.export_records(channel_key=TEAM.channel_key)
    assert [r for r in again if r["type"] != "conversation"] == rows


def test_bad_export_lines_are_refused_with_their_line_number() -> None:
    with pytest.raises(ArchiveError, match="line 2: not JSON"):
        parse_lines(["", "{oops"])
    with pytest.raises(ArchiveError, match="line 1: pin lacks id"):
        parse_lines(['{"type": "pin"}'])
    with pytest.raises(ArchiveError, match="no known 'type'"):
        parse_lines(['{"type": "table"}'])


async def test_a_backup_taken_while_the_bot_runs_is_consistent(app: App, tmp_path: Path) -> None:
    await fill(app)
    target = tmp_path / "backups" / "copy.sqlite3"
    await app.store.backup(target)
    await app.engine.handle_message(IncomingMessage(TEAM, "U1", "Ana", "after", addressed=False))
    db = sqlite3.connect(target)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    db.close()
    copy = await SqliteStore.open(str(target))
    try:
        now = await app.store.export_records(channel_key=None)
        after = [r for r in now if r.get("content") == "after"]
        assert len(after) == 1
        assert await copy.export_records(channel_key=None) == [r for r in now if r not in after]
    finally:
        await copy.close()
    assert not list(target.parent.glob("*.partial"))


def test_backup_export_import_and_reset_from_the_shell(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    chat = bot("chat", "--config", config, "--channel", "team", stdin="hello\n/pin fact\n")
    assert chat.returncode == 0, chat.stderr
    dump = tmp_path / "team.jsonl"
    export = bot("export", "--config", config, "--channel", "team", "-o", str(dump))
    assert export.returncode == 0, export.stderr
    records = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [r["type"] for r in records] == ["conversation", "message", "message", "pin"]
    backup = bot("backup", "--config", config, str(tmp_path / "b.sqlite3"))
    assert backup.returncode == 0, backup.stderr
    reset = bot("reset", "--config", config, "--channel", "team", "--pins")
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout == "reset console:local:team: 2 messages deleted and its channel's pins\n"
    twice = bot("import", "--config", config, str(dump))
    assert twice.returncode == 1 and "conversation console:local:team is already" in twice.stderr
    rest = "".join(line + "\n" for line in dump.read_text().splitlines()[1:])
    restored = bot("import", "--config", config, stdin=rest)
    assert restored.returncode == 0, restored.stderr
    again = bot("export", "--config", config, "--channel", "console:local:team")
    assert again.stdout.splitlines()[1:] == dump.read_text().splitlines()[1:]
