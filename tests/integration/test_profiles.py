"""User profiles end to end: /remember, /profile, /forget, the profile in the prompt, facts the
summary model proposes, isolation between workspaces and what /reset and /forget delete.
SQLite and PostgreSQL, the real openai SDK, the local model server."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.commands import run_command
from bot.core.models import (
    CommandCall,
    Conversation,
    FactSource,
    IncomingMessage,
    Person,
    ReplyKind,
)
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, is_summary_request, respond
from tests.support.fake_llm import FakeLLM, count_prompt_tokens, encoding_for

pytestmark = pytest.mark.stores("sqlite", "postgres")

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")
ELSEWHERE = Conversation("console", "elsewhere", "general")
OWN = "What Ana (who is speaking now) asked you to remember about them:"
INFERRED = "Noted about Ana from earlier conversations (may be out of date):"


def said(text: str, who: str = "Ana", where: Conversation = GENERAL, addressed: bool = True):
    return IncomingMessage(where, who.lower(), who, text, addressed=addressed)


def command(name: str, argument: str = "", who: str = "Ana", where: Conversation = GENERAL):
    return CommandCall(where, name, argument, who.lower(), who)


def chat_bodies(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


def last_system(llm: FakeLLM) -> str:
    return str(chat_bodies(llm)[-1]["messages"][0]["content"])


def summary_with(text: str) -> Any:
    """The local server's usual answers, with ``text`` as every summary."""

    def responder(body: dict[str, Any]) -> Any:
        return text if is_summary_request(body) else respond(body)

    return responder


async def test_a_remembered_fact_is_shown_when_its_owner_speaks_and_only_then(
    app: App, llm: FakeLLM
) -> None:
    reply = await run_command(app.engine, command("remember", "I work from Berlin, UTC+1"))
    assert reply.kind is ReplyKind.INFO and reply.ephemeral
    assert reply.text.startswith("Remembered #1: I work from Berlin, UTC+1")
    await app.engine.handle_message(said("what time is it for me?"))
    assert f"{OWN}\n- I work from Berlin, UTC+1" in last_system(llm)
    # Bo speaks: Ana's profile is not his.
    await app.engine.handle_message(said("and for me?", who="Bo"))
    assert "Berlin" not in last_system(llm)
    # Another channel of the same workspace: the profile follows Ana.
    await app.engine.handle_message(said("hello", where=RANDOM))
    assert "I work from Berlin" in last_system(llm)
    # Another workspace: nothing of it.
    await app.engine.handle_message(said("hello", where=ELSEWHERE))
    assert "Berlin" not in last_system(llm)


async def test_the_profile_comes_after_the_pins_and_before_the_summary(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"strategy": "summary"})) as app:
        await run_command(app.engine, command("pin", "Releases ship on Fridays"))
        await run_command(app.engine, command("remember", "call me Annie"))
        for i in range(4):
            await app.engine.handle_message(said(f"FACT item {i}"))
        await run_command(app.engine, command("summarize"))
        await app.engine.handle_message(said("go on"))
    system = last_system(llm)
    positions = [
        system.find(part)
        for part in ("Releases ship on Fridays", "- call me Annie", "Summary of the earlier")
    ]
    assert -1 not in positions and positions == sorted(positions)
    assert count_prompt_tokens("gpt-4o-mini", chat_bodies(llm)[-1]["messages"]) <= 8000


async def test_profiles_are_kept_per_workspace_on_every_platform(app: App, llm: FakeLLM) -> None:
    places = {
        "slack T1": Conversation("slack", "T1", "C1"),
        "slack T2": Conversation("slack", "T2", "C1"),
        "discord server": Conversation("discord", "5001", "6001"),
        "discord DM": Conversation("discord", "dm", "8001"),
    }
    for label, where in places.items():
        await run_command(app.engine, command("remember", f"fact kept in {label}", where=where))
    for label, where in places.items():
        await app.engine.handle_message(said("hi", where=where))
        system = last_system(llm)
        assert f"fact kept in {label}" in system
        others = [other for other in places if other != label]
        assert not any(f"fact kept in {other}" in system for other in others), label
        listing = await run_command(app.engine, command("profile", where=where))
        assert f"fact kept in {label}" in listing.text
        assert not any(f"fact kept in {other}" in listing.text for other in others)


