"""The store port's contract, run against every implementation (SQLite, PostgreSQL and in
memory): what the core may count on from any store."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.core.memory.terms import query_terms
from bot.core.models import Conversation, FactSource, Person, Role
from bot.core.ports.settings import SettingChange
from bot.core.ports.spend import ModelCall, Spend, SpendLine
from bot.core.ports.store import CalibrationSample, Duplicate, NewSummary, Store, UsageTotals
from bot.store.archive import ArchiveError
from tests.support.stores import KIND_PARAMS, StoreKind, opened_store

GENERAL = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "5.0")
RANDOM = Conversation("slack", "T1", "C2")
ANA = Person("slack", "T1", "U1")


@pytest.fixture(params=KIND_PARAMS)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    async with opened_store(request.param, tmp_path, request) as opened:
        yield opened


async def add(
    store: Store,
    text: str,
    *,
    conversation: Conversation = GENERAL,
    message_id: str | None = None,
    reply_to: int | None = None,
    importance: int = 0,
    at: float = 1.0,
) -> int:
    stored = await store.add_message(
        conversation=conversation,
        role=Role.ASSISTANT if reply_to else Role.USER,
        author_id="bot" if reply_to else "U1",
        author_name="Bot" if reply_to else "Ana",
        content=text,
        tokens=len(text.split()),
        message_id=message_id,
        created_at=at,
        reply_to=reply_to,
        importance=importance,
    )
    return stored.id


def summary_of(text: str, conversation: Conversation = GENERAL) -> NewSummary:
    return NewSummary(
        conversation_key=conversation.key,
        content=text,
        tokens=3,
        covers_through_turn=1,
        message_count=2,
        first_message_id=1,
        last_message_id=2,
        compactions=0,
        rebuilt=False,
        model="m",
    )


async def test_messages_are_kept_in_turns_and_read_back_in_order(store: Store) -> None:
    question = await add(store, "what is the code")
    answer = await add(store, "it is 4242", reply_to=question)
    later = await add(store, "thanks")
    key = GENERAL.key
    assert question < answer < later
    recent = await store.recent_messages(
        conversation_key=key, through_id=later, after_turn=0, limit=10
    )
    assert [(m.content, m.turn_id, m.role) for m in recent] == [
        ("thanks", later, Role.USER),
        ("it is 4242", question, Role.ASSISTANT),
        ("what is the code", question, Role.USER),
    ]
    assert [
        m.id
        for m in await store.recent_messages(
            conversation_key=key, through_id=answer, after_turn=question, limit=10
        )
    ] == []
    between = await store.messages_between(conversation_key=key, first_id=answer, through_id=later)
    assert [m.id for m in between] == [answer, later]
    after = await store.messages_after_turn(conversation_key=key, after_turn=question, limit=10)
    assert [m.id for m in after] == [later]
    through = await store.messages_through_turn(
        conversation_key=key, through_turn=question, after_id=0, limit=10
    )
    assert [m.id for m in through] == [question, answer]
    by_id = await store.messages_by_id(conversation_key=key, ids=[later, question, 10**6])
    assert [m.id for m in by_id] == [question, later]
    window = await store.window_messages(conversation_key=key, ids=[question, later])
    assert [m.content for m in window] == ["what is the code", "thanks"]
    assert await store.last_message_id(conversation_key=key) == later
    assert await store.count_messages(conversation_key=key) == 3
    assert await store.has_answered(conversation_key=key)
    assert not await store.has_answered(conversation_key=RANDOM.key)
    assert await store.last_message_id(conversation_key=RANDOM.key) is None


async def test_a_platform_message_is_stored_once_per_conversation(store: Store) -> None:
    first = await add(store, "hello", message_id="5.0")
    with pytest.raises(Duplicate) as refused:
        await add(store, "hello again", message_id="5.0")
    assert refused.value.existing.id == first
    assert refused.value.existing.content == "hello"
    await add(store, "hello", conversation=THREAD, message_id="5.0")  # another conversation
    await add(store, "no platform id")
    await add(store, "no platform id")
    assert await store.count_messages(conversation_key=GENERAL.key) == 3
    found = await store.find_message(conversation_key=GENERAL.key, message_id="5.0")
    assert found is not None and found.id == first


async def test_edits_deletions_marks_and_links(store: Store) -> None:
    key = GENERAL.key
    first = await add(store, "the code is 1111", message_id="m1")
    await add(store, "the root", message_id="root")
    copy = await add(store, "the root", conversation=THREAD, message_id="root")
    assert await store.edit_message(
        conversation_key=key, message_id="m1", content="the code is 9090", tokens=4, importance=2
    )
    edited = await store.find_message(conversation_key=key, message_id="m1")
    assert edited is not None
    assert (edited.content, edited.tokens, edited.important) == ("the code is 9090", 4, True)
    assert not await store.edit_message(
        conversation_key=key, message_id="gone", content="x", tokens=1
    )
    # 📌 on the channel's message marks the thread's copy too; marks never go below zero
    assert await store.mark_message(channel_key=GENERAL.channel_key, message_id="root", delta=-1)
    assert await store.mark_message(channel_key=GENERAL.channel_key, message_id="root", delta=1)
    marked = await store.messages_by_id(conversation_key=THREAD.key, ids=[copy])
    assert marked[0].important
    assert await store.mark_message(channel_key=GENERAL.channel_key, message_id="root", delta=-1)
    unmarked = await store.messages_by_id(conversation_key=THREAD.key, ids=[copy])
    assert not unmarked[0].important
    assert not await store.mark_message(channel_key=RANDOM.key, message_id="root", delta=1)
    answer = await add(store, "noted", reply_to=first)
    assert await store.set_message_id(conversation_key=key, stored_id=answer, message_id="a1")
    linked = await store.find_message(conversation_key=key, message_id="a1")
    assert linked is not None and linked.id == answer
    assert await store.rename_author(
        conversation_key=key, stored_id=first, author_name="Ana B", tokens=5
    )
    renamed = await store.messages_by_id(conversation_key=key, ids=[first])
    assert (renamed[0].author_name, renamed[0].tokens) == ("Ana B", 5)
    assert await store.delete_message(conversation_key=key, message_id="m1")
    assert not await store.delete_message(conversation_key=key, message_id="m1")
    assert await store.find_message(conversation_key=key, message_id="m1") is None


async def test_turns_carry_when_the_person_opening_them_wrote(store: Store) -> None:
    """The prompt dates its turns by it; a turn the model's own message opens (a copy, or an
    answer whose question is gone) has no such time."""
    key = GENERAL.key
    question = await add(store, "when?", message_id="q", at=1_000.5)
    await add(store, "then", reply_to=question, at=2_000.0)
    important = await add(store, "decided", importance=1, at=3_000.0)
    copied = await store.add_message(
        conversation=GENERAL,
        role=Role.ASSISTANT,
        author_id="bot",
        author_name="Bot",
        content="seeded",
        tokens=1,
        message_id=None,
        created_at=4_000.0,
    )
    costs = await store.turn_costs(
        conversation_key=key, through_id=copied.id, after_turn=0, before_turn=None, limit=10
    )
    assert [(c.turn, c.opened_at) for c in costs] == [
        (copied.id, None),
        (important, 3_000.0),
        (question, 1_000.5),
    ]
    found = await store.important_turns(
        conversation_key=key, through_id=copied.id, after_turn=0, through_turn=copied.id, turns=5
    )
    assert [(c.turn, c.opened_at) for c in found] == [(important, 3_000.0)]
    await store.delete_message(conversation_key=key, message_id="q")
    costs = await store.turn_costs(
        conversation_key=key, through_id=copied.id, after_turn=0, before_turn=important, limit=10
    )
    assert [(c.turn, c.opened_at) for c in costs] == [(question, None)]


async def test_turn_costs_and_important_turns(store: Store) -> None:
    key = GENERAL.key
    one = await add(store, "one two three")
    reply = await add(store, "four five", reply_to=one)
    two = await add(store, "six", importance=1)
    three = await add(store, "seven eight")
    costs = await store.turn_costs(
        conversation_key=key, through_id=three, after_turn=0, before_turn=None, limit=10
    )
    assert [(c.turn, c.ids, c.tokens, c.important) for c in costs] == [
        (three, (three,), 2, False),
        (two, (two,), 1, True),
        (one, (one, reply), 5, False),
    ]
    older = await store.turn_costs(
        conversation_key=key, through_id=three, after_turn=0, before_turn=two, limit=1
    )
    assert [c.turn for c in older] == [one]
    cut = await store.turn_costs(
        conversation_key=key, through_id=one, after_turn=0, before_turn=None, limit=10
    )
    assert [(c.turn, c.ids) for c in cut] == [(one, (one,))]
    assert (
        await store.turn_costs(
            conversation_key=key, through_id=three, after_turn=three, before_turn=None, limit=10
        )
        == []
    )
    important = await store.important_turns(
        conversation_key=key, through_id=three, after_turn=0, through_turn=three, turns=5
    )
    assert [(c.turn, c.ids, c.important) for c in important] == [(two, (two,), True)]
    assert (
        await store.important_turns(
            conversation_key=key, through_id=three, after_turn=two, through_turn=three, turns=5
        )
        == []
    )


async def test_search_and_term_counts_within_a_conversation(store: Store) -> None:
    key = GENERAL.key
    for n in range(6):
        await add(store, f"lunch chatter {n}")
    tangerine = await add(store, "the guest wifi password is tangerine")
    await add(store, "tangerine lunch")
    newest = await add(store, "what is the wifi password")
    counts = await store.term_counts(conversation_key=key, terms=["tangerine", "lunch", "zebra"])
    assert counts.get("tangerine") == 2
    assert counts.get("lunch") == 7
    assert counts.get("zebra", 0) == 0
    hits = await store.search_messages(
        conversation_key=key, terms=["wifi", "password"], before_id=newest, limit=5
    )
    assert [m.id for m in hits] == [tangerine]
    ranked = await store.search_messages(
        conversation_key=key, terms=["tangerine", "password"], before_id=newest, limit=5
    )
    assert [m.id for m in ranked] == [tangerine, tangerine + 1]  # both terms, then one
    limited = await store.search_messages(
        conversation_key=key, terms=["lunch"], before_id=newest, limit=3
    )
    assert len(limited) == 3 and all("lunch" in m.content for m in limited)
    assert (
        await store.search_messages(
            conversation_key=RANDOM.key, terms=["tangerine"], before_id=newest, limit=5
        )
        == []
    )
    assert (
        await store.search_messages(
            conversation_key=key, terms=["tangerine"], before_id=tangerine, limit=5
        )
        == []
    )


async def test_a_search_term_finds_its_word_with_or_without_accents(store: Store) -> None:
    """As SQLite's FTS5 folds them; each spelling is counted as written."""
    plain = await add(store, "Zoe parks at the cafe")
    accented = await add(store, "Zoë joined, café au lait")
    greek = await add(store, "λόγος")
    newest = await add(store, "where is she?")
    for terms in (["zoë"], ["zoe"], ["café"]):
        hits = await store.search_messages(
            conversation_key=GENERAL.key, terms=terms, before_id=newest, limit=5
        )
        assert sorted(m.id for m in hits) == [plain, accented], terms
    hits = await store.search_messages(
        conversation_key=GENERAL.key, terms=["λογος"], before_id=newest, limit=5
    )
    assert [m.id for m in hits] == [], "FTS5 keeps Greek accents"
    hits = await store.search_messages(
        conversation_key=GENERAL.key, terms=["λόγοσ"], before_id=newest, limit=5
    )
    assert [m.id for m in hits] == [greek], "but folds the final sigma"
    counts = await store.term_counts(conversation_key=GENERAL.key, terms=["zoe", "zoë", "cafe"])
    assert counts == {"zoe": 1, "zoë": 1, "cafe": 1}


