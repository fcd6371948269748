"""The turns a prompt is chosen from are the database's truth: after any mix of messages
stored, replied to, edited, marked, deleted and reset, by this process or by another
connection to the same file (a plain ``sqlite3`` one, as the shell is), every page of turns and
every search for important turns equals what is computed from the rows from scratch."""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.models import Conversation, Role, StoredMessage
from bot.core.ports.store import TurnCost
from bot.store.sqlite.store import SqliteStore

ROOM = Conversation.console("room")
OTHER = Conversation.console("other")


@dataclass(frozen=True)
class Say:
    conversation: int  # 0: ROOM, 1: OTHER
    tokens: int
    important: bool
    reply_to: int | None  # index into the messages said so far


@dataclass(frozen=True)
class Edit:
    message: int
    tokens: int
    important: bool


@dataclass(frozen=True)
class Mark:
    message: int
    delta: int


@dataclass(frozen=True)
class Delete:
    message: int
    elsewhere: bool  # through another connection, as another process would


@dataclass(frozen=True)
class Recount:
    message: int
    tokens: int  # through another connection


@dataclass(frozen=True)
class Reset:
    pass


@dataclass(frozen=True)
class Look:
    """What a prompt asks: pages of turns (as a fit does, stopping early), then important
    turns older than where it stopped."""

    after_turn: int  # index into the messages said so far, or -1: none
    through: int  # how many of the newest messages the prompt does not see
    limit: int
    pages: int
    important: int  # how many important turns to look for (0: none)


says = st.builds(
    Say,
    conversation=st.sampled_from([0, 0, 0, 1]),
    tokens=st.integers(1, 50),
    important=st.booleans(),
    reply_to=st.none() | st.integers(0, 200),
)
looks = st.builds(
    Look,
    after_turn=st.sampled_from([-1, -1, -1]) | st.integers(0, 200),
    through=st.sampled_from([0, 0, 0, 1, 3]),
    limit=st.integers(1, 12),
    pages=st.integers(1, 3),
    important=st.sampled_from([0, 0]) | st.integers(1, 12),
)
actions = st.one_of(
    says,
    says,
    says,
    looks,
    looks,
    st.builds(
        Edit, message=st.integers(0, 200), tokens=st.integers(1, 50), important=st.booleans()
    ),
    st.builds(Mark, message=st.integers(0, 200), delta=st.sampled_from([1, -1])),
    st.builds(Delete, message=st.integers(0, 200), elsewhere=st.booleans()),
    st.builds(Recount, message=st.integers(0, 200), tokens=st.integers(1, 50)),
    st.just(Reset()),
)


def expected_turns(db: sqlite3.Connection, key: str, through: int, after: int) -> list[TurnCost]:
    rows = db.execute(
        "SELECT id, COALESCE(reply_to, id), tokens, importance > 0 OR marks > 0,"
        " CASE WHEN reply_to IS NULL AND role = 'user' THEN created_at END FROM messages"
        " WHERE conversation = ? AND id <= ? AND COALESCE(reply_to, id) > ? ORDER BY id",
        (key, through, after),
    ).fetchall()
    turns: dict[int, TurnCost] = {}
    for message_id, turn, tokens, important, opened_at in rows:
        old = turns.get(turn, TurnCost(turn, (), 0, False))
        turns[turn] = TurnCost(
            turn,
            (*old.ids, message_id),
            old.tokens + tokens,
            old.important or bool(important),
            opened_at if message_id == turn else old.opened_at,
        )
    return [turns[turn] for turn in sorted(turns, reverse=True) if turn <= through]


async def play(script: list[object], folder: Path) -> None:
    path = str(folder / "bot.sqlite3")
    store = await SqliteStore.open(path, index=False)
    other = sqlite3.connect(path, isolation_level=None)  # as another process (bot reset)
    said: list[tuple[int, str, str]] = []  # (stored id, conversation key, platform id)
    try:
        for number, action in enumerate(script):
            match action:
                case Say(conversation, tokens, important, reply_to):
                    where = ROOM if conversation == 0 else OTHER
                    parent = None
                    if reply_to is not None and said:
                        candidate = said[reply_to % len(said)]
                        parent = candidate[0] if candidate[1] == where.key else None
                    stored = await store.add_message(
                        conversation=where,
                        role=Role.USER if parent is None else Role.ASSISTANT,
                        author_id="a",
                        author_name="Ana",
                        content=f"message {number}",
                        tokens=tokens,
                        message_id=f"p{number}",
                        created_at=0.0,
                        reply_to=parent,
                        importance=int(important),
                    )
                    said.append((stored.id, where.key, f"p{number}"))
                case Edit(message, tokens, important) if said:
                    _, key, platform_id = said[message % len(said)]
                    await store.edit_message(
                        conversation_key=key,
                        message_id=platform_id,
                        content=f"edited {number}",
                        tokens=tokens,
                        importance=int(important),
                    )
                case Mark(message, delta) if said:
                    _, key, platform_id = said[message % len(said)]
                    channel = Conversation.from_key(key).channel_key
                    await store.mark_message(
                        channel_key=channel, message_id=platform_id, delta=delta
                    )
                case Delete(message, elsewhere) if said:
                    stored_id, key, platform_id = said[message % len(said)]
                    if elsewhere:
                        other.execute("DELETE FROM messages WHERE id = ?", (stored_id,))
                    else:
                        await store.delete_message(conversation_key=key, message_id=platform_id)
                case Recount(message, tokens) if said:
                    stored_id = said[message % len(said)][0]
                    other.execute(
                        "UPDATE messages SET tokens = ? WHERE id = ?", (tokens, stored_id)
                    )
                case Reset():
                    await store.reset(conversation=ROOM, include_pins=False)
                case Look(after_index, hidden, limit, pages, wanted):
                    await look(store, other, said, after_index, hidden, limit, pages, wanted)
        await look(store, other, said, -1, 0, 7, 1000, 50)
    finally:
        other.close()
        await store.close()