async def test_profile_lists_ids_and_sources_and_forget_removes_one_or_all(
    app: App, llm: FakeLLM
) -> None:
    empty = await run_command(app.engine, command("profile"))
    assert empty.ephemeral and "Nothing is kept about you" in empty.text
    await run_command(app.engine, command("remember", "prefers short answers"))
    await run_command(app.engine, command("remember", "is the release manager"))
    listing = await run_command(app.engine, command("profile"))
    assert listing.ephemeral
    assert "#1 (you set it): prefers short answers" in listing.text
    assert "#2 (you set it): is the release manager" in listing.text
    await app.engine.handle_message(said("hi"))
    assert "prefers short answers" in last_system(llm)
    assert "is the release manager" in last_system(llm)
    # Bo cannot delete Ana's facts: his /forget only reaches his own profile.
    refused = await run_command(app.engine, command("forget", "1", who="Bo"))
    assert refused.kind is ReplyKind.ERROR and "no fact #1" in refused.text
    assert (await run_command(app.engine, command("forget", "#1"))).text == "Forgot #1."
    await app.engine.handle_message(said("hello"))
    assert "prefers short answers" not in last_system(llm)
    assert "is the release manager" in last_system(llm)
    everything = await run_command(app.engine, command("forget", "all"))
    assert "Forgot 1 fact kept about you" in everything.text
    await app.engine.handle_message(said("hello again"))
    assert OWN not in last_system(llm) and "release manager" not in last_system(llm)
    usage = await run_command(app.engine, command("forget", "everything"))
    assert usage.kind is ReplyKind.ERROR and "Usage: /forget ID" in usage.text


async def test_bad_remember_input_gets_a_clear_answer_and_loses_nothing(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"profile_tokens": 40})) as app:
        usage = await run_command(app.engine, command("remember", "   "))
        assert usage.kind is ReplyKind.ERROR and "Usage: /remember TEXT" in usage.text
        await run_command(app.engine, command("remember", "likes tea"))
        again = await run_command(app.engine, command("remember", "Likes tea"))
        assert again.text == "Already remembered as #1: likes tea"
        too_long = await run_command(app.engine, command("remember", "word " * 60))
        assert too_long.kind is ReplyKind.ERROR and too_long.text.startswith("Not remembered")
        facts = await app.store.profile_facts(person=Person("console", "local", "ana"))
        assert [f.text for f in facts] == ["likes tea"]
    async with open_app(make_config(memory={"profile_tokens": 0})) as app:
        off = await run_command(app.engine, command("remember", "likes tea"))
        assert off.kind is ReplyKind.ERROR and "turned off" in off.text
        await app.engine.handle_message(said("hi"))
        assert "likes tea" not in last_system(llm)  # 0 keeps profiles out of prompts


async def test_the_profile_is_counted_in_the_budget_and_in_stats(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "full", "max_context_tokens": 400})
    async with open_app(config) as app:
        await run_command(app.engine, command("remember", "time zone Asia/Shanghai"))
        for i in range(15):
            await app.engine.handle_message(said(f"message {i} " + "filler " * 10))
        stats = await run_command(app.engine, command("stats"))
    for body in chat_bodies(llm):
        assert count_prompt_tokens("gpt-4o-mini", body["messages"]) <= 400
        assert "time zone Asia/Shanghai" in body["messages"][0]["content"]
    line = next(x for x in stats.text.splitlines() if x.strip().startswith("profile"))
    assert "(1 fact about who speaks)" in line
    block = f"{OWN}\n- time zone Asia/Shanghai"
    assert int(line.split()[1]) == len(encoding_for("gpt-4o-mini").encode_ordinary(block))
    shown = int(stats.text.split("Prompt: ")[1].split(" /")[0].replace(",", ""))
    assert shown <= 400


