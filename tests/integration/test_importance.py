"""Importance: which messages the scorer picks, that important turns stay in the window longer
than small talk, that 📌 marks count, and that an important message always reaches the summary.
SQLite and PostgreSQL, the real openai SDK, the local model server."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.commands import run_command
from bot.core.memory.importance import covered, score
from bot.core.memory.kept import KEPT_HEADING
from bot.core.models import CommandCall, Conversation, IncomingMessage
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, is_summary_request, respond
from tests.support.fake_llm import FakeLLM, count_prompt_tokens

pytestmark = pytest.mark.stores("sqlite", "postgres")

GENERAL = Conversation.console("general")
FILLER = "blah " * 12


def said(text: str, who: str = "Ana", addressed: bool = True, message_id: str | None = None):
    return IncomingMessage(GENERAL, who.lower(), who, text, addressed, message_id=message_id)


def chat_bodies(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


def turns(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"][1:]]


@pytest.mark.parametrize(
    "text",
    [
        "Please remember that the staging password rotates",
        "This is important: the vendor changed",
        "We decided to go with Postgres",
        "The budget is 4200 EUR",
        "ship it on Dec 15",
        "meeting at 3pm",
        "release 2026-03-01",
        "记住，我的生日",
        "这个很重要",
        "我们决定用 Postgres",
        "预算是 5万",
        "12月15日上线",
        "明天开会",
    ],
)
def test_the_scorer_finds_what_matters_in_english_and_chinese(text: str) -> None:
    assert score(text) > 0


@pytest.mark.parametrize(
    "text",
    [
        "hi there",
        "lol ok",
        "thanks!",
        "sounds good 👍",
        "哈哈",
        "好的，谢谢",
        "ok 1",
        "must have been tough",
        "remember when we got lost in the old town?",
        "记得那次我们迷路了吗",
    ],
)
def test_small_talk_scores_nothing(text: str) -> None:
    assert score(text) == 0


def test_a_summary_covers_a_message_when_it_keeps_its_numbers() -> None:
    assert covered("the budget is 4200 EUR from 2026-03-01", "- Budget: 4200 EUR (2026-03-01)")
    assert not covered("the budget is 4200 EUR from 2026-03-01", "- Budget: 4000 EUR")
    assert covered("Ana owns billing", "- Ana owns the billing work")
    assert not covered("Ana owns billing", "- someone does something")


async def chat(app: App, count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        await app.engine.handle_message(said(f"chatter {i} {FILLER}", who="Bo"))


async def test_an_important_turn_outlives_small_talk_of_its_age_in_the_window(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "full", "max_context_tokens": 500})
    async with open_app(config) as app:
        await app.engine.handle_message(said(f"the weather is nice {FILLER}"))
        await app.engine.handle_message(said("remember: the vault code is 4411"))
        await app.engine.handle_message(said(f"what a day {FILLER}"))
        await chat(app, 12)
    last = chat_bodies(llm)[-1]
    assert count_prompt_tokens("gpt-4o-mini", last["messages"]) <= 500
    shown = turns(last)
    # The important turn is there, verbatim, with its answer; the small talk around it is not.
    assert "[Ana] remember: the vault code is 4411" in shown
    assert "echo: [Ana] remember: the vault code is 4411" in shown
    assert not any("weather is nice" in t or "what a day" in t for t in shown)
    # Chronological order, the newest turns verbatim at the end, the oldest chatter gone.
    assert shown.index("[Ana] remember: the vault code is 4411") == 0
    assert shown[-1] == f"[Bo] chatter 11 {FILLER}"
    assert shown[-3] == f"[Bo] chatter 10 {FILLER}"
    assert not any("chatter 0 " in t for t in shown)


async def test_an_important_turn_too_large_to_place_leaves_room_for_an_older_small_one(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "full", "max_context_tokens": 500})
    async with open_app(config) as app:
        await app.engine.handle_message(said("remember: the vault code is 4411"))
        for name in ("alpha", "beta"):  # each too large for what small talk could give up
            await app.engine.handle_message(
                said(f"remember the {name} plan: {'step ' * 480}", addressed=False)
            )
        await chat(app, 12)
    shown = turns(chat_bodies(llm)[-1])
    assert "[Ana] remember: the vault code is 4411" in shown
    assert not any("plan:" in t for t in shown)


async def test_a_pushpin_keeps_a_message_and_removing_it_lets_it_go(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "full", "max_context_tokens": 500})
    async with open_app(config) as app:
        note = said("Ana owns billing", who="Cy", addressed=False, message_id="m1")
        await app.engine.handle_message(note)
        assert not await app.engine.mark_important(GENERAL, "unknown", True)
        assert await app.engine.mark_important(GENERAL, "m1", True)
        await chat(app, 12)
        assert "[Cy] Ana owns billing" in turns(chat_bodies(llm)[-1])
        # Two people pinned it, one takes theirs back: still marked.
        assert await app.engine.mark_important(GENERAL, "m1", True)
        assert await app.engine.mark_important(GENERAL, "m1", False)
        await chat(app, 1, start=12)
        assert "[Cy] Ana owns billing" in turns(chat_bodies(llm)[-1])
        assert await app.engine.mark_important(GENERAL, "m1", False)
        await chat(app, 1, start=13)
        assert not any("Ana owns billing" in t for t in turns(chat_bodies(llm)[-1]))


async def test_important_turns_never_push_out_the_newest_turns(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "window", "window_turns": 3, "keep_recent_turns": 2})
    async with open_app(config) as app:
        for i in range(4):
            await app.engine.handle_message(said(f"important: fact number {i}0"))
        await chat(app, 3)
    # A 3-turn window: the two newest turns stay, the third place goes to the newest
    # important turn rather than to older chatter.
    assert turns(chat_bodies(llm)[-1]) == [
        "[Ana] important: fact number 30",
        "echo: [Ana] important: fact number 30",
        f"[Bo] chatter 1 {FILLER}",
        f"echo: [Bo] chatter 1 {FILLER}".strip(),
        f"[Bo] chatter 2 {FILLER}",
    ]


def forgetful(body: dict[str, Any]) -> Any:
    """A summary model that keeps nothing of what it is given."""
    if is_summary_request(body):
        return "Facts:\n- people chatted\nNarrative:\nSome chat."
    return respond(body)


async def test_an_important_message_reaches_the_summary_even_when_the_model_drops_it(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.responder = forgetful
    config = make_config(memory={"strategy": "summary", "summary_rebuild_every": 0})
    async with open_app(config) as app:
        await app.engine.handle_message(said("decided: the launch is on 2026-03-01, budget 4200"))
        await app.engine.handle_message(said("nice weather today"))
        for i in range(3):
            await app.engine.handle_message(said(f"chat {i}", who="Bo"))
        await run_command(app.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
        assert summary is not None
        kept = summary.content.split(KEPT_HEADING, 1)[1]
        assert "Ana: decided: the launch is on 2026-03-01, budget 4200" in kept
        assert "nice weather" not in summary.content
        request = [b for b in llm.chat_requests if is_summary_request(b)][-1]
        listed = request["messages"][-1]["content"].split("Important messages", 1)[1]
        assert "decided: the launch" in listed and "nice weather" not in listed
        # The next compaction's model drops it again: it is carried forward all the same.
        for i in range(3, 6):
            await app.engine.handle_message(said(f"chat {i}", who="Bo"))
        await run_command(app.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        later = await app.store.latest_summary(conversation_key=GENERAL.key)
        assert later is not None and later.id != summary.id
        assert "2026-03-01, budget 4200" in later.content
        await app.engine.handle_message(said("when is the launch?"))
    assert "2026-03-01" in chat_bodies(llm)[-1]["messages"][0]["content"]


async def test_nothing_is_appended_when_the_summary_kept_the_facts(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "summary"})
    async with open_app(config) as app:
        # The local summary model keeps every line with FACT in it.
        await app.engine.handle_message(said("FACT remember the budget is 4200"))
        for i in range(3):
            await app.engine.handle_message(said(f"chat {i}", who="Bo"))
        await run_command(app.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
    assert summary is not None and "FACT remember the budget is 4200" in summary.content
    assert KEPT_HEADING not in summary.content


async def test_a_summary_too_small_for_every_important_message_says_so_once_per_summary(
    make_config: ConfigFactory, llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    llm.responder = forgetful
    config = make_config(
        memory={"strategy": "summary", "max_context_tokens": 400, "summary_rebuild_every": 0}
    )
    with caplog.at_level("INFO", logger="bot.core.memory.summarizer"):
        async with open_app(config) as app:
            for i in range(12):
                await app.engine.handle_message(
                    said(f"invoice {4100 + i} is due on 2026-0{1 + i % 9}-1{i % 10}, {900 + i}")
                )
            summary = await app.store.latest_summary(conversation_key=GENERAL.key)
    made = sum(1 for body in llm.chat_requests if is_summary_request(body))  # summaries written
    assert summary is not None and KEPT_HEADING in summary.content  # as many as fit
    warnings = [r.getMessage() for r in caplog.records if "did not fit" in r.getMessage()]
    assert 1 <= len(warnings) <= made  # one line per summary, not one per message
    assert sum(int(w.split(" ", 1)[0]) for w in warnings) > len(warnings)
    assert all("recall can still find them" in w for w in warnings)


def long_winded(body: dict[str, Any]) -> Any:
    """A summary model that drops every fact and fills its whole answer with narrative."""
    if is_summary_request(body):
        story = " ".join(f"Then people talked about topic {i} at some length." for i in range(80))
        return f"Facts:\n- people chatted\nNarrative:\n{story}\nAnd more.\nAnd yet more."
    return respond(body)


async def test_important_messages_outrank_a_long_summary_within_a_quarter_of_the_budget(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.responder = long_winded
    budget = 1200
    config = make_config(
        memory={"strategy": "summary", "max_context_tokens": budget, "summary_rebuild_every": 0}
    )
    facts = ["decided: the launch is on 2026-03-01", "the budget is 4200 EUR", "deadline 12月15日"]
    async with open_app(config) as app:
        for fact in facts:
            await app.engine.handle_message(said(fact))
        for i in range(3):
            await app.engine.handle_message(said(f"chat {i}", who="Bo"))
        await run_command(app.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
    assert summary is not None
    assert summary.tokens <= budget // 4  # the cap the docs give
    assert count_prompt_tokens("gpt-4o-mini", [{"role": "system", "content": summary.content}]) <= (
        budget // 4 + 8
    )
    kept = summary.content.split(KEPT_HEADING, 1)[1]
    assert all(f"Ana: {fact}" in kept for fact in facts)
    text = summary.content.split(KEPT_HEADING, 1)[0]
    assert text.startswith("Facts:\n- people chatted\nNarrative:\nThen people talked")
    assert "And yet more." not in text  # the narrative's end made room