async def look(
    store: SqliteStore,
    db: sqlite3.Connection,
    said: list[tuple[int, str, str]],
    after_index: int,
    hidden: int,
    limit: int,
    pages: int,
    wanted: int,
) -> None:
    mine = [stored_id for stored_id, key, _ in said if key == ROOM.key]
    if not mine:
        return
    through = mine[max(0, len(mine) - 1 - hidden)]
    after = 0 if after_index < 0 or not said else said[after_index % len(said)][0] - 1
    after = min(after, through)
    expected = expected_turns(db, ROOM.key, through, after)
    seen: list[TurnCost] = []
    before: int | None = None
    for _ in range(pages):
        page = await store.turn_costs(
            conversation_key=ROOM.key,
            through_id=through,
            after_turn=after,
            before_turn=before,
            limit=limit,
        )
        assert len(page) <= limit
        assert bool(page) == (len(seen) < len(expected)), "a page is empty only at the end"
        if not page:
            break
        seen += page
        before = page[-1].turn
    assert seen == expected[: len(seen)]
    if not wanted:
        return
    # Important turns older than where the pages stopped (as a fit's boundary).
    stop = before if before is not None else through
    important = await store.important_turns(
        conversation_key=ROOM.key,
        through_id=through,
        after_turn=after,
        through_turn=stop,
        turns=wanted,
    )
    assert important == [t for t in expected if t.important and t.turn <= stop][:wanted]


@settings(max_examples=200, deadline=None)
@given(st.lists(actions, min_size=10, max_size=150))
def test_turns_match_the_database(script: list[object]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(play(script, Path(folder)))


async def chat(store: SqliteStore, number: int) -> StoredMessage:
    return await store.add_message(
        conversation=ROOM,
        role=Role.USER,
        author_id="a",
        author_name="Ana",
        content=f"message {number}",
        tokens=10,
        message_id=None,
        created_at=0.0,
    )


def test_a_long_conversation_pages_back_through_its_newest_turns() -> None:
    async def scenario(folder: Path) -> None:
        store = await SqliteStore.open(str(folder / "bot.sqlite3"), index=False)
        try:
            for number in range(120):
                stored = await chat(store, number)
                seen: list[int] = []  # the newest 20 turns, as a fit of 20 turns asks
                while len(seen) < 20 and (
                    page := await store.turn_costs(
                        conversation_key=ROOM.key,
                        through_id=stored.id,
                        after_turn=0,
                        before_turn=seen[-1] if seen else None,
                        limit=20 - len(seen),
                    )
                ):
                    seen += [turn.turn for turn in page]
                assert seen == list(range(stored.id, max(stored.id - 20, 0), -1))
        finally:
            await store.close()

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(scenario(Path(folder)))


def run_script(script: list[object]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(play(script, Path(folder)))


def chatter(count: int, *, important: bool = False) -> list[object]:
    return [Say(0, 5, important, None) for _ in range(count)]


def test_important_turns_below_a_shallow_look_are_found() -> None:
    shallow = Look(after_turn=-1, through=0, limit=2, pages=1, important=0)
    run_script(
        [
            *chatter(30, important=True),
            Look(after_turn=-1, through=0, limit=12, pages=3, important=0),
            *chatter(1),
            shallow,
            *chatter(1),
            shallow,
            Look(after_turn=-1, through=0, limit=2, pages=1, important=12),
        ]
    )


def test_deletions_edits_and_recounts_from_anywhere_are_seen() -> None:
    look = Look(after_turn=-1, through=0, limit=12, pages=3, important=5)
    run_script(
        [
            *chatter(12),
            look,
            Delete(message=3, elsewhere=False),
            look,
            Delete(message=5, elsewhere=True),
            look,
            Edit(message=7, tokens=40, important=True),
            look,
            Recount(message=9, tokens=33),
            look,
            Mark(message=10, delta=1),
            look,
        ]
    )


def test_a_reset_or_a_recount_by_another_process_is_seen() -> None:
    async def scenario(folder: Path) -> None:
        path = str(folder / "bot.sqlite3")
        store = await SqliteStore.open(path, index=False)
        elsewhere = await SqliteStore.open(path, index=False)  # as `bot reset` would
        try:

            async def say(number: int) -> int:
                return (await chat(store, number)).id

            async def turns(through: int) -> list[tuple[int, int]]:
                found: list[tuple[int, int]] = []
                while page := await store.turn_costs(
                    conversation_key=ROOM.key,
                    through_id=through,
                    after_turn=0,
                    before_turn=found[-1][0] if found else None,
                    limit=50,
                ):
                    found += [(turn.turn, turn.tokens) for turn in page]
                return found

            first = [await say(n) for n in range(5)]
            assert await turns(first[-1]) == [(i, 10) for i in reversed(first)]
            await elsewhere.reset(conversation=ROOM, include_pins=False)
            after = [await say(n) for n in range(5, 8)]
            assert await turns(after[-1]) == [(i, 10) for i in reversed(after)]
            await elsewhere.retokenize(lambda text: 7)  # another encoding: every count changes
            assert await turns(after[-1]) == [(i, 7) for i in reversed(after)]
        finally:
            await elsewhere.close()
            await store.close()

    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(scenario(Path(folder)))
