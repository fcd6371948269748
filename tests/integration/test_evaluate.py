"""``bot eval``: the forgetting probe, against the local server."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from bot.config import Strategy
from bot.ops.evaluate import Say, TranscriptError, evaluate, parse_transcript
from tests.conftest import ConfigFactory, fake_summary, is_summary_request
from tests.e2e.test_cli import bot, write_config
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.paths import ROOT

FACT_LINE = re.compile(r"FACT:? (.+)")


def recall(body: dict[str, Any]) -> str:
    """A 'model' that, asked a question, answers with exactly the FACT lines its prompt holds
    (the question excluded), and otherwise says "noted."; summaries as the shared fake writes
    them (FACT lines carried forward)."""
    if is_summary_request(body):
        return fake_summary(body)
    if not body["messages"][-1]["content"].endswith("?"):
        return "noted."
    known = [
        match.group(1)
        for message in body["messages"][:-1]
        for line in message["content"].splitlines()
        if (match := FACT_LINE.search(line))
    ]
    return "I recall: " + "; ".join(known) if known else "I don't know."


def small_transcript(filler: int = 40) -> str:
    lines: list[dict[str, Any]] = [
        {"user": "ana", "text": "morning all", "addressed": False},
        {
            "fact": "codeword",
            "user": "ana",
            "text": "FACT: the deploy code word is PELICAN",
            "key": "PELICAN",
            "answer": "pelican",
        },
        {
            "fact": "oncall",
            "user": "bo",
            "text": "FACT: the on-call phone is 555-0199",
            "answer": "555-0199",
            "pinned": True,
        },
    ]
    for i in range(filler):
        lines.append(
            {
                "user": ("ana", "bo", "李明")[i % 3],
                "text": f"status update {i}: the migration of shard {i} is still running fine",
                "addressed": i % 3 == 0,
            }
        )
    lines += [
        {"probe": "codeword", "user": "bo", "question": "what is the deploy code word?"},
        {"probe": "oncall", "user": "ana", "question": "what is the on-call phone number?"},
    ]
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in lines) + "\n"


async def test_with_a_tiny_budget_window_forgets_what_hybrid_keeps_in_its_summary(
    llm: FakeLLM, make_config: ConfigFactory
) -> None:
    llm.responder = recall
    transcript = parse_transcript(small_transcript())
    config = make_config(memory={"max_context_tokens": 300})
    results = {
        r.strategy: r
        for r in await evaluate(config, transcript, [Strategy.WINDOW, Strategy.HYBRID])
    }
    window, hybrid = results["window"], results["hybrid"]
    for result in (window, hybrid):
        assert result.errors == []
        assert result.budget == 300
        assert 0 < result.prompt_tokens <= 300
        assert 0 < result.max_reported_tokens <= 300  # as the server counted every prompt
    assert {f.id: f.where for f in window.facts} == {"codeword": None, "oncall": "pin"}
    assert window.summaries == 0
    assert (window.present, window.answered, window.probes) == (1, 1, 2)
    assert window.answers == [("codeword", False), ("oncall", True)]
    assert {f.id: f.where for f in hybrid.facts} == {"codeword": "summary", "oncall": "pin"}
    assert hybrid.summaries >= 1
    assert (hybrid.present, hybrid.answered, hybrid.probes) == (2, 2, 2)
    # Each strategy replayed into its own fresh database, never the configured one.
    assert not await asyncio.to_thread(Path(config.storage.path).exists)
    # Probes are removed after they are asked: the next one sees the same history.
    asked = [b for b in llm.chat_requests if b["messages"][-1]["content"].startswith("[")]
    probes = [b for b in asked if "what is the" in b["messages"][-1]["content"]]
    assert len(probes) == 4
    assert all("what is the" not in m["content"] for b in probes for m in b["messages"][:-1])


async def test_with_room_for_everything_every_strategy_keeps_every_fact_verbatim(
    llm: FakeLLM, make_config: ConfigFactory
) -> None:
    llm.responder = recall
    transcript = parse_transcript(small_transcript(filler=6))
    results = await evaluate(make_config(), transcript, list(Strategy))
    assert [r.strategy for r in results] == ["full", "window", "summary", "hybrid"]
    for result in results:
        assert {f.id: f.where for f in result.facts} == {"codeword": "turn", "oncall": "pin"}
        assert result.answered == 2
        assert result.summaries == 0 or result.strategy == "summary"


async def test_recall_brings_back_at_the_same_budget_what_the_window_forgot(
    llm: FakeLLM, make_config: ConfigFactory
) -> None:
    llm.responder = recall
    transcript = parse_transcript(small_transcript())
    figures = {}
    for recall_tokens in (0, 120):
        config = make_config(memory={"max_context_tokens": 300, "recall_tokens": recall_tokens})
        (result,) = await evaluate(config, transcript, [Strategy.WINDOW])
        assert (
            result.errors == [] and result.budget == 300 and result.recall_tokens == recall_tokens
        )
        assert 0 < result.max_reported_tokens <= 300  # recall stays within the same budget
        figures[recall_tokens] = {f.id: (f.asked_where, f.answered) for f in result.facts}
    assert figures[0] == {"codeword": (None, False), "oncall": ("pin", True)}
    assert figures[120] == {"codeword": ("recall", True), "oncall": ("pin", True)}


async def test_an_overflow_the_bot_retries_past_does_not_stop_the_replay_or_a_probe(
    llm: FakeLLM, make_config: ConfigFactory
) -> None:
    """A small local model's context (its server states the window in the error): the
    answers and probes that overflow it are asked again smaller, as the bot does."""
    llm.responder = recall
    llm.context_window["gpt-4o-mini"] = 1400
    transcript = parse_transcript(small_transcript())
    (result,) = await evaluate(make_config(), transcript, [Strategy.FULL])
    overflowed = [b for b in llm.chat_requests if not is_summary_request(b)]
    assert len(overflowed) > len(transcript.probes) + 14  # some were asked twice
    assert result.errors == [] and len(result.answers) == 2
    assert 0 < result.max_reported_tokens <= 1400 - 1024


def test_bot_eval_prints_the_figures_per_strategy(tmp_path: Path, llm_thread: FakeLLM) -> None:
    llm_thread.responder = recall
    path = tmp_path / "probe.jsonl"
    path.write_text(small_transcript(), encoding="utf-8")
    config = write_config(tmp_path, llm_thread.url)
    args = ["eval", str(path), "--config", str(config), "--budget", "300"]
    shown = bot(*args, "--strategy", "window", "--strategy", "hybrid")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == (
        f"{path}: 43 messages, 2 planted facts (1 pinned, 1 not), 2 probes; model gpt-4o-mini"
    )
    window = next(line.split() for line in lines if line.startswith("window "))
    hybrid = next(line.split() for line in lines if line.startswith("hybrid "))
    assert window[4:] == ["1/2", "1/1", "0/1", "0", "1/2", "0", "1/2", "0"]
    assert hybrid[4:] == ["2/2", "1/1", "1/1", "1", "2/2", "0", "2/2", "0"]
    assert "window: not in the prompt: codeword" in lines
    as_json = bot(*args, "--strategy", "hybrid", "--json")
    assert as_json.returncode == 0, as_json.stderr
    (figures,) = json.loads(as_json.stdout)
    assert figures["facts_present"] == 2 and figures["answered"] == 2
    assert figures["facts"][0] == {
        "id": "codeword", "pinned": False, "where": "summary", "answered": True,
        "asked_where": "summary",
    }  # fmt: skip
    assert not (tmp_path / "bot.sqlite3").exists()


def test_bot_eval_names_the_bad_line_of_a_transcript(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"user": "ana", "text": "hi"}\n{"probe": "nope", "question": "?"}\n')
    config = write_config(tmp_path, "http://127.0.0.1:9/v1")
    result = bot("eval", str(path), "--config", str(config))
    assert result.returncode == 2
    assert result.stderr == f"bot eval: {path}:2: probe of unknown fact 'nope'\n"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not json", "t:1: not valid JSON"),
        ('{"hello": 1}', "t:1: a line needs 'text', 'pin', 'fact' or 'probe'"),
        ('{"user": "a", "text": "x", "adressed": true}', "t:1: unknown key for a text line"),
        ('{"fact": "f", "user": "a", "text": "x", "answer": "y"}', "the key 'y' does not occur"),
        ('{"user": "a", "text": "x"}', "t: no facts planted"),
    ],
)
def test_transcript_errors_say_what_is_wrong(text: str, error: str) -> None:
    with pytest.raises(TranscriptError, match=re.escape(error)):
        parse_transcript(text + "\n", name="t")


@pytest.mark.parametrize("name", ["en.jsonl", "zh.jsonl"])
def test_the_shipped_transcripts_plant_pinned_and_unpinned_facts_early_and_probe_each(
    name: str,
) -> None:
    path = ROOT / "bench" / "transcripts" / name
    transcript = parse_transcript(path.read_text(encoding="utf-8"), name=name)
    assert transcript.messages >= 300
    facts = list(transcript.facts.values())
    assert any(f.pinned for f in facts) and sum(not f.pinned for f in facts) >= 3
    assert {p.fact for p in transcript.probes} == set(transcript.facts)
    assert sum(isinstance(s, Say) and s.addressed for s in transcript.steps) >= 50
    first_facts = [i for i, step in enumerate(transcript.steps) if step in facts]
    assert max(first_facts) < 100


def test_bot_eval_stops_when_the_chat_model_fails(tmp_path: Path, llm_thread: FakeLLM) -> None:
    llm_thread.responder = lambda body: Reply.server_error()
    path = tmp_path / "probe.jsonl"
    path.write_text("\n" + small_transcript(filler=3), encoding="utf-8")
    config = write_config(tmp_path, llm_thread.url, llm={"max_retries": 0})
    result = bot("eval", str(path), "--config", str(config), "--strategy", "full")
    assert result.returncode == 1
    assert result.stdout == ""
    # the first addressed message is filler 0: line 1 is blank, then 3 lines before it
    assert result.stderr.splitlines()[-1] == (
        "bot eval: the chat model failed on line 5 of the transcript: unavailable: HTTP 500"
    )


async def test_a_model_that_only_parrots_the_speaker_tag_does_not_answer(
    llm: FakeLLM, make_config: ConfigFactory
) -> None:
    """A "who" probe whose answer is a speaker's name: a reply that starts by copying the
    ``[ana]`` tag of a message in the prompt names ana without answering."""
    transcript = parse_transcript(
        "\n".join(
            json.dumps(line)
            for line in [
                {
                    "fact": "owner",
                    "user": "ana",
                    "text": "FACT: ana owns the billing service",
                    "answer": "ana",
                },
                {"probe": "owner", "user": "bo", "question": "who owns billing?"},
            ]
        )
        + "\n"
    )

    def parrot(body: dict[str, Any]) -> str:
        if is_summary_request(body):
            return fake_summary(body)
        last = body["messages"][-1]["content"]
        return "[ana] I am not sure." if last.endswith("?") else "[ana] noted."

    llm.responder = parrot
    (parroted,) = await evaluate(make_config(), transcript, [Strategy.HYBRID])
    llm.responder = lambda body: "[bo] It is ana." if "?" in str(body) else "noted."
    (answered,) = await evaluate(make_config(), transcript, [Strategy.HYBRID])
    assert parroted.answers == [("owner", False)]
    assert answered.answers == [("owner", True)]


async def test_the_replayed_answers_are_dated_with_the_replay_not_today(
    llm: FakeLLM, make_config: ConfigFactory
) -> None:
    llm.responder = recall
    transcript = parse_transcript(small_transcript())
    await evaluate(make_config(memory={"max_context_tokens": 300}), transcript, [Strategy.HYBRID])
    folded = "\n".join(
        body["messages"][-1]["content"] for body in llm.chat_requests if is_summary_request(body)
    )
    dates = re.findall(r"^\[(\d{4}-\d\d-\d\d) \d\d:\d\d\] (\S+)", folded, re.MULTILINE)
    assert any(who == "assistant" for _, who in dates)  # answers were folded, with their date
    assert {date for date, _ in dates} == {"2025-01-06"}
