"""The prompt log's part of the store port, on every store (SQLite, PostgreSQL, in memory):
each channel keeps its latest prompts, as sent, read back newest first with its threads',
never another channel's; a reset deletes a conversation's; /forget the asker's in their
workspace; a message deleted or edited on the platform those that may show it; exports leave
them out; and each conversation's summary versions since its last reset."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.core.models import Conversation, Person, Role, StoredMessage
from bot.core.ports.prompts import PromptRecord, RecallNote
from bot.core.ports.store import NewSummary, Store
from bot.store.sqlite.store import SqliteStore
from tests.support.stores import KIND_PARAMS, opened_store

GENERAL = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "5.0")
RANDOM = Conversation("slack", "T1", "C2")
NEIGHBOUR = Conversation("slack", "T1", "C10")  # its key starts as C1's does
ELSEWHERE = Conversation("slack", "T2", "C1")  # another workspace


@pytest.fixture(params=KIND_PARAMS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path, request) as opened:
        yield opened


def record(
    question: str,
    conversation: Conversation = GENERAL,
    *,
    at: float = 1.0,
    question_id: int = 7,
    person: str = "U1",
    recalled: tuple[Conversation, int] = (GENERAL, 3),
) -> PromptRecord:
    return PromptRecord(
        at=at,
        conversation_key=conversation.key,
        channel_key=conversation.channel_key,
        question_id=question_id,
        question=question,
        person=person,
        model="gpt-4o-mini",
        tokens=120,
        budget=4000,
        layers={"system": 40, "pins": 10, "profile": 0, "summary": 30, "recall": 15, "recent": 22},
        messages=(
            {"role": "system", "content": "You are helpful.\n\nPinned: deploys on Fridays"},
            {"role": "user", "content": f"[Ana] {question}"},
        ),
        recall=(
            RecallNote(
                stored_id=recalled[1],
                conversation_key=recalled[0].key,
                author_name="Bo",
                content="the budget for march is 4k",
                created_at=0.5,
                why="words: budget, march; meaning: 2nd nearest",
            ),
        ),
    )


async def questions(store: Store, channel: Conversation, limit: int = 50) -> list[str]:
    logged = await store.logged_prompts(channel_key=channel.channel_key, limit=limit)
    return [r.question for r in logged]


async def test_a_logged_prompt_is_read_back_as_it_was_sent(store: Store) -> None:
    sent = record('what is the budget for march? 预算 ✓ "quoted" \\ back\x00slash')
    await store.log_prompt(record=sent, keep=5)
    (back,) = await store.logged_prompts(channel_key=GENERAL.channel_key, limit=5)
    assert back.id > 0
    assert back.question.startswith("what is the budget for march? 预算 ✓")
    assert back.messages[0] == sent.messages[0]
    assert back.messages[1]["content"].startswith("[Ana] what is the budget")
    assert list(back.layers.items()) == list(sent.layers.items())  # in prompt order
    assert back.recall == sent.recall
    assert (back.at, back.model, back.tokens, back.budget, back.question_id, back.person) == (
        1.0,
        "gpt-4o-mini",
        120,
        4000,
        7,
        "U1",
    )


async def test_a_channel_keeps_only_its_latest_prompts_newest_first(store: Store) -> None:
    for n in range(5):
        await store.log_prompt(record=record(f"q{n}"), keep=3)
    assert await questions(store, GENERAL) == ["q4", "q3", "q2"]
    assert await questions(store, GENERAL, limit=2) == ["q4", "q3"]
    # The newest come first by when they were logged, whatever their clock said.
    await store.log_prompt(record=record("late", at=0.1), keep=3)
    assert await questions(store, GENERAL) == ["late", "q4", "q3"]


async def test_a_threads_prompts_are_its_channels_and_another_channels_never(
    store: Store,
) -> None:
    await store.log_prompt(record=record("in the channel"), keep=3)
    await store.log_prompt(record=record("in the thread", THREAD), keep=3)
    for n in range(4):
        await store.log_prompt(record=record(f"random {n}", RANDOM), keep=3)
    await store.log_prompt(record=record("next door", NEIGHBOUR), keep=3)
    assert await questions(store, GENERAL) == ["in the thread", "in the channel"]
    assert await questions(store, THREAD) == ["in the thread", "in the channel"]
    # Another channel's prompts count towards its own keep only.
    assert await questions(store, RANDOM) == ["random 3", "random 2", "random 1"]
    assert await questions(store, NEIGHBOUR) == ["next door"]
    # The thread's count towards its channel's keep.
    await store.log_prompt(record=record("again in the thread", THREAD), keep=2)
    assert await questions(store, GENERAL) == ["again in the thread", "in the thread"]


async def test_a_reset_deletes_the_conversations_logged_prompts_only(store: Store) -> None:
    await store.log_prompt(record=record("in the channel"), keep=5)
    await store.log_prompt(record=record("in the thread", THREAD), keep=5)
    await store.log_prompt(record=record("elsewhere", RANDOM), keep=5)
    await store.reset(conversation=GENERAL, include_pins=False)
    assert await questions(store, GENERAL) == ["in the thread"]
    await store.reset(conversation=THREAD, include_pins=False)
    assert await questions(store, GENERAL) == []
    assert await questions(store, RANDOM) == ["elsewhere"]
    await store.log_prompt(record=record("after the reset"), keep=5)
    assert await questions(store, GENERAL) == ["after the reset"]


async def test_forget_deletes_the_askers_prompts_in_every_channel_of_their_workspace(
    store: Store,
) -> None:
    await store.log_prompt(record=record("Ana in general"), keep=5)
    await store.log_prompt(record=record("Bo in general", person="U2"), keep=5)
    await store.log_prompt(record=record("Ana in the thread", THREAD), keep=5)
    await store.log_prompt(record=record("Ana in random", RANDOM), keep=5)
    await store.log_prompt(record=record("Ana elsewhere", ELSEWHERE), keep=5)
    assert await store.forget_prompts(person=Person("slack", "T1", "U1")) == 3
    assert await questions(store, GENERAL) == ["Bo in general"]
    assert await questions(store, RANDOM) == []
    assert await questions(store, ELSEWHERE) == ["Ana elsewhere"]  # another workspace's profile
    assert await store.forget_prompts(person=Person("slack", "T1", "U1")) == 0


def said(stored_id: int, created_at: float) -> StoredMessage:
    return StoredMessage(stored_id, stored_id, Role.USER, "U1", "Ana", "a secret", 2, created_at)


async def test_a_deleted_message_takes_the_prompts_that_may_show_it(store: Store) -> None:
    """Its channel's answered to it or later, or after it was said; in a memory group, the
    prompts of the workspace's channels that recalled it; nothing else."""
    for question, conversation, question_id, at in (
        ("before it", GENERAL, 5, 4.0),
        ("asked before, answered after", GENERAL, 6, 6.0),
        ("it", GENERAL, 7, 7.0),
        ("in the thread after it", THREAD, 9, 9.0),
        ("random's own", RANDOM, 20, 20.0),
    ):
        await store.log_prompt(
            record=record(question, conversation, at=at, question_id=question_id), keep=9
        )
    for question, recalled in (
        ("random recalled it", (GENERAL, 7)),
        ("random recalled another", (GENERAL, 70)),
        ("random recalled the thread's 7", (THREAD, 7)),
    ):
        await store.log_prompt(
            record=record(question, RANDOM, at=30.0, question_id=30, recalled=recalled), keep=9
        )
    await store.log_prompt(
        record=record("elsewhere", ELSEWHERE, at=30.0, question_id=30, recalled=(GENERAL, 7)),
        keep=9,
    )
    random = await questions(store, RANDOM)
    assert await store.drop_prompts(conversation=GENERAL, message=said(7, 5.0), group=False) == 3
    assert await questions(store, GENERAL) == ["before it"]
    assert await questions(store, RANDOM) == random  # not in a group: its channel only
    assert await store.drop_prompts(conversation=GENERAL, message=said(7, 5.0), group=True) == 1
    assert "random recalled it" not in await questions(store, RANDOM)
    assert len(await questions(store, RANDOM)) == len(random) - 1
    assert await questions(store, ELSEWHERE) == ["elsewhere"]


