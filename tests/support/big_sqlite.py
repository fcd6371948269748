"""A large SQLite database made fast: the real store's schema, then rows inserted directly
(as the store would leave them) rather than one transaction per message.

For the migration tests and ``bench/migrate_store.py``: channels with threads, an assistant
answer after every three messages, English and Chinese text of about a chat message's length,
an embedding vector for some messages, and a pin, a summary, usage and a profile fact per
channel.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from bot.store.sqlite.store import SqliteStore

_SAID = (
    "deploy billing rota release freeze incident review database backup schedule owner"
    " meeting friday staging latency budget migration 周五 发布 数据库 访客 密码 会议 预算"
)
WORDS = tuple(_SAID.split())
DIMENSIONS = 1536
"""Of each vector (float32), as OpenAI's text-embedding-3-small gives."""


@dataclass(frozen=True)
class Filled:
    path: Path
    messages: int
    vectors: int
    conversations: int


def _text(rng: random.Random, n: int) -> str:
    return f"note {n}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))


def fill(
    path: Path,
    *,
    messages: int,
    channels: int = 20,
    threads_per_channel: int = 4,
    vector_every: int = 10,
    seed: int = 1,
) -> Filled:
    """A new database at ``path`` holding ``messages`` messages (a vector for one in
    ``vector_every``; 0: none). Runs its own event loop: call it outside one."""
    asyncio.run(_create(path))
    rng = random.Random(seed)
    keys = []
    for c in range(channels):
        channel = f"slack:T1:C{c}"
        keys.append((channel, channel))
        keys += [(f"{channel}:17000{t}.0001", channel) for t in range(threads_per_channel)]
    db = sqlite3.connect(path)
    try:
        with db:
            db.executemany(
                "INSERT INTO conversations (key, channel_key, created_at) VALUES (?, ?, 1.0)",
                keys,
            )
            _messages(db, rng, [key for key, _ in keys], messages)
            vectors = _vectors(db, rng, messages, vector_every)
            _memory(db, keys)
    finally:
        db.close()
    return Filled(path, messages, vectors, len(keys))


async def _create(path: Path) -> None:
    store = await SqliteStore.open(str(path), index=False)
    await store.close()


def _messages(db: sqlite3.Connection, rng: random.Random, keys: list[str], count: int) -> None:
    rows = []
    asked: dict[str, int] = {}
    for n in range(1, count + 1):
        key = keys[n % len(keys)]
        answer = n % 4 == 0 and key in asked
        rows.append(
            (
                n,
                key,
                asked[key] if answer else None,
                "assistant" if answer else "user",
                "B1" if answer else f"U{n % 7}",
                "bot" if answer else f"person {n % 7}",
                _text(rng, n),
                20,
                None if answer else f"{n}.000100",
                float(n),
                int(n % 50 == 0),
            )
        )
        if not answer:
            asked[key] = n
        if len(rows) == 10_000:
            _insert_messages(db, rows)
            rows = []
    _insert_messages(db, rows)


def _insert_messages(db: sqlite3.Connection, rows: list[tuple[object, ...]]) -> None:
    db.executemany(
        "INSERT INTO messages (id, conversation, reply_to, role, author_id, author_name,"
        " content, tokens, platform_message_id, created_at, importance)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


def _vectors(db: sqlite3.Connection, rng: random.Random, count: int, every: int) -> int:
    if not every:
        return 0
    ids = range(every, count + 1, every)
    db.executemany(
        "INSERT INTO message_vectors (message_id, model, vector) VALUES (?, ?, ?)",
        ((n, "text-embedding-3-small", rng.randbytes(DIMENSIONS * 4)) for n in ids),
    )
    return len(ids)


def _memory(db: sqlite3.Connection, keys: list[tuple[str, str]]) -> None:
    channels = sorted({channel for _, channel in keys})
    db.executemany(
        "INSERT INTO pins (channel_key, text, tokens, author_id, author_name, created_at)"
        " VALUES (?, 'Release freeze starts Dec 15', 6, 'U1', 'person 1', 1.0)",
        [(channel,) for channel in channels],
    )
    db.executemany(
        "INSERT INTO summaries (conversation, content, tokens, covers_through_turn,"
        " message_count, first_message_id, last_message_id, compactions, rebuilt, model,"
        " created_at) VALUES (?, 'Facts:\n- FACT the rota is weekly', 9, 1, 1, 1, 1, 1, 0,"
        " 'gpt-4o-mini', 1.0)",
        [(channel,) for channel in channels],
    )
    db.executemany(
        "INSERT INTO usage (conversation, model, purpose, requests, prompt_tokens,"
        " completion_tokens) VALUES (?, 'gpt-4o-mini', 'chat', 3, 3000, 300)",
        [(key,) for key, _ in keys],
    )
    db.executemany(
        "INSERT INTO profile_facts (platform, workspace, user_id, text, tokens, source,"
        " created_at) VALUES ('slack', 'T1', ?, 'works on billing', 3, 'user', 1.0)",
        [(f"U{n}",) for n in range(7)],
    )