async def test_the_summary_model_proposes_profile_facts_marked_as_inferred(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.responder = summary_with(
        "Facts:\n- FACT the launch is on 2026-03-01\nNarrative:\nAna and Bo planned.\n"
        "Profiles:\n"
        "PROFILE Ana: prefers answers in German\n"
        "- PROFILE Bo: is on call this week\n"
        "PROFILE Nobody: is not in the conversation\n"
        "PROFILE : no name\n"
        "PROFILE Ana prefers tea\n"
    )
    async with open_app(make_config(memory={"strategy": "summary"})) as app:
        await app.engine.handle_message(said("FACT the launch is on 2026-03-01"))
        await app.engine.handle_message(said("I'm on call this week", who="Bo"))
        for i in range(3):
            await app.engine.handle_message(said(f"chat {i}"))
        reply = await run_command(app.engine, command("summarize"))
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
        assert summary is not None and "PROFILE" not in summary.content
        assert "Profiles" not in summary.content and "Ana and Bo planned" in summary.content
        assert "PROFILE" not in reply.text
        ana = await app.store.profile_facts(person=Person("console", "local", "ana"))
        bo = await app.store.profile_facts(person=Person("console", "local", "bo"))
        assert [(f.text, f.source) for f in ana] == [
            ("prefers answers in German", FactSource.SUMMARY)
        ]
        assert [f.text for f in bo] == ["is on call this week"]
        listing = await run_command(app.engine, command("profile"))
        assert "(inferred from conversation): prefers answers in German" in listing.text
        await app.engine.handle_message(said("hallo"))
        assert f"{INFERRED}\n- prefers answers in German" in last_system(llm)
        # The same proposal again is not stored twice.
        await app.engine.handle_message(said("more"))
        await app.engine.handle_message(said("and more"))
        await run_command(app.engine, command("summarize"))
        ana = await app.store.profile_facts(person=Person("console", "local", "ana"))
        assert len(ana) == 1


async def test_forget_all_removes_inferred_facts_and_they_are_not_inferred_again_from_old_messages(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.responder = summary_with(
        "Facts:\n- chat\nNarrative:\nchat.\nProfiles:\nPROFILE Ana: lives in Lyon\n"
    )
    ana = Person("console", "local", "ana")
    config = make_config(memory={"strategy": "summary", "summary_rebuild_every": 1})
    async with open_app(config) as app:
        await app.engine.handle_message(said("I live in Lyon"))
        for i in range(3):
            await app.engine.handle_message(said(f"chat {i}", who="Bo"))
        await run_command(app.engine, command("summarize"))
        await run_command(app.engine, command("remember", "vegetarian"))
        assert {f.source for f in await app.store.profile_facts(person=ana)} == {
            FactSource.USER,
            FactSource.SUMMARY,
        }
        forgot = await run_command(app.engine, command("forget", "all"))
        assert "Forgot 2 facts kept about you" in forgot.text
        # Every compaction rebuilds from the raw messages, Ana's old one included: the model
        # proposes the fact again, but from messages older than her /forget; not stored.
        for i in range(2):
            await app.engine.handle_message(said(f"more chat {i}", who="Bo"))
        await run_command(app.engine, command("summarize"))
        assert await app.store.profile_facts(person=ana) == []
        # Once she writes again, what she says may be noted again.
        await app.engine.handle_message(said("still in Lyon"))
        assert "lives in Lyon" not in last_system(llm)
        for i in range(2):
            await app.engine.handle_message(said(f"later {i}", who="Bo"))
        await run_command(app.engine, command("summarize"))
        assert [f.text for f in await app.store.profile_facts(person=ana)] == ["lives in Lyon"]


async def test_reset_forgets_the_channel_in_every_layer_but_leaves_profiles_to_forget(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"strategy": "summary"})) as app:
        await run_command(app.engine, command("pin", "PIN-MARK"))
        await run_command(app.engine, command("remember", "PROFILE-MARK"))
        for i in range(4):
            await app.engine.handle_message(said(f"FACT HISTORY-MARK {i}"))
        await run_command(app.engine, command("summarize"))
        assert await app.store.latest_summary(conversation_key=GENERAL.key) is not None
        await run_command(app.engine, command("reset", "all"))
        await app.engine.handle_message(said("fresh start"))
        prompt = chat_bodies(llm)[-1]["messages"]
        text = "\n".join(m["content"] for m in prompt)
        assert "HISTORY-MARK" not in text and "PIN-MARK" not in text
        assert await app.store.latest_summary(conversation_key=GENERAL.key) is None
        # The profile belongs to Ana, not to the channel: /reset leaves it.
        assert "PROFILE-MARK" in prompt[0]["content"]
        await run_command(app.engine, command("forget", "all"))
        await app.engine.handle_message(said("and now"))
        prompt = chat_bodies(llm)[-1]["messages"]
        assert "PROFILE-MARK" not in prompt[0]["content"]
        # /forget is about the person: the channel's conversation stays.
        assert [m["content"] for m in prompt[1:]] == [
            "[Ana] fresh start",
            "echo: [Ana] fresh start",
            "[Ana] and now",
        ]