async def test_an_export_leaves_the_prompt_log_out(store: Store) -> None:
    await store.log_prompt(record=record("a secret question"), keep=5)
    for channel_key in (GENERAL.channel_key, None):
        exported = await store.export_records(channel_key=channel_key)
        assert "a secret question" not in json.dumps(exported)
    assert GENERAL.key not in await store.known_keys()


def summary_of(text: str, conversation: Conversation, through: int) -> NewSummary:
    return NewSummary(
        conversation_key=conversation.key,
        content=text,
        tokens=3,
        covers_through_turn=through,
        message_count=2 * through,
        first_message_id=1,
        last_message_id=2 * through,
        compactions=through - 1,
        rebuilt=False,
        model="m",
    )


async def test_the_summary_history_holds_each_version_since_the_last_reset(
    store: Store,
) -> None:
    async def summarize(text: str, conversation: Conversation, through: int) -> int:
        key = conversation.key
        latest = await store.latest_summary(conversation_key=key)
        saved = await store.save_summary(
            summary=summary_of(text, conversation, through),
            generation=await store.generation(conversation_key=key),
            previous_id=latest.id if latest else None,
        )
        assert saved is not None
        return saved.id

    await store.add_message(
        conversation=GENERAL,
        role=Role.USER,
        author_id="U1",
        author_name="Ana",
        content="hello",
        tokens=1,
        message_id=None,
        created_at=1.0,
    )
    await summarize("before the reset", GENERAL, 1)
    await store.reset(conversation=GENERAL, include_pins=False)
    for through, text in enumerate(("first", "second", "third"), 1):
        await summarize(text, GENERAL, through)
    await summarize("the thread's", THREAD, 1)
    history = await store.summary_history(conversation_key=GENERAL.key, limit=10)
    assert [(s.content, s.covers_through_turn) for s in history] == [
        ("third", 3),
        ("second", 2),
        ("first", 1),
    ]
    assert [
        s.content for s in await store.summary_history(conversation_key=GENERAL.key, limit=2)
    ] == [
        "third",
        "second",
    ]
    assert [
        s.content for s in await store.summary_history(conversation_key=THREAD.key, limit=5)
    ] == ["the thread's"]
    assert await store.summary_history(conversation_key=RANDOM.key, limit=5) == []


