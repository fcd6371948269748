"""Load: 200 channels sending 50 messages each at once through the core, with the local
OpenAI-compatible server answering after random delays of a few milliseconds and a budget
small enough that summaries run throughout.

Every channel fires its 50 messages as separate tasks, in order, without waiting for the
answers (the way Discord's gateway hands events over); the channels interleave. Afterwards the
stored rows are the evidence: each message stored exactly once and in the order it was sent,
each answered right after its question, and the summaries made meanwhile covering exactly the
rows they claim, with each channel's planted fact carried forward and no other channel's.
Halfway through, ``bot backup`` runs as another process against the same file: no "database
is locked" there either, and its copy is consistent.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bot.config import parse_config
from bot.core.models import Conversation, IncomingMessage, Reply, ReplyKind
from bot.wiring import open_app
from tests.conftest import ConfigFactory, config_dict
from tests.support.fake_llm import FakeLLM

CHANNELS = 200
MESSAGES = 50


@pytest.fixture
def llm_process() -> Iterator[str]:
    """The test server in its own process (so its work is not counted against the bot's),
    answering after 0-4 ms."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.llm_process", "--max-delay", "0.004", "--seed", "7"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=30)


async def run_backup(config: Path, target: Path) -> tuple[int, bytes]:
    """``bot backup`` as a process of its own, against the database the load is writing."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "backup",
        "--config",
        str(config),
        str(target),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await process.communicate()
    return process.returncode or 0, stderr


def channel(n: int) -> Conversation:
    return Conversation(platform="slack", workspace=f"T{n % 3}", channel=f"C{n:03d}")


def spelled(k: int) -> str:
    """A number in letters (``12`` -> ``bc``): chatter without numbers is not important."""
    return "".join("abcdefghij"[int(digit)] for digit in str(k))


def text(n: int, i: int) -> str:
    """The first message of a channel is its one important fact (a code); the rest is chatter."""
    if i == 0:
        return f"FACT channel {n:03d} keeps code K{n * 7919 % 100_000:05d}"
    return f"message {spelled(i)} in channel {spelled(n)} about item {spelled(i * n % 97)}"


async def test_200_channels_of_50_messages_lose_nothing_and_keep_their_order(
    llm_process: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = config_dict(
        llm_process,
        tmp_path / "bot.sqlite3",
        memory={"max_context_tokens": 400, "keep_recent_turns": 2, "summary_retry_seconds": 0},
        llm={"max_retries": 0, "timeout_seconds": 60},
    )
    config = parse_config(raw, {})
    config_file = tmp_path / "config.yaml"
    config_file.write_text(yaml.safe_dump(raw))
    caplog.set_level(logging.WARNING)
    async with open_app(config) as app:
        engine = app.engine

        async def send(n: int, i: int) -> tuple[int, int, Reply | None]:
            message = IncomingMessage(
                channel(n), f"U{n}", f"user{n}", text(n, i), addressed=True, message_id=f"{i}"
            )
            return n, i, await engine.handle_message(message)

        tasks: list[asyncio.Task[tuple[int, int, Reply | None]]] = []
        backup: asyncio.Task[tuple[int, bytes]] | None = None
        for i in range(MESSAGES):
            for n in range(CHANNELS):
                tasks.append(asyncio.create_task(send(n, i)))
            await asyncio.sleep(0)  # the next round arrives while this one is in flight
            if i == MESSAGES // 2:  # an operator's backup from another process, mid-load
                backup = asyncio.create_task(run_backup(config_file, tmp_path / "copy.sqlite3"))
        results = await asyncio.gather(*tasks)
        assert backup is not None
        backup_status, backup_stderr = await backup
        with sqlite3.connect(app.store.path) as reader:  # WAL: reads alongside the bot
            (summaries_before_drain,) = reader.execute("SELECT COUNT(*) FROM summaries").fetchone()
        await engine.drain()
        path = app.store.path

    # The backup taken under load worked and is a consistent database.
    assert backup_status == 0, backup_stderr
    with sqlite3.connect(tmp_path / "copy.sqlite3") as copy:
        assert copy.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert copy.execute("SELECT COUNT(*) FROM messages").fetchone()[0] > 0

    # Every reply delivered, to the message it answers.
    for n, i, reply in results:
        assert reply is not None and reply.kind is ReplyKind.ANSWER, (n, i, reply)
        assert reply.text == f"echo: [user{n}] {text(n, i)}"
    assert summaries_before_drain > 0  # summaries ran while the load was on

    db = sqlite3.connect(path)
    assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    rows = db.execute(
        "SELECT id, conversation, role, content, reply_to FROM messages ORDER BY id"
    ).fetchall()
    by_channel: dict[str, list[tuple[int, str, str, int | None]]] = defaultdict(list)
    for row_id, key, role, content, reply_to in rows:
        by_channel[key].append((row_id, role, content, reply_to))
    assert len(rows) == CHANNELS * MESSAGES * 2
    for n in range(CHANNELS):
        stored = by_channel[channel(n).key]
        questions = [(r[0], r[2]) for r in stored if r[1] == "user"]
        # Exactly once each, in the order sent.
        assert [content for _, content in questions] == [text(n, i) for i in range(MESSAGES)]
        answers = {r[3]: r[2] for r in stored if r[1] == "assistant"}
        assert answers == {qid: f"echo: [user{n}] {content}" for qid, content in questions}

    # Summaries lose nothing: each covers exactly the stored rows up to its turn, and
    # carries its own channel's fact and no other's.
    summarized = 0
    for n in range(CHANNELS):
        key = channel(n).key
        found = db.execute(
            "SELECT covers_through_turn, message_count, content FROM summaries"
            " WHERE conversation = ? ORDER BY id DESC LIMIT 1",
            (key,),
        ).fetchone()
        if found is None:
            continue
        summarized += 1
        through, count, content = found
        (covered,) = db.execute(
            "SELECT COUNT(*) FROM messages WHERE conversation = ? AND COALESCE(reply_to, id) <= ?",
            (key, through),
        ).fetchone()
        assert count == covered, key
        assert f"FACT channel {n:03d} keeps code K{n * 7919 % 100_000:05d}" in content
        assert content.count("FACT channel") == 1
    db.close()
    assert summarized == CHANNELS

    # Nothing went wrong quietly: no locked database, no failed summary, no error.
    problems = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert problems == []
    assert b"locked" not in backup_stderr


async def test_a_long_message_and_the_short_one_after_it_are_stored_in_order(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    # A message over 20,000 characters is counted off the event loop; the one after it must
    # not overtake it (nor may the first messages of a new conversation overtake each other).
    where = Conversation.console("order")
    texts = ["long " * 5000, "short", "long again " * 3000, "last"]
    async with open_app(make_config()) as app:
        await asyncio.gather(
            *(
                app.engine.handle_message(IncomingMessage(where, "ana", "Ana", t, False))
                for t in texts
            )
        )
        stored = await app.store.messages_between(
            conversation_key=where.key, first_id=0, through_id=10**9
        )
    assert [m.content for m in stored] == texts