async def test_vectors_follow_their_message(store: Store) -> None:
    key = GENERAL.key
    first = await add(store, "first", message_id="m1")
    second = await add(store, "second")
    assert await store.unembedded(before_id=None, model="e", limit=10) == [
        (second, "second"),
        (first, "first"),
    ]
    assert await store.save_vector(message_id=first, content="first", model="e", vector=b"1")
    assert not await store.save_vector(message_id=second, content="stale", model="e", vector=b"")
    assert await store.save_vector(message_id=second, content="second", model="e", vector=b"2")
    assert await store.vector(message_id=first, model="e") == b"1"
    assert await store.vector(message_id=first, model="other") is None
    assert await store.vectors(conversation_key=key, before_id=10**6, model="e", limit=1) == [
        (second, b"2")
    ]
    assert await store.unembedded(before_id=None, model="e", limit=10) == []
    await store.edit_message(conversation_key=key, message_id="m1", content="edited", tokens=1)
    assert await store.vector(message_id=first, model="e") is None
    assert await store.unembedded(before_id=None, model="e", limit=10) == [(first, "edited")]


async def test_pins_and_profiles(store: Store) -> None:
    channel = GENERAL.channel_key
    first = await store.add_pin(
        channel_key=channel, text="deploys on Fridays", tokens=4, author_id="U1", author_name="Ana"
    )
    second = await store.add_pin(
        channel_key=channel, text="ask Bo", tokens=2, author_id="U2", author_name="Bo"
    )
    assert [(p.id, p.text, p.author_id) for p in await store.pins(channel_key=channel)] == [
        (first.id, "deploys on Fridays", "U1"),
        (second.id, "ask Bo", "U2"),
    ]
    assert not await store.remove_pin(channel_key=RANDOM.channel_key, pin_id=first.id)
    assert await store.remove_pin(channel_key=channel, pin_id=first.id)
    assert [p.id for p in await store.pins(channel_key=channel)] == [second.id]
    assert await store.profile_forgot_at(person=ANA) is None
    tea = await store.add_profile_fact(
        person=ANA, text="likes tea", tokens=2, source=FactSource.USER
    )
    await store.add_profile_fact(person=ANA, text="in Oslo", tokens=2, source=FactSource.SUMMARY)
    pins, facts = await store.pins_and_profile(channel_keys=[channel], person=ANA)
    assert [p.id for p in pins] == [second.id]
    assert [(f.text, f.source) for f in facts] == [
        ("likes tea", FactSource.USER),
        ("in Oslo", FactSource.SUMMARY),
    ]
    assert (await store.pins_and_profile(channel_keys=[channel], person=None))[1] == []
    assert await store.remove_profile_facts(person=ANA, fact_id=tea.id) == 1
    assert await store.profile_forgot_at(person=ANA) is not None
    assert await store.remove_profile_facts(person=ANA, fact_id=None) == 1
    assert await store.profile_facts(person=ANA) == []
    assert await store.remove_profile_facts(person=ANA, fact_id=None) == 0