async def test_a_channels_prompts_are_found_by_index(tmp_path: Path) -> None:
    """Logging (with its trim), reading, a reset, /forget and a platform deletion find a
    channel's, a conversation's or a person's prompts through an index, however many other
    channels logged."""
    path = tmp_path / "bot.sqlite3"
    store = await SqliteStore.open(str(path))
    statements: list[str] = []
    try:
        for n in range(30):
            await store.log_prompt(record=record(f"q{n}", (GENERAL, RANDOM, THREAD)[n % 3]), keep=5)
        await store._db.set_trace_callback(statements.append)
        await store.log_prompt(record=record("one more"), keep=5)
        await store.logged_prompts(channel_key=GENERAL.channel_key, limit=5)
        await store.reset(conversation=THREAD, include_pins=False)
        await store.forget_prompts(person=Person("slack", "T1", "U1"))
        await store.drop_prompts(conversation=RANDOM, message=said(7, 5.0), group=False)
        await store._db.set_trace_callback(None)
    finally:
        await store.close()
    db = sqlite3.connect(path)
    plans = [
        [row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {s}")]
        for s in statements
        if "prompt_log" in s and not s.startswith("INSERT")
    ]
    db.close()
    assert len(plans) == 5  # the trim, the read, the reset's, /forget's, the deletion's
    assert all(not any("SCAN prompt_log" in step for step in plan) for plan in plans), plans
    assert all(any("USING INDEX prompt_log_by_" in step for step in plan) for plan in plans)
