"""bench/longmem at a tiny size: a short conversation replayed through the bot's Slack
endpoint, questions asked, and the evidence found (or not) in the layer it is in; the
prompt's layers split as the bot lays them out; the committed data is what the generator
writes. The figures themselves are the benchmark's (``bench/RESULTS.md``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bench.longmem import data as longmem_data
from bench.longmem import run as longmem_run
from bench.longmem.conversations import PLANS
from bench.longmem.data import ConversationInfo, Dataset, Message, Person, Question
from bench.longmem.make import dataset as generated
from bench.longmem.measure import Tally, groups, layers, locate, measure, outcomes
from bench.longmem.model import BenchModel, gist, summarize
from bench.longmem.replay import run as replay
from bot.core.memory.recall import RECALL_HEADING
from bot.core.prompt.layout import PINS_HEADING, SUMMARY_HEADING
from tests.support.fake_llm import FakeLLM

START = datetime(2025, 3, 1, 18, 0, tzinfo=UTC)
PEOPLE = (Person("ana", "Ana", "UTA"), Person("bo", "Bo", "UTB"), Person("cy", "Cy", "UTC"))
FILLER = [
    "did anyone watch the match",
    "what a game that was",
    "lunch plans anyone",
    "the soup place is good",
    "raining again here",
    "my train is late",
    "coffee machine is broken",
    "new episode is out",
    "who ate my yoghurt",
    "weekend plans anyone",
]


def tiny() -> Dataset:
    """One conversation: a fact said early (then 60 messages of chatter), a change of plan,
    a pin, a /remember, and a fact said last; five questions after it."""
    said: list[tuple[str, str, str]] = [
        ("ana", "Biscuit swallowed a whole sock, vet says he'll live", "message"),
        ("bo", "we're moving to Porto in the autumn", "message"),
        ("cy", "Door code is 4471#", "pin"),
        ("ana", "I'm vegetarian, no fish either", "remember"),
    ]
    tails = ("again", "today", "honestly", "lol", "right", "ok")
    said += [
        (PEOPLE[n % 3].id, f"{FILLER[n % 10]} {tails[n // 10]}", "message") for n in range(60)
    ]  # no numbers or dates: nothing here is important, so the window is the last 20 turns
    said += [
        ("bo", "change of plan: Porto is off, it's Lisbon now", "message"),
        ("cy", "booked the cabin for the 12th to the 14th", "message"),
    ]
    messages = tuple(
        Message(
            id=f"t1-{n:03d}",
            conversation="t1",
            session=1 + n // 30,
            speaker=speaker,
            ts=longmem_data.format_time(START + timedelta(minutes=5 * n)),
            text=text,
            kind=kind,
        )
        for n, (speaker, text, kind) in enumerate(said)
    )
    ids = {m.text: m.id for m in messages}
    asked = START + timedelta(days=2)

    def question(n: int, asker: str, text: str, category: str, *evidence: str) -> Question:
        return Question(
            id=f"t1-q{n}",
            conversation="t1",
            asker=asker,
            asked_at=longmem_data.format_time(asked + timedelta(minutes=n)),
            question=text,
            category=category,
            evidence=tuple(ids[e] for e in evidence),
            answer="",
            superseded=(ids["we're moving to Porto in the autumn"],)
            if category == "changed"
            else (),
        )

    questions = (
        question(1, "bo", "what did Biscuit eat?", "single", said[0][1]),
        question(2, "ana", "where is Bo moving to?", "changed", said[-2][1]),
        question(3, "bo", "what's the code for the door?", "single", said[2][1]),
        question(4, "ana", "what do you know about my diet?", "single", said[3][1]),
        question(
            5,
            "cy",
            "when is the cabin, and what did Biscuit eat?",
            "multi",
            said[-1][1],
            said[0][1],
        ),
    )
    info = ConversationInfo("t1", "en", "tiny", "CT1LM", PEOPLE)
    return Dataset((info,), messages, questions)


async def test_evidence_is_found_in_the_layer_it_is_in_and_missing_once_evicted(
    tmp_path: Path, tiktoken_cache: Path
) -> None:
    data = tiny()
    model = BenchModel()
    await model.start()
    try:
        window = {"strategy": "window", "max_context_tokens": 600, "recall_tokens": 0}
        plain = await replay(data, memory=window, model=model, folder=tmp_path / "window")
        recall = {"strategy": "full", "max_context_tokens": 600, "recall_tokens": 200}
        searched = await replay(data, memory=recall, model=model, folder=tmp_path / "recall")
    finally:
        await model.aclose()

    found = outcomes(data, [(a.question, a.messages) for a in plain.asked])
    where = {o.question.id: [w.layer for w in o.found] for o in found}
    # The window keeps the last 20 turns: the early fact is gone, the last two are there.
    assert where == {
        "t1-q1": [None],
        "t1-q2": ["recent"],
        "t1-q3": ["pins"],
        "t1-q4": ["profile"],
        "t1-q5": ["recent", None],
    }
    tally = groups(found)["all"]
    assert (tally.evidence, tally.present, tally.complete, tally.questions) == (6, 4, 3, 5)
    assert tally.by_layer == {
        "system": 0, "pins": 1, "profile": 1, "summary": 0, "recall": 0, "recent": 2
    }  # fmt: skip
    assert not any(o.stale_only for o in found)
    assert all(0 < o.tokens <= 600 for o in found)
    # The question itself is the prompt's last message, never searched.
    assert all(a.messages[-1]["content"].endswith(a.question.question) for a in plain.asked)

    found = outcomes(data, [(a.question, a.messages) for a in searched.asked])
    where = {o.question.id: [(w.layer, w.dated) for w in o.found] for o in found}
    # Recall brings the early fact back, with its date; the recent turns span two days (the
    # questions come later), so they are dated too.
    assert where["t1-q1"] == [("recall", True)]
    assert where["t1-q5"] == [("recent", True), ("recall", True)]
    assert groups(found)["multi"].complete == 1
    # Questions are deleted once asked: none is recalled for a later one.
    assert not any(
        "Biscuit eat" in str(m["content"]) for a in searched.asked for m in a.messages[:-1]
    )


def test_the_layers_are_split_by_their_headings_and_gists_count_apart() -> None:
    evidence = Message(
        "x-1", "x", 1, "ana", "2025-03-01T18:00:00Z", "the rent goes up to £1,450 in May"
    )
    stale = Message("x-2", "x", 1, "ana", "2025-02-01T18:00:00Z", "moving to Porto")
    dated = Message("x-3", "x", 1, "bo", "2025-02-03T09:00:00Z", "PASSED my driving test!!")
    head = "\n".join(
        [
            "You are a bot.",
            "",
            PINS_HEADING,
            "#1 (cy): Door code is 4471#",
            "",
            SUMMARY_HEADING,
            "Facts:",
            "- 2025-03-01 Ana: rent £1,450 May",
            "Narrative:",
            "People talked.",
        ]
    )
    messages = [
        {"role": "system", "content": head},
        {
            "role": "system",
            "content": f"{RECALL_HEADING}\n- 2025-02-03 09:00 [Bo] PASSED my driving test!!",
        },
        {"role": "user", "content": "[Ana]   Moving  to PORTO"},
        {"role": "user", "content": "[Bo] the rent goes up to £1,450 in May?"},
    ]
    split = layers(messages)
    assert split["pins"].startswith(PINS_HEADING) and "4471#" in split["pins"]
    assert split["summary"].startswith(SUMMARY_HEADING)
    assert split["recent"] == "[Ana]   Moving  to PORTO"  # the last message is the question
    # Recent turns are dated by the day line over them, when they span days.
    for day, dated_here in (("2025-02-01", True), ("2025-01-31", False)):
        recent = f"{day}\n[Ana]   Moving  to PORTO\n2025-02-02\n[Bo] ok"
        assert locate(stale, {**split, "recent": recent}).dated is dated_here
    # Case and spacing don't matter; a gist in the summary is not presence but is noted.
    assert locate(stale, split).layer == "recent"
    where = locate(evidence, split)
    assert (where.layer, where.gist) == (None, True)
    assert (locate(dated, split).layer, locate(dated, split).dated) == ("recall", True)
    question = Question(
        "x-q1", "x", "bo", "2025-04-01T10:00:00Z", "rent?", "changed", ("x-1",), "", ("x-2",)
    )
    outcome = measure(question, messages, {"x-1": evidence, "x-2": stale}, "en")
    assert outcome.stale_only and not outcome.complete
    assert Tally.of([outcome]).gist_only == 1


def test_the_fake_summary_keeps_gists_of_important_messages_within_its_size() -> None:
    content = "\n\n".join(
        [
            "Previous summary:\nFacts:\n- 2025-01-01 Bo: old fact\nNarrative:\nEarlier.",
            "New messages:\n[2025-02-01 10:00] Ana: took Biscuit to the vet, back at 3pm\n"
            "[2025-02-01 10:01] Bo: ok",
            "Important messages (keep their facts exactly):\n"
            "[2025-02-01 10:00] Ana: took Biscuit to the vet, back at 3pm",
        ]
    )
    text = summarize(content, 800)
    assert text.startswith("Facts:\n- 2025-01-01 Bo: old fact\n- 2025-02-01 Ana: Biscuit 3pm")
    assert "took Biscuit to the vet, back at 3pm" not in text  # a gist, never the message
    assert summarize(content, 800, forgetful=True).startswith("Facts:\n- nothing durable")
    small = summarize(content, 40)
    assert "old fact" not in small  # the oldest fact goes first
    assert (
        gist("昨天带豆豆去打疫苗了，明天下午三点复查哦") == "昨天带豆豆去打疫苗，明天下午三点复查"
    )


def test_the_cli_writes_its_figures(tmp_path: Path, tiktoken_cache: Path) -> None:
    longmem_data.save(tiny(), tmp_path / "data")
    out = tmp_path / "figures.json"
    code = longmem_run.main(
        [
            "--data", str(tmp_path / "data"),
            "--budget", "600", "--strategy", "window", "--recall-tokens", "0",
            "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    (result,) = json.loads(out.read_text())
    assert result["memory"] == {"max_context_tokens": 600, "strategy": "window", "recall_tokens": 0}
    assert result["figures"]["all"]["present"] == 4
    assert result["figures"]["all"]["complete"] == 3


@pytest.mark.parametrize("folder", [longmem_run.DATA])
def test_the_committed_data_is_what_the_generator_writes(folder: Path) -> None:
    committed = longmem_data.load(folder)
    assert committed == generated(PLANS)
    ids = {m.id for m in committed.messages}
    assert all(set(q.evidence) <= ids for q in committed.questions)
    assert {q.category for q in committed.questions} == set(longmem_data.CATEGORIES)
    assert {c.language for c in committed.conversations} == {"en", "zh"}


async def test_embeddings_go_to_the_server_named_and_are_kept(
    tmp_path: Path, tiktoken_cache: Path
) -> None:
    data = tiny()
    async with FakeLLM() as upstream:
        model = BenchModel(
            embeddings_url=upstream.url,
            embedding_model="nomic-embed-text",
            cache=tmp_path / "vectors.sqlite3",
        )
        await model.start()
        try:
            memory = {"max_context_tokens": 600, "recall_tokens": 200, "recall_embeddings": True}
            await replay(
                data, memory=memory, model=model, folder=tmp_path / "a", embedding_model="x"
            )
            asked = len(upstream.requests)
            await replay(
                data, memory=memory, model=model, folder=tmp_path / "b", embedding_model="x"
            )
        finally:
            await model.aclose()
    bodies = [r.body for r in upstream.requests]
    assert asked > 0 and all(b["model"] == "nomic-embed-text" for b in bodies)
    assert len(upstream.requests) == asked  # the second run found every vector in the cache