async def test_a_workspace_pin_is_read_with_each_channel_of_its_workspace_only(
    store: Store,
) -> None:
    """Pins kept under a workspace's key (``/pin --everywhere``) come with any of its
    channels' own in one read, by id, and are no channel's own nor another workspace's."""
    elsewhere = Conversation("slack", "T2", "C1")
    own = await store.add_pin(
        channel_key=GENERAL.channel_key, text="C1 only", tokens=2, author_id="U1", author_name="Ana"
    )
    everywhere = await store.add_pin(
        channel_key=GENERAL.workspace_key,
        text="all of T1",
        tokens=3,
        author_id="U1",
        author_name="Ana",
    )
    await store.add_pin(
        channel_key=elsewhere.workspace_key,
        text="all of T2",
        tokens=3,
        author_id="U9",
        author_name="Zoe",
    )
    pins, _ = await store.pins_and_profile(channel_keys=GENERAL.pin_keys, person=ANA)
    assert [(p.text, p.everywhere) for p in pins] == [("C1 only", False), ("all of T1", True)]
    pins, _ = await store.pins_and_profile(channel_keys=RANDOM.pin_keys, person=None)
    assert [p.id for p in pins] == [everywhere.id]
    assert [p.id for p in await store.pins(channel_key=GENERAL.channel_key)] == [own.id]
    pins, _ = await store.pins_and_profile(channel_keys=elsewhere.pin_keys, person=None)
    assert [p.text for p in pins] == ["all of T2"]
    assert await store.remove_pin(channel_key=GENERAL.workspace_key, pin_id=everywhere.id)
    assert [p.id for p in await store.pins(channel_key=GENERAL.workspace_key)] == []


async def test_a_summary_is_saved_only_if_not_superseded(store: Store) -> None:
    key = GENERAL.key
    await add(store, "hello")
    assert await store.generation(conversation_key=key) == 0
    first = await store.save_summary(
        summary=summary_of("Ana said hello."), generation=0, previous_id=None
    )
    assert first is not None and first.content == "Ana said hello."
    # another summary made from the same starting point lost the race
    assert (
        await store.save_summary(summary=summary_of("late"), generation=0, previous_id=None) is None
    )
    second = await store.save_summary(
        summary=summary_of("then more"), generation=0, previous_id=first.id
    )
    assert second is not None and second.id != first.id
    assert await store.latest_summary(conversation_key=key) == second
    await store.reset(conversation=GENERAL, include_pins=False)
    assert await store.generation(conversation_key=key) == 1
    assert await store.latest_summary(conversation_key=key) is None
    # one made before the reset is discarded
    assert (
        await store.save_summary(summary=summary_of("stale"), generation=0, previous_id=None)
        is None
    )
    fresh = await store.save_summary(summary=summary_of("anew"), generation=1, previous_id=None)
    assert fresh is not None


async def test_usage_and_calibrations(store: Store) -> None:
    key = GENERAL.key
    for prompt, completion in ((10, 2), (20, 3)):
        await store.record_usage(
            conversation_key=key,
            model="m",
            purpose="chat",
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
    await store.record_usage(
        conversation_key=key, model="s", purpose="summary", prompt_tokens=5, completion_tokens=1
    )
    await store.record_usage(
        conversation_key=key,
        model="m",
        purpose="chat",
        prompt_tokens=7,
        completion_tokens=4,
        estimated=True,  # counted by the bot: the server sent no usage
    )
    assert list(await store.usage(conversation_key=key)) == [
        UsageTotals("m", "chat", 3, 37, 9, estimated=1),
        UsageTotals("s", "summary", 1, 5, 1),
    ]
    assert await store.usage(conversation_key=RANDOM.key) == []
    # Each model keeps its newest samples, oldest first; another model's are left alone.
    samples = [CalibrationSample("m", 100 + i, 10 * i, i, 120 + 30 * i) for i in range(5)]
    other = CalibrationSample("s", 50, 0, 0, 55)
    await store.add_calibration_sample(sample=samples[0], keep=3)
    await store.add_calibration_sample(sample=other, keep=3)
    for sample in samples[1:]:
        await store.add_calibration_sample(sample=sample, keep=3)
    assert list(await store.calibration_samples()) == [other, *samples[2:]]


async def test_reset_forgets_one_conversation(store: Store) -> None:
    kept = await add(store, "in the thread", conversation=THREAD)
    last = await add(store, "hello")
    await add(store, "hi", reply_to=last)
    await store.add_pin(
        channel_key=GENERAL.channel_key, text="p", tokens=1, author_id="U1", author_name="Ana"
    )
    assert await store.reset(conversation=GENERAL, include_pins=False) == 2
    assert await store.count_messages(conversation_key=GENERAL.key) == 0
    assert [m.id for m in await store.messages_by_id(conversation_key=THREAD.key, ids=[kept])] == [
        kept
    ]
    assert len(await store.pins(channel_key=GENERAL.channel_key)) == 1
    assert await store.reset(conversation=GENERAL, include_pins=True) == 0
    assert await store.pins(channel_key=GENERAL.channel_key) == []
    assert await add(store, "new") > last  # ids are not used again
    assert await store.known_keys() == {GENERAL.key, THREAD.key}


async def test_requests_meta_and_newest_messages(store: Store) -> None:
    assert await store.claim_request(request_id="t1", keep_seconds=60)
    assert not await store.claim_request(request_id="t1", keep_seconds=60)
    assert await store.get_meta(key="k") is None
    await store.set_meta(key="k", value="1")
    await store.set_meta(key="k", value="2")
    assert await store.get_meta(key="k") == "2"
    kept = await asyncio.gather(*(store.meta_once(key="once", value=f"v{i}") for i in range(5)))
    assert len(set(kept)) == 1 and kept[0] in {f"v{i}" for i in range(5)}
    assert await store.meta_once(key="once", value="later") == kept[0]
    assert await store.meta_once(key="k", value="3") == "2"
    await add(store, "old", message_id="1.0", at=10.0)
    await add(store, "new", message_id="2.0", at=20.0)
    await add(store, "elsewhere", conversation=RANDOM, message_id="3.0", at=15.0)
    await add(store, "no id", at=30.0)
    newest = await store.newest_messages(platform="slack", since=12.0)
    assert [(n.conversation_key, n.message_id) for n in newest] == [
        (GENERAL.key, "2.0"),
        (RANDOM.key, "3.0"),
    ]
    assert await store.newest_messages(platform="discord", since=0.0) == []
    infos = {info.key: info for info in await store.conversations()}
    assert (infos[GENERAL.key].messages, infos[GENERAL.key].last_message_at) == (3, 30.0)


async def test_a_recount_changes_every_count(store: Store) -> None:
    await add(store, "one two three")
    await store.add_pin(
        channel_key=GENERAL.channel_key, text="p", tokens=1, author_id="U1", author_name="Ana"
    )
    assert await store.retokenize(count=lambda text: 7) == 1
    [message] = await store.messages_by_id(conversation_key=GENERAL.key, ids=[1])
    assert message.tokens == 7
    assert [p.tokens for p in await store.pins(channel_key=GENERAL.channel_key)] == [7]


def _sorted(records: list[dict[str, object]]) -> list[str]:
    """Records comparable across stores (a conversation's creation time is the store's)."""
    return sorted(
        json.dumps(
            {k: v for k, v in r.items() if r["type"] != "conversation" or k != "created_at"},
            sort_keys=True,
        )
        for r in records
    )


@pytest.mark.parametrize("target", KIND_PARAMS)
async def test_an_export_is_imported_whole_into_either_store(
    store: Store, target: StoreKind, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    question = await add(store, "what is the code", message_id="m1")
    await add(store, "4242", reply_to=question)
    await add(store, "in the thread", conversation=THREAD)
    await add(store, "elsewhere", conversation=RANDOM)
    await store.add_pin(
        channel_key=GENERAL.channel_key, text="p", tokens=1, author_id="U1", author_name="Ana"
    )
    await store.save_summary(summary=summary_of("s"), generation=0, previous_id=None)
    await store.add_profile_fact(person=ANA, text="likes tea", tokens=2, source=FactSource.USER)
    await change(store, GENERAL.key, "model", "gpt-4o")
    await change(store, GENERAL.key, "recall", "off")
    await change(store, GENERAL.key, "recall", None)  # only its changes are left
    await change(store, THREAD.key, "model", "llama3", by="U2", at=2.0)
    await change(store, RANDOM.key, "model", "elsewhere")
    await change(store, "slack:T1:C10", "model", "elsewhere")  # its key starts as C1's does
    await store.record_call(call=model_call(GENERAL, at=1.0, cost=0.5))  # not exported
    channel = await store.export_records(channel_key=GENERAL.channel_key)
    assert {r["type"] for r in channel} == {
        "conversation",
        "message",
        "pin",
        "summary",
        "profile_fact",
        "setting",
        "setting_change",
    }
    assert "elsewhere" not in json.dumps(channel)
    assert sorted((r["scope"], r["key"]) for r in channel if r["type"] == "setting") == [
        (GENERAL.key, "model"),
        (THREAD.key, "model"),
    ]
    assert sum(r["type"] == "setting_change" for r in channel) == 4
    everything = await store.export_records(channel_key=None)
    scopes = [GENERAL.key, THREAD.key, RANDOM.key, "slack:T1:C10"]
    (tmp_path / "there").mkdir()
    async with opened_store(target, tmp_path / "there", request) as there:
        imported = await there.import_records(records=everything)
        assert imported.records == len(everything)
        assert _sorted(await there.export_records(channel_key=None)) == _sorted(everything)
        assert await there.settings_of(scopes=scopes) == await store.settings_of(scopes=scopes)
        for scope in scopes:
            assert await there.setting_changes(
                scope=scope, limit=10
            ) == await store.setting_changes(scope=scope, limit=10)
        # New changes take ids past the imported ones: they are the newest.
        await change(there, GENERAL.key, "model", "newer", at=0.5)
        assert (await there.setting_changes(scope=GENERAL.key, limit=1))[0].new == "newer"
        with pytest.raises(ArchiveError, match="nothing imported"):
            await there.import_records(records=channel)
        assert (await there.usage(conversation_key=GENERAL.key)) == []
        assert await there.spend(since=None, until=None) == []


async def test_an_import_skips_the_settings_already_here_and_refuses_others(
    store: Store, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    await add(store, "hello")
    await change(store, GENERAL.key, "model", "a")
    await change(store, GENERAL.key, "model", "b", at=2.0)
    await change(store, THREAD.key, "recall", "off")
    exported = await store.export_records(channel_key=GENERAL.channel_key)
    settings = sum(r["type"] in ("setting", "setting_change") for r in exported)
    assert settings == 5
    # Restoring the channel after a reset, which kept its settings: they are skipped.
    await store.reset(conversation=GENERAL, include_pins=True)
    imported = await store.import_records(records=exported)
    assert (imported.records, imported.known_settings) == (len(exported) - settings, settings)
    assert await store.count_messages(conversation_key=GENERAL.key) == 1
    assert len(await store.setting_changes(scope=GENERAL.key, limit=10)) == 2
    # Settings changed here since the export: refused, nothing written.
    await store.reset(conversation=GENERAL, include_pins=True)
    await change(store, THREAD.key, "model", "c", by="U2", at=3.0)
    with pytest.raises(ArchiveError) as refused:
        await store.import_records(records=exported)
    assert str(refused.value) == (
        f'{THREAD.key} has other settings here (model: "c" here, not set in the file);'
        " nothing imported (change them here to the file's with /settings, or import into"
        " another database)"
    )
    assert await store.count_messages(conversation_key=GENERAL.key) == 0
    # A change whose id is another change's in the database imported into: refused.
    (tmp_path / "there").mkdir()
    async with opened_store("sqlite", tmp_path / "there", request) as there:
        await change(there, RANDOM.key, "model", "x")
        with pytest.raises(ArchiveError, match=r"setting_change 1 is another change here \("):
            await there.import_records(records=exported)
        assert await there.settings_of(scopes=[GENERAL.key, THREAD.key]) == {}


async def test_term_counts_leave_other_conversations_out(store: Store) -> None:
    await add(store, "tangerine here")
    for n in range(3):
        await add(store, f"tangerine chatter {n}", conversation=RANDOM)
    counts = await store.term_counts(conversation_key=GENERAL.key, terms=["tangerine"])
    assert counts.get("tangerine") == 1


async def test_a_message_holding_a_nul_character_is_stored_and_read_back(store: Store) -> None:
    """PostgreSQL keeps no NUL in text: every store reads back what storing returned, the
    rest of the text intact, and finds it."""
    stored = await store.add_message(
        conversation=GENERAL,
        role=Role.USER,
        author_id="U1",
        author_name="A\x00na",
        content="the tangerine\x00 code",
        tokens=3,
        message_id="m1",
        created_at=1.0,
    )
    assert stored.content.replace("\ufffd", "\x00") == "the tangerine\x00 code"
    found = await store.find_message(conversation_key=GENERAL.key, message_id="m1")
    assert found == stored
    hits = await store.search_messages(
        conversation_key=GENERAL.key, terms=["tangerine"], before_id=10**9, limit=5
    )
    assert [m.id for m in hits] == [stored.id]
    pin = await store.add_pin(
        channel_key=GENERAL.channel_key, text="p\x00", tokens=1, author_id="U1", author_name="A"
    )
    assert list(await store.pins(channel_key=GENERAL.channel_key)) == [pin]


async def test_chinese_and_english_are_found_by_their_words(store: Store) -> None:
    tea = await add(store, "我们明天去北京喝茶")
    code = await add(store, "the launch code is 4242")
    await add(store, "nothing to see here")
    for question, wanted in (("北京怎么样", tea), ("what was the launch code?", code)):
        hits = await store.search_messages(
            conversation_key=GENERAL.key, terms=query_terms(question), before_id=10**9, limit=5
        )
        assert hits and hits[0].id == wanted, question


async def test_term_counts_follow_edits_deletions_and_resets(store: Store) -> None:
    key = GENERAL.key
    await add(store, "tangerine pie", message_id="m1")
    await add(store, "tangerine jam", message_id="m2")
    await store.edit_message(conversation_key=key, message_id="m1", content="apple pie", tokens=2)
    assert await store.term_counts(conversation_key=key, terms=["tangerine", "apple", "pie"]) == {
        "tangerine": 1,
        "apple": 1,
        "pie": 1,
    }
    found = await store.search_messages(
        conversation_key=key, terms=["apple"], before_id=10**9, limit=5
    )
    assert [m.content for m in found] == ["apple pie"]
    await store.delete_message(conversation_key=key, message_id="m2")
    assert await store.term_counts(conversation_key=key, terms=["tangerine", "jam"]) == {
        "tangerine": 0,
        "jam": 0,
    }
    await store.reset(conversation=GENERAL, include_pins=False)
    assert await store.term_counts(conversation_key=key, terms=["apple"]) == {"apple": 0}


# -- settings set per channel or thread ------------------------------------------------------

NAMES = {"U1": "Ana", "U2": "Bo"}


async def change(
    store: Store, scope: str, key: str, value: str | None, *, by: str = "U1", at: float = 1.0
) -> SettingChange:
    return await store.change_setting(
        scope=scope, key=key, value=value, by_id=by, by_name=NAMES[by], at=at
    )


async def test_settings_are_kept_per_scope_until_cleared(store: Store) -> None:
    channel, thread = GENERAL.key, THREAD.key
    made = await change(store, channel, "model", "gpt-4o")
    assert made == SettingChange(channel, "model", None, "gpt-4o", "U1", "Ana", 1.0)
    await change(store, channel, "recall", "off")
    await change(store, thread, "model", "llama3")
    assert await store.settings_of(scopes=[channel, thread, RANDOM.key]) == {
        channel: {"model": "gpt-4o", "recall": "off"},
        thread: {"model": "llama3"},
    }
    assert await store.settings_of(scopes=[thread]) == {thread: {"model": "llama3"}}
    assert await store.settings_of(scopes=[]) == {}
    replaced = await change(store, channel, "model", "gpt-4.1", by="U2", at=2.0)
    assert (replaced.old, replaced.new, replaced.by_name) == ("gpt-4o", "gpt-4.1", "Bo")
    cleared = await change(store, channel, "recall", None, at=3.0)
    assert (cleared.old, cleared.new) == ("off", None)
    await change(store, thread, "model", None)
    assert await store.settings_of(scopes=[channel, thread]) == {channel: {"model": "gpt-4.1"}}


async def test_each_change_is_logged_newest_first_and_one_that_changes_nothing_is_not(
    store: Store,
) -> None:
    scope = GENERAL.key
    await change(store, scope, "model", "a", at=1.0)
    same = await change(store, scope, "model", "a", by="U2", at=2.0)
    assert (same.old, same.new) == ("a", "a")
    unset = await change(store, scope, "recall", None, at=3.0)  # clearing what is not set
    assert (unset.old, unset.new) == (None, None)
    await change(store, scope, "model", "b", by="U2", at=4.0)
    await change(store, THREAD.key, "model", "c", at=5.0)  # the thread's own
    await change(store, scope, "model", None, at=6.0)
    assert list(await store.setting_changes(scope=scope, limit=10)) == [
        SettingChange(scope, "model", "b", None, "U1", "Ana", 6.0),
        SettingChange(scope, "model", "a", "b", "U2", "Bo", 4.0),
        SettingChange(scope, "model", None, "a", "U1", "Ana", 1.0),
    ]
    assert [c.at for c in await store.setting_changes(scope=scope, limit=2)] == [6.0, 4.0]
    assert [c.new for c in await store.setting_changes(scope=THREAD.key, limit=10)] == ["c"]
    assert await store.setting_changes(scope=RANDOM.key, limit=10) == []


async def test_scopes_are_found_by_a_setting_within_a_prefix_in_code_point_order(
    store: Store,
) -> None:
    for scope in (
        "slack:T1:C1",
        "slack:T1:C1:5.0",
        "slack:T1:a1",
        "slack:T1:B1",
        "slack:T10:C1",  # another workspace, its name starting as T1's does
        "slack:TX:C1",  # what a LIKE pattern's _ would match
        "discord:T1:C1",
    ):
        await change(store, scope, "memory_group", "ops")
    await change(store, "slack:T1:C2", "memory_group", "dev")
    await change(store, "slack:T1:C3", "model", "ops")  # the value, under another key
    await change(store, "slack:T1:C4", "memory_group", "ops")
    await change(store, "slack:T1:C4", "memory_group", None)
    group = {"key": "memory_group", "value": "ops"}
    assert await store.scopes_where(prefix="slack:T1:", **group) == [
        "slack:T1:B1",
        "slack:T1:C1",
        "slack:T1:C1:5.0",
        "slack:T1:a1",
    ]
    assert await store.scopes_where(prefix="slack:T_:", **group) == []
    assert await store.scopes_where(prefix="slack:T%", **group) == []
    assert await store.scopes_where(prefix="", key="memory_group", value="dev") == ["slack:T1:C2"]


async def test_settings_outlast_a_reset_and_their_scopes_are_known(store: Store) -> None:
    await add(store, "hello")
    await change(store, GENERAL.key, "model", "a")
    await change(store, "slack:T1:C7", "model", "b")  # a channel holding only a setting
    await change(store, "slack:T1:C8", "model", "c")
    await change(store, "slack:T1:C8", "model", None)  # only a change
    assert await store.reset(conversation=GENERAL, include_pins=True) == 1
    assert await store.settings_of(scopes=[GENERAL.key]) == {GENERAL.key: {"model": "a"}}
    assert len(await store.setting_changes(scope=GENERAL.key, limit=10)) == 1
    assert await store.known_keys() == {GENERAL.key, "slack:T1:C7", "slack:T1:C8"}


# -- leases and the messages awaiting an answer ----------------------------------------------


async def test_a_lease_is_one_holders_until_it_runs_out_or_is_dropped(store: Store) -> None:
    assert await store.take_lease(name="summary:x", holder="a", seconds=60)
    assert not await store.take_lease(name="summary:x", holder="b", seconds=60)
    assert await store.take_lease(name="summary:x", holder="a", seconds=60)  # renewed
    await store.drop_lease(name="summary:x", holder="b")  # not b's: left alone
    assert not await store.take_lease(name="summary:x", holder="b", seconds=60)
    await store.drop_lease(name="summary:x", holder="a")
    assert await store.take_lease(name="summary:x", holder="b", seconds=60)
    assert await store.take_lease(name="summary:y", holder="a", seconds=60)  # another name


async def test_a_lease_that_ran_out_goes_to_the_next_holder(store: Store) -> None:
    assert await store.take_lease(name="catch-up", holder="a", seconds=-1)
    assert await store.take_lease(name="catch-up", holder="b", seconds=60)
    assert not await store.take_lease(name="catch-up", holder="a", seconds=60)


async def awaiting(store: Store, text: str, holder: str, where: Conversation = GENERAL) -> int:
    stored = await store.add_message(
        conversation=where,
        role=Role.USER,
        author_id="U1",
        author_name="Ana",
        content=text,
        tokens=2,
        message_id=f"m-{text}",
        created_at=1.0,
        awaited_by=holder,
    )
    return stored.id


async def test_the_oldest_message_awaiting_an_answer_is_known_until_it_is_answered(
    store: Store,
) -> None:
    assert await store.first_awaiting(conversation_key=GENERAL.key) is None
    await add(store, "not for the bot")
    first = await awaiting(store, "first", "a")
    second = await awaiting(store, "second", "b")
    elsewhere = await awaiting(store, "elsewhere", "a", RANDOM)
    assert await store.first_awaiting(conversation_key=GENERAL.key) == first
    await store.answered(stored_id=first)
    assert await store.first_awaiting(conversation_key=GENERAL.key) == second
    await store.answered(stored_id=second)
    assert await store.first_awaiting(conversation_key=GENERAL.key) is None
    assert await store.first_awaiting(conversation_key=RANDOM.key) == elsewhere


async def test_a_message_deleted_or_reset_awaits_nothing(store: Store) -> None:
    await awaiting(store, "deleted", "a")
    await store.delete_message(conversation_key=GENERAL.key, message_id="m-deleted")
    assert await store.first_awaiting(conversation_key=GENERAL.key) is None
    await awaiting(store, "reset", "a", RANDOM)
    await store.reset(conversation=RANDOM, include_pins=False)
    assert await store.first_awaiting(conversation_key=RANDOM.key) is None


async def test_messages_of_a_process_whose_lease_ran_out_are_adopted_once(store: Store) -> None:
    assert await store.take_lease(name="process:alive", holder="alive", seconds=60)
    assert await store.take_lease(name="process:dead", holder="dead", seconds=-1)
    kept = await awaiting(store, "kept", "alive")
    orphan = await awaiting(store, "orphan", "dead")
    answer = await add(store, "half done", reply_to=orphan)
    lost = await awaiting(store, "lost", "never-started", THREAD)
    other = await store.add_message(
        conversation=Conversation("discord", "G1", "C9"),
        role=Role.USER,
        author_id="U1",
        author_name="Ana",
        content="on discord",
        tokens=2,
        message_id="d1",
        created_at=1.0,
        awaited_by="dead",
    )
    await store.showing(stored_id=orphan, message_id="thinking-1")
    adopted = await store.adopt_awaiting(platform="slack", holder="me", limit=10)
    assert [(a.conversation_key, a.question.id) for a in adopted] == [
        (GENERAL.key, orphan),
        (THREAD.key, lost),
    ]
    assert adopted[0].question.content == "orphan"
    assert adopted[0].answer is not None and adopted[0].answer.id == answer
    assert adopted[1].answer is None
    assert adopted[0].queued_at > 0
    assert adopted[0].shown_as == "thinking-1" and adopted[1].shown_as is None
    # Now "me"'s, whose lease runs: nobody adopts them again, nor "alive"'s.
    assert await store.take_lease(name="process:me", holder="me", seconds=60)
    assert await store.adopt_awaiting(platform="slack", holder="you", limit=10) == []
    assert await store.first_awaiting(conversation_key=GENERAL.key) == kept
    assert [
        a.question.id for a in await store.adopt_awaiting(platform="discord", holder="me", limit=10)
    ] == [other.id]


async def test_waiting_for_an_answer_ends_by_its_time_at_the_latest(store: Store) -> None:
    loop = asyncio.get_running_loop()
    began = loop.time()
    await store.wait_answered(conversation_key=GENERAL.key, within=0.2)
    assert 0.15 < loop.time() - began < 5


# -- the ledger of model calls -------------------------------------------------------------

C10 = Conversation("slack", "T1", "C10")  # its key starts as C1's does
ELSEWHERE = Conversation("slack", "T2", "C1")  # another workspace: U1 there is someone else
T10 = Conversation("slack", "T10", "C1")  # its workspace starts as T1's does


def model_call(
    conversation: Conversation | None,
    *,
    at: float,
    model: str = "gpt-4o",
    purpose: str = "chat",
    person: str = "U1",
    prompt: int = 10,
    cached: int = 0,
    completion: int = 2,
    cost: float = 0.0,
    estimated: bool = False,
) -> ModelCall:
    return ModelCall(
        at, conversation, person, model, purpose, prompt, cached, completion, cost, estimated
    )


async def record(store: Store, *calls: ModelCall) -> None:
    for call in calls:
        await store.record_call(call=call)


def spent(found: Sequence[Spend]) -> list[tuple[object, ...]]:
    """Each model's sums; costs compared to a trillionth (sums of floats may differ in
    their last bit between stores)."""
    return [dataclasses.astuple(s) for s in found]


def cost(value: float) -> object:
    return pytest.approx(value, abs=1e-12, rel=0)


async def test_calls_are_summed_per_channel_with_its_threads_by_model(store: Store) -> None:
    await record(
        store,
        model_call(GENERAL, at=100, model="gpt-4o", prompt=10, cached=4, completion=2, cost=0.1),
        model_call(THREAD, at=101, model="Qwen", prompt=20, completion=3, cost=0.25),
        model_call(GENERAL, at=102, model="gpt-4o", prompt=30, cached=6, completion=5, cost=0.2),
        model_call(GENERAL, at=103, model="gpt-4o-mini", cost=0.7),
        model_call(C10, at=104, model="gpt-4o", cost=1.0),
        model_call(RANDOM, at=105, model="gpt-4o", cost=2.0),
    )
    # By model name in code point order: "Qwen" before "gpt-4o", "gpt-4o" before "-mini".
    assert spent(await store.spend(since=None, until=None, channel_key=GENERAL.channel_key)) == [
        ("Qwen", 1, 20, 0, 3, cost(0.25)),
        ("gpt-4o", 2, 40, 10, 7, cost(0.3)),
        ("gpt-4o-mini", 1, 10, 0, 2, cost(0.7)),
    ]
    assert spent(await store.spend(since=None, until=None, channel_key=C10.channel_key)) == [
        ("gpt-4o", 1, 10, 0, 2, cost(1.0))
    ]
    everything = await store.spend(since=None, until=None)
    assert spent(everything) == [
        ("Qwen", 1, 20, 0, 3, cost(0.25)),
        ("gpt-4o", 4, 60, 10, 11, cost(3.3)),
        ("gpt-4o-mini", 1, 10, 0, 2, cost(0.7)),
    ]
    assert await store.spend(since=None, until=None, channel_key="slack:T1:C3") == []


async def test_calls_are_summed_per_workspace_and_per_person_in_it(store: Store) -> None:
    await record(
        store,
        model_call(GENERAL, at=1, person="U1", cost=0.1),
        model_call(THREAD, at=2, person="U1", cost=0.2, cached=3),
        model_call(RANDOM, at=3, person="U2", cost=0.4),
        model_call(GENERAL, at=4, person="", purpose="summary", cost=0.8),  # for no one
        model_call(ELSEWHERE, at=5, person="U1", cost=1.6),  # the same id, another workspace
        model_call(T10, at=6, person="U1", cost=3.2),
    )
    t1 = await store.spend(since=None, until=None, workspace="slack:T1")
    assert spent(t1) == [("gpt-4o", 4, 40, 3, 8, cost(1.5))]
    ana = await store.spend(since=None, until=None, workspace="slack:T1", person="U1")
    assert spent(ana) == [("gpt-4o", 2, 20, 3, 4, cost(0.3))]
    there = await store.spend(since=None, until=None, workspace="slack:T2", person="U1")
    assert spent(there) == [("gpt-4o", 1, 10, 0, 2, cost(1.6))]
    assert await store.spend(since=None, until=None, workspace="slack:T2", person="U2") == []


async def test_a_time_range_holds_its_start_and_not_its_end(store: Store) -> None:
    await record(
        store,
        model_call(GENERAL, at=100.0, cost=1),
        model_call(GENERAL, at=200.0, cost=2),
        model_call(GENERAL, at=300.0, cost=4),
    )

    async def between(since: float | None, until: float | None) -> list[tuple[object, ...]]:
        found = await store.spend(since=since, until=until, channel_key=GENERAL.channel_key)
        return [(s.requests, s.cost) for s in found]

    assert await between(100.0, 300.0) == [(2, cost(3))]
    assert await between(100.5, 300.5) == [(2, cost(6))]
    assert await between(300.0, None) == [(1, cost(4))]
    assert await between(None, 200.0) == [(1, cost(1))]
    assert await between(None, 100.0) == []
    assert await between(None, None) == [(3, cost(7))]
    lines = await store.spend_lines(since=200.0, until=300.0)
    assert [(line.requests, line.cost) for line in lines] == [(1, cost(2))]


async def test_spend_lines_group_calls_by_utc_day_conversation_model_and_purpose(
    store: Store,
) -> None:
    midnight = datetime(2026, 12, 5, tzinfo=UTC).timestamp()
    await record(
        store,
        model_call(GENERAL, at=midnight - 0.5, cost=0.1),
        model_call(GENERAL, at=midnight, cost=0.1, cached=2),
        model_call(GENERAL, at=midnight + 60, cost=0.2, cached=3),
        model_call(GENERAL, at=midnight + 70, model="m", purpose="summary", cost=0.05),
        model_call(THREAD, at=midnight + 80, cost=0.3),
        model_call(None, at=midnight + 90, model="e", purpose="embedding", person="", cost=0.01),
        model_call(RANDOM, at=midnight + 100, cost=0.4),
    )

    def shown(lines: Sequence[SpendLine]) -> list[tuple[object, ...]]:
        return [dataclasses.astuple(line) for line in lines]

    assert shown(await store.spend_lines(since=None, until=None)) == [
        ("2026-12-04", GENERAL.key, "gpt-4o", "chat", 1, 10, 0, 2, cost(0.1)),
        ("2026-12-05", "", "e", "embedding", 1, 10, 0, 2, cost(0.01)),
        ("2026-12-05", GENERAL.key, "gpt-4o", "chat", 2, 20, 5, 4, cost(0.3)),
        ("2026-12-05", GENERAL.key, "m", "summary", 1, 10, 0, 2, cost(0.05)),
        ("2026-12-05", THREAD.key, "gpt-4o", "chat", 1, 10, 0, 2, cost(0.3)),
        ("2026-12-05", RANDOM.key, "gpt-4o", "chat", 1, 10, 0, 2, cost(0.4)),
    ]
    channel = await store.spend_lines(since=midnight, until=None, channel_key=GENERAL.channel_key)
    assert [(line.day, line.conversation_key, line.requests) for line in channel] == [
        ("2026-12-05", GENERAL.key, 2),
        ("2026-12-05", GENERAL.key, 1),
        ("2026-12-05", THREAD.key, 1),
    ]


async def test_a_call_for_no_conversation_is_in_the_ledger_only(store: Store) -> None:
    await record(store, model_call(None, at=5, model="e", purpose="embedding", person="", cost=1))
    assert spent(await store.spend(since=None, until=None)) == [("e", 1, 10, 0, 2, cost(1))]
    assert await store.spend(since=None, until=None, channel_key=GENERAL.channel_key) == []
    assert await store.spend(since=None, until=None, workspace="slack:T1") == []
    assert await store.usage(conversation_key="") == []
    assert await store.conversations() == []


async def test_a_recorded_call_adds_to_its_conversations_lifetime_totals(store: Store) -> None:
    await store.record_usage(
        conversation_key=GENERAL.key,
        model="m",
        purpose="chat",
        prompt_tokens=5,
        completion_tokens=1,
    )
    await record(
        store,
        model_call(GENERAL, at=1, model="m", prompt=10, cached=8, completion=2, cost=0.1),
        model_call(GENERAL, at=2, model="m", prompt=7, completion=4, estimated=True),
        model_call(GENERAL, at=3, model="s", purpose="summary", prompt=3, completion=1),
        model_call(THREAD, at=4, model="m", prompt=100, completion=20),
    )
    assert list(await store.usage(conversation_key=GENERAL.key)) == [
        UsageTotals("m", "chat", 3, 22, 7, estimated=1),
        UsageTotals("s", "summary", 1, 3, 1),
    ]
    assert list(await store.usage(conversation_key=THREAD.key)) == [
        UsageTotals("m", "chat", 1, 100, 20)
    ]
    # record_usage alone is not a model call the ledger knows of (no cost, no time).
    assert [s.requests for s in await store.spend(since=None, until=None)] == [3, 1]


async def test_a_reset_keeps_what_was_spent(store: Store) -> None:
    """What was spent stays spent: /reset forgets the conversation, not its cost."""
    await add(store, "hello")
    await record(store, model_call(GENERAL, at=1, cost=0.5), model_call(THREAD, at=2, cost=0.25))
    before = spent(await store.spend(since=None, until=None, channel_key=GENERAL.channel_key))
    lines = await store.spend_lines(since=None, until=None)
    await store.reset(conversation=GENERAL, include_pins=True)
    await store.reset(conversation=THREAD, include_pins=True)
    assert before == [("gpt-4o", 2, 20, 0, 4, cost(0.75))]
    assert spent(await store.spend(since=None, until=None, channel_key=GENERAL.channel_key)) == (
        before
    )
    assert await store.spend_lines(since=None, until=None) == lines
