"""The memory engine end to end: on SQLite and PostgreSQL, the real openai SDK, a local model
server."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind, Role
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, is_summary_request, respond
from tests.support.fake_llm import FakeLLM, Reply, count_prompt_tokens

pytestmark = pytest.mark.stores("sqlite", "postgres")

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")


def said(text: str, who: str = "Ana", where: Conversation = GENERAL, addressed: bool = True):
    return IncomingMessage(where, who.lower(), who, text, addressed=addressed)


def command(name: str, argument: str = "", where: Conversation = GENERAL, **kw: Any):
    return CommandCall(where, name, argument, "ana", "Ana", **kw)


def chat_bodies(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


def contents(body: dict[str, Any]) -> list[str]:
    return [message["content"] for message in body["messages"]]


async def test_prompt_has_system_then_pins_then_turns_with_speakers(app: App, llm: FakeLLM) -> None:
    await run_command(app.engine, command("pin", "The release is on 2026-12-15"))
    await app.engine.handle_message(said("hi, I'm Ana"))
    await app.engine.handle_message(said("and I'm Bo", who="Bo"))
    body = chat_bodies(llm)[-1]
    system = body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith("You are a test assistant.")
    assert "asked you to keep" in system["content"]
    assert "The release is on 2026-12-15" in system["content"]
    assert contents(body)[1:] == ["[Ana] hi, I'm Ana", "echo: [Ana] hi, I'm Ana", "[Bo] and I'm Bo"]
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]


async def test_engine_count_matches_the_servers_count_exactly(app: App, llm: FakeLLM) -> None:
    await run_command(app.engine, command("pin", "数据库密码轮换周期是 90 天 <|endoftext|>"))
    for text in [
        "hello",
        "这是中文消息，包含一些字符。",
        "emoji 🎉🎉 and <|im_start|>",
        "x" * 5000,
    ]:
        await app.engine.handle_message(said(text, who="Zoë"))
    # The server reports usage.prompt_tokens, counted independently; the ratio of that to the
    # engine's own count of every prompt it sent is exactly 1.
    calibration = app.engine.calibrator.get("gpt-4o-mini")
    assert calibration is not None and calibration.samples == 4
    assert calibration.lowest == calibration.highest == 1.0


async def test_budget_is_kept_and_whole_turns_are_evicted(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "full", "max_context_tokens": 300})
    async with open_app(config) as app:
        for i in range(30):
            await app.engine.handle_message(said(f"message {i} " + "filler " * 10))
        stored = await app.store.count_messages(conversation_key=GENERAL.key)
    assert stored == 60  # nothing is ever deleted by trimming
    for body in chat_bodies(llm):
        assert count_prompt_tokens("gpt-4o-mini", body["messages"]) <= 300
        turns = contents(body)[1:]
        assert turns[0].startswith("[Ana]")  # never a reply without its question
        assert turns[-1].startswith("[Ana] message")
    last = contents(chat_bodies(llm)[-1])
    assert last[-1].startswith("[Ana] message 29")
    assert not any("message 0 " in text for text in last)


async def test_window_strategy_keeps_the_last_n_turns(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "window", "window_turns": 3})
    async with open_app(config) as app:
        for i in range(6):
            await app.engine.handle_message(said(f"m{i}"))
    assert contents(chat_bodies(llm)[-1])[1:] == [
        "[Ana] m3",
        "echo: [Ana] m3",
        "[Ana] m4",
        "echo: [Ana] m4",
        "[Ana] m5",
    ]


async def test_channels_do_not_see_each_other(app: App, llm: FakeLLM) -> None:
    await run_command(app.engine, command("pin", "general secret pin"))
    await app.engine.handle_message(said("general only message"))
    await app.engine.handle_message(said("hello random", where=RANDOM))
    body = chat_bodies(llm)[-1]
    assert "general" not in " ".join(contents(body)[1:])
    assert "general secret pin" not in body["messages"][0]["content"]


async def test_a_thread_sees_its_channels_pins_but_not_its_messages(app: App, llm: FakeLLM) -> None:
    await run_command(app.engine, command("pin", "the channel's pinned fact"))
    await app.engine.handle_message(said("channel chatter"))
    thread = Conversation("console", "local", "general", thread="t1")
    await app.engine.handle_message(said("in the thread", where=thread))
    body = chat_bodies(llm)[-1]
    assert "the channel's pinned fact" in body["messages"][0]["content"]
    assert contents(body)[1:] == ["[Ana] in the thread"]


async def test_unaddressed_messages_are_remembered_but_not_answered(app: App, llm: FakeLLM) -> None:
    assert (
        await app.engine.handle_message(said("lunch at noon?", who="Bo", addressed=False)) is None
    )
    assert chat_bodies(llm) == []
    await app.engine.handle_message(said("what did Bo ask?"))
    assert contents(chat_bodies(llm)[-1])[1:] == ["[Bo] lunch at noon?", "[Ana] what did Bo ask?"]


async def test_pins_that_would_crowd_out_the_conversation_are_refused(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"max_context_tokens": 300})) as app:
        reply = await run_command(app.engine, command("pin", "word " * 200))
        assert reply.kind is ReplyKind.ERROR and "Not pinned" in reply.text
        assert await app.store.pins(channel_key=GENERAL.channel_key) == []


async def test_a_message_larger_than_the_budget_is_kept_and_explained(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"max_context_tokens": 300})) as app:
        reply = await app.engine.handle_message(said("long " * 1000))
        assert reply is not None and reply.kind is ReplyKind.ERROR
        assert "too long to send" in reply.text
        assert await app.store.count_messages(conversation_key=GENERAL.key) == 1
        assert chat_bodies(llm) == []
        # The giant turn never fits again, but it doesn't block the turns before it.
        reply = await app.engine.handle_message(said("short one"))
        assert reply is not None and reply.kind is ReplyKind.ANSWER


async def test_model_failures_get_an_honest_reply_and_history_stays_consistent(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(llm={"max_retries": 0, "timeout_seconds": 0.5})
    async with open_app(config) as app:
        cases = [
            (Reply.server_error(), "could not reach the model"),
            (Reply.rate_limited(retry_after=1), "rate-limited; try again in about 1 s"),
            (Reply(text="late", delay=2), "did not answer in time"),
            (Reply(close_connection=True), "could not reach the model"),
            (Reply(raw_body="{not json"), "could not read"),
            (Reply(text=""), "empty reply"),
            (
                Reply(status=401, error={"error": {"message": "bad key sk-123", "code": None}}),
                "no API key is set; an operator needs to set OPENAI_API_KEY",
            ),
        ]
        for scripted, expected in cases:
            llm.script(scripted)
            reply = await app.engine.handle_message(said(f"trigger {expected}"))
            assert reply is not None and reply.kind is ReplyKind.ERROR, expected
            assert expected in reply.text
            assert "sk-123" not in reply.text
        ok = await app.engine.handle_message(said("and now?"))
        assert ok is not None and ok.text == "echo: [Ana] and now?"
        # Every question is stored; only the one that got an answer has a reply.
        stored = await app.store.recent_messages(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=100
        )
        assert [m.role for m in reversed(stored)] == [Role.USER] * 8 + [Role.ASSISTANT]


async def test_retries_429_and_5xx_then_answers(app: App, llm: FakeLLM) -> None:
    llm.script(Reply.rate_limited(retry_after=0.05), Reply.server_error(), "finally")
    reply = await app.engine.handle_message(said("hello?"))
    assert reply is not None and reply.text == "finally"
    assert len(chat_bodies(llm)) == 3


async def test_context_length_error_shrinks_the_prompt_and_retries_once(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"strategy": "full"})) as app:
        for i in range(10):
            await app.engine.handle_message(said(f"turn {i} " + "x " * 50))
        llm.script(Reply.context_length(), "fits now")
        reply = await app.engine.handle_message(said("last"))
    assert reply is not None and reply.text == "fits now"
    overflowed, retried = chat_bodies(llm)[-2:]
    assert len(retried["messages"]) < len(overflowed["messages"])
    assert contents(retried)[-1] == "[Ana] last"


async def test_a_context_length_error_naming_the_window_sizes_the_retry_to_it(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """A small local model (llama.cpp's server says its window in the error): the retry
    fits that window, with room for the answer, at the first try."""
    llm.context_window["local-model"] = 1600
    config = make_config(
        llm={"chat_model": "local-model", "summary_model": "gpt-4o-mini"},
        memory={"strategy": "full", "max_context_tokens": 4000},
    )
    async with open_app(config) as app:
        for i in range(60):
            await app.engine.handle_message(said(f"turn {i} " + "x " * 20, addressed=False))
        reply = await app.engine.handle_message(said("last"))
        max_reply = (await app.engine.settings_for(GENERAL)).max_reply_tokens
    assert reply is not None and reply.text == "echo: [Ana] last"
    overflowed, retried = chat_bodies(llm)[-2:]
    assert count_prompt_tokens("local-model", overflowed["messages"]) + max_reply > 1600
    assert count_prompt_tokens("local-model", retried["messages"]) + max_reply <= 1600


async def test_local_model_budget_is_calibrated_from_reported_usage(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.models.append("llama3.1:8b")
    llm.prompt_token_factor["llama3.1:8b"] = 1.5  # its tokenizer counts 50% more than ours
    config = make_config(
        llm={"chat_model": "llama3.1:8b", "summary_model": "llama3.1:8b"},
        memory={"strategy": "full", "max_context_tokens": 600},
    )
    async with open_app(config) as app:
        assert not app.engine.tokenizer.exact
        for i in range(25):
            await app.engine.handle_message(said(f"message {i} " + "words " * 8))
        calibration = app.engine.calibrator.get("llama3.1:8b")
        assert calibration is not None and 1.45 < calibration.rates[0] < 1.6  # Latin
        assert app.engine.budget(await app.engine.settings_for(GENERAL)) < 600 / 1.5
    # After the first reply, what the server counts stays within the budget.
    for body in chat_bodies(llm)[1:]:
        reported = round(count_prompt_tokens("llama3.1:8b", body["messages"]) * 1.5)
        assert reported <= 600


async def test_calibration_survives_a_restart(make_config: ConfigFactory, llm: FakeLLM) -> None:
    llm.prompt_token_factor["local-model"] = 2.0
    config = make_config(llm={"chat_model": "local-model", "summary_model": "local-model"})
    async with open_app(config) as app:
        await app.engine.handle_message(said("hello"))
    async with open_app(config) as app:
        calibration = app.engine.calibrator.get("local-model")
        assert calibration is not None and calibration.samples == 1
        assert calibration.rates[0] > 1.7  # from the prior's 1.0, after one small prompt
        assert app.engine.budget(await app.engine.settings_for(GENERAL)) < 8000 / 2


async def test_summaries_fold_old_turns_and_carry_facts_forward(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(
        memory={"max_context_tokens": 600, "summary_rebuild_every": 0, "keep_recent_turns": 2}
    )
    async with open_app(config) as app:
        await app.engine.handle_message(said("FACT Ana's budget is 4200 EUR"))
        for i in range(40):
            await app.engine.handle_message(said(f"small talk {i} " + "blah " * 10))
            await app.engine.drain()
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
        assert summary is not None and summary.compactions >= 2
        assert "FACT Ana's budget is 4200 EUR" in summary.content
        assert summary.message_count > 0 and summary.first_message_id == 1
        stored = await app.store.count_messages(conversation_key=GENERAL.key)
        assert stored == 82
    summary_calls = [b for b in llm.chat_requests if is_summary_request(b)]
    assert len(summary_calls) >= 2
    # Incremental: the second call starts from the first summary, not from raw history.
    assert "FACT Ana's budget" in contents(summary_calls[1])[-1].split("New messages:")[0]
    last = chat_bodies(llm)[-1]
    assert "FACT Ana's budget is 4200 EUR" in last["messages"][0]["content"]
    assert count_prompt_tokens("gpt-4o-mini", last["messages"]) <= 600
    # The last two turns are always verbatim.
    assert contents(last)[-3:] == [
        "[Ana] small talk 38 " + "blah " * 10,
        ("echo: [Ana] small talk 38 " + "blah " * 10).strip(),
        "[Ana] small talk 39 " + "blah " * 10,
    ]


async def test_summary_is_rebuilt_from_raw_messages_every_n_compactions(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"max_context_tokens": 500, "summary_rebuild_every": 2})
    async with open_app(config) as app:
        await app.engine.handle_message(said("FACT the deploy key rotates monthly"))
        for i in range(40):
            await app.engine.handle_message(said(f"chat {i} " + "blah " * 10))
            await app.engine.drain()
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
        assert summary is not None
    rebuilds = [
        b
        for b in llm.chat_requests
        if is_summary_request(b) and "Previous summary: (none)" in contents(b)[-1]
    ]
    # The first compaction and every rebuild start from no summary and the raw messages.
    assert len(rebuilds) >= 2
    assert "[" in contents(rebuilds[-1])[-1] and "FACT the deploy key" in contents(rebuilds[-1])[-1]
    assert "FACT the deploy key rotates monthly" in summary.content


async def test_a_failed_summary_loses_nothing_and_is_retried(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(
        memory={"max_context_tokens": 400, "summary_retry_seconds": 0},
        llm={"max_retries": 0},
    )
    failing = True

    def responder(body: dict[str, Any]) -> Any:
        if is_summary_request(body) and failing:
            return Reply.server_error()
        return respond(body)

    llm.responder = responder
    async with open_app(config) as app:
        for i in range(20):
            fact = "FACT number 0 " if i == 0 else ""
            await app.engine.handle_message(said(f"{fact}message {i} " + "pad " * 10))
            await app.engine.drain()
        assert await app.store.latest_summary(conversation_key=GENERAL.key) is None
        assert await app.store.count_messages(conversation_key=GENERAL.key) == 40
        failing = False
        await app.engine.handle_message(said("one more"))
        await app.engine.drain()
        summary = await app.store.latest_summary(conversation_key=GENERAL.key)
    assert summary is not None and "FACT number 0" in summary.content


async def test_messages_arriving_during_a_summary_are_kept(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"max_context_tokens": 400})

    def slow_summaries(body: dict[str, Any]) -> Any:
        if is_summary_request(body):
            return Reply(text=respond(body), delay=0.5)
        return respond(body)

    llm.responder = slow_summaries
    async with open_app(config) as app:
        for i in range(12):
            await app.engine.handle_message(said(f"before {i} " + "pad " * 10))
        assert app.engine.background.summarizing(GENERAL)  # a summary is running
        started = asyncio.get_running_loop().time()
        replies = await asyncio.gather(
            *(app.engine.handle_message(said(f"during {i}", who="Bo")) for i in range(5))
        )
        # Replies did not wait for the 0.5 s summary.
        assert asyncio.get_running_loop().time() - started < 0.5
        assert all(r is not None and r.kind is ReplyKind.ANSWER for r in replies)
        await app.engine.drain()
        stored = await app.store.recent_messages(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=1000
        )
    texts = [m.content for m in stored]
    assert all(f"during {i}" in texts for i in range(5))
    assert len(stored) == 34


async def test_reset_forgets_history_and_summary_and_keeps_pins_unless_asked(
    app: App, llm: FakeLLM
) -> None:
    await run_command(app.engine, command("pin", "keep me"))
    await app.engine.handle_message(said("remember this"))
    reply = await run_command(app.engine, command("reset"))
    assert "Forgot 2 messages" in reply.text
    assert await app.store.count_messages(conversation_key=GENERAL.key) == 0
    assert len(await app.store.pins(channel_key=GENERAL.channel_key)) == 1
    await app.engine.handle_message(said("fresh start"))
    assert contents(chat_bodies(llm)[-1])[1:] == ["[Ana] fresh start"]
    await run_command(app.engine, command("reset", "all"))
    assert await app.store.pins(channel_key=GENERAL.channel_key) == []


async def test_reset_needs_permission(app: App) -> None:
    await app.engine.handle_message(said("hello"))
    reply = await run_command(app.engine, command("reset", can_manage=False))
    assert reply.kind is ReplyKind.ERROR and "admins" in reply.text
    assert await app.store.count_messages(conversation_key=GENERAL.key) == 2


async def test_pin_unpin_and_list(app: App) -> None:
    first = await run_command(app.engine, command("pin", "alpha"))
    assert first.text.startswith("Pinned #1: alpha")
    await run_command(app.engine, command("pin", "beta"))
    listing = await run_command(app.engine, command("pins"))
    assert "#1 (Ana): alpha" in listing.text and "#2 (Ana): beta" in listing.text
    assert (await run_command(app.engine, command("unpin", "#1"))).text == "Unpinned #1."
    missing = await run_command(app.engine, command("unpin", "1"))
    assert missing.kind is ReplyKind.ERROR and "no pin #1" in missing.text
    # Another channel cannot remove this channel's pin.
    other = await run_command(app.engine, command("unpin", "2", where=RANDOM))
    assert other.kind is ReplyKind.ERROR
    assert [p.text for p in await app.store.pins(channel_key=GENERAL.channel_key)] == ["beta"]
    # A removed pin's id is never reused.
    again = await run_command(app.engine, command("pin", "gamma"))
    assert again.text.startswith("Pinned #3")


async def test_stats_breaks_down_the_prompt(app: App, llm: FakeLLM) -> None:
    await run_command(app.engine, command("pin", "pinned fact"))
    await app.engine.handle_message(said("hello there"))
    reply = await run_command(app.engine, command("stats"))
    assert reply.ephemeral
    text = reply.text
    preview = await app.engine.preview(GENERAL)
    assert f"Prompt: {preview.prompt.tokens:,} / 8,000 tokens" in text
    for part in ("system", "pins", "summary", "recent"):
        assert part in text
    assert "Messages stored: 2; in the window: 2" in text
    assert "chat: 1 request, " in text
    assert "gpt-4o-mini: counted exactly with o200k_base" in text


async def test_unknown_and_malformed_commands_get_clear_answers(app: App) -> None:
    unknown = await run_command(app.engine, command("frobnicate"))
    assert unknown.kind is ReplyKind.ERROR and "Unknown command /frobnicate" in unknown.text
    assert "Usage: /pin" in (await run_command(app.engine, command("pin", "   "))).text
    assert "Usage: /unpin" in (await run_command(app.engine, command("unpin", "abc"))).text
    assert "Usage: /reset" in (await run_command(app.engine, command("reset", "everything"))).text


async def test_odd_text_is_stored_and_sent_safely(app: App, llm: FakeLLM) -> None:
    odd = ["<|endoftext|> hi", "nul\x00byte", "lone \ud800 surrogate", "rtl \u202e text \u200b"]
    for text in odd:
        reply = await app.engine.handle_message(said(text))
        assert reply is not None and reply.kind is ReplyKind.ANSWER
    stored = await app.store.recent_messages(
        conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=100
    )
    users = [m.content for m in reversed(stored) if m.role is Role.USER]
    assert users == ["<|endoftext|> hi", "nulbyte", "lone \ufffd surrogate", odd[3]]


async def test_edits_and_deletions_follow_the_platform(app: App, llm: FakeLLM) -> None:
    message = IncomingMessage(GENERAL, "bo", "Bo", "the meeting is at 3", False, message_id="m1")
    await app.engine.handle_message(message)
    assert await app.engine.edit_message(GENERAL, "m1", "the meeting is at 4")
    await app.engine.handle_message(said("when is the meeting?"))
    assert "[Bo] the meeting is at 4" in contents(chat_bodies(llm)[-1])
    assert await app.engine.delete_message(GENERAL, "m1")
    assert not await app.engine.delete_message(GENERAL, "m1")
    await app.engine.handle_message(said("and now?"))
    assert not any("meeting is at" in c for c in contents(chat_bodies(llm)[-1]))


async def test_summary_strategy_keeps_only_the_summary_and_the_last_turns(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(memory={"strategy": "summary", "keep_recent_turns": 2})
    async with open_app(config) as app:
        await app.engine.handle_message(said("FACT the office is in Lyon"))
        for i in range(5):
            await app.engine.handle_message(said(f"chat {i}"))
        reply = await run_command(app.engine, command("summarize"))
        # Everything but the last two turns is folded.
        assert "covers 8 messages" in reply.text
        assert "FACT the office is in Lyon" in reply.text
        await app.engine.handle_message(said("where is the office?"))
    last = chat_bodies(llm)[-1]
    assert "FACT the office is in Lyon" in last["messages"][0]["content"]
    assert contents(last)[1:] == [
        "[Ana] chat 3",
        "echo: [Ana] chat 3",
        "[Ana] chat 4",
        "echo: [Ana] chat 4",
        "[Ana] where is the office?",
    ]


async def test_strategies_without_a_summary_say_so(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"strategy": "window"})) as app:
        reply = await run_command(app.engine, command("summarize"))
    assert reply.kind is ReplyKind.ERROR and "keeps no summary" in reply.text


async def test_stats_warns_past_the_threshold(make_config: ConfigFactory, llm: FakeLLM) -> None:
    config = make_config(memory={"strategy": "full", "max_context_tokens": 400})
    async with open_app(config) as app:
        quiet = await run_command(app.engine, command("stats"))
        assert "Warning" not in quiet.text
        for i in range(12):
            await app.engine.handle_message(said(f"message {i} " + "filler " * 10))
        loud = await run_command(app.engine, command("stats"))
    assert "Warning: the prompt is past 70% of the budget" in loud.text


async def test_a_thread_starts_with_one_copy_of_its_root(app: App, llm: FakeLLM) -> None:
    root = IncomingMessage(GENERAL, "bo", "Bo", "shall we ship friday?", False, message_id="r1")
    await app.engine.handle_message(root)
    thread = Conversation("console", "local", "general", thread="r1")
    assert await app.engine.copy_message("r1", source=GENERAL, into=thread)
    assert not await app.engine.copy_message("r1", source=GENERAL, into=thread)  # seeded once
    await app.engine.handle_message(said("yes", where=thread))
    assert contents(chat_bodies(llm)[-1])[1:] == ["[Bo] shall we ship friday?", "[Ana] yes"]


async def test_shutdown_finishes_replies_in_flight_within_the_grace(app: App, llm: FakeLLM) -> None:
    llm.script(Reply(text="done in time", delay=0.3))
    reply = asyncio.create_task(app.engine.handle_message(said("quick")))
    await until_asked(llm)
    await app.engine.aclose(grace=5)
    # When aclose returns, the reply in flight has finished and its answer is stored.
    assert reply.done(), "aclose returned before the reply in flight finished"
    stored = await app.store.messages_between(
        conversation_key=GENERAL.key, first_id=0, through_id=10**9
    )
    assert [m.content for m in stored] == ["quick", "done in time"]
    answer = reply.result()
    assert answer is not None and answer.text == "done in time"


async def until_asked(llm: FakeLLM) -> None:
    """Until a chat request reaches the model."""
    for _ in range(500):
        if llm.chat_requests:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the model was never asked")


async def test_shutdown_abandons_a_slow_reply_but_keeps_its_question(
    app: App, llm: FakeLLM
) -> None:
    llm.script(Reply(text="too late", delay=30))
    reply = asyncio.create_task(app.engine.handle_message(said("slow")))
    await until_asked(llm)
    started = asyncio.get_running_loop().time()
    await app.engine.aclose(grace=0.2)
    assert asyncio.get_running_loop().time() - started < 2
    assert reply.cancelled()
    stored = await app.store.messages_between(
        conversation_key=GENERAL.key, first_id=0, through_id=10**9
    )
    assert [m.content for m in stored] == ["slow"]


async def test_a_speaker_tag_the_model_copies_to_its_reply_is_not_posted_or_kept(
    app: App, llm: FakeLLM
) -> None:
    """Small models imitate the ``[Name]`` that starts each user message in the prompt."""
    llm.script("[Bo] [Ana] The budget is 4200.", "[1] See the release notes.")
    await app.engine.handle_message(said("the budget is 4200", who="Bo", addressed=False))
    reply = await app.engine.handle_message(said("what is the budget?"))
    cited = await app.engine.handle_message(said("where is it written?"))
    assert reply is not None and reply.text == "The budget is 4200."
    assert cited is not None and cited.text == "[1] See the release notes."  # names nobody
    assert contents(chat_bodies(llm)[-1])[-2] == "The budget is 4200."


def at(day: int, hour: int) -> datetime:
    return datetime(2026, 12, day, hour, tzinfo=UTC)


async def test_recent_turns_over_several_days_show_each_days_date_once(
    app: App, llm: FakeLLM
) -> None:
    """A question about *when* finds each recent message's day: the first message of each
    UTC day, and the first of the window, open with the date; answers are never dated."""
    llm.script("Noted.", "Friday it is.", "On 2026-12-03.")
    script = [
        (at(1, 9), "Ana", "the release is on Friday", False),
        (at(1, 23), "Bo", "ok, Friday", True),
        (at(3, 8), "Ana", "the budget is 4200", False),
        (at(3, 9), "Bo", "confirmed", True),
        (at(4, 10), "Ana", "when did we set the budget?", True),
    ]
    for sent_at, who, text, addressed in script:
        message = IncomingMessage(GENERAL, who.lower(), who, text, addressed, sent_at=sent_at)
        await app.engine.handle_message(message)
    first_day, second_day, last = (contents(body)[1:] for body in chat_bodies(llm))
    assert first_day == ["[Ana] the release is on Friday", "[Bo] ok, Friday"]  # one day
    assert second_day[0] == "2026-12-01\n[Ana] the release is on Friday"
    assert last == [
        "2026-12-01\n[Ana] the release is on Friday",
        "[Bo] ok, Friday",
        "Noted.",
        "2026-12-03\n[Ana] the budget is 4200",
        "[Bo] confirmed",
        "Friday it is.",
        "2026-12-04\n[Ana] when did we set the budget?",
    ]
    calibration = app.engine.calibrator.get("gpt-4o-mini")
    assert (
        calibration is not None and calibration.lowest == calibration.highest == 1.0
    )  # counted exactly, dates too
    preview = (await app.engine.preview(GENERAL)).prompt
    assert preview.tokens == count_prompt_tokens("gpt-4o-mini", preview.messages)
    assert contents({"messages": preview.messages})[1] == last[0]


async def test_recent_turns_within_one_day_show_no_date(app: App, llm: FakeLLM) -> None:
    for hour, text in ((0, "good morning"), (12, "lunch?"), (23, "good night")):
        message = IncomingMessage(GENERAL, "ana", "Ana", text, True, sent_at=at(2, hour))
        await app.engine.handle_message(message)
    assert contents(chat_bodies(llm)[-1])[1:] == [
        "[Ana] good morning",
        "echo: [Ana] good morning",
        "[Ana] lunch?",
        "echo: [Ana] lunch?",
        "[Ana] good night",
    ]


async def test_summaries_learn_a_small_summary_models_context_and_fold_in_smaller_calls(
    make_config: ConfigFactory, llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    """A 1,200-token summary model (as a small local one on llama.cpp): the first fold
    overflows it; the bot learns its size from the error and folds in calls that fit."""
    llm.context_window["local-model"] = 1200
    config = make_config(
        llm={"summary_model": "local-model"},
        memory={"strategy": "summary", "max_context_tokens": 8000, "summary_rebuild_every": 0},
    )
    with caplog.at_level("WARNING", logger="bot.core.memory.summarizer"):
        async with open_app(config) as app:
            for i in range(60):
                await app.engine.handle_message(
                    said(f"status {i}: the migration of shard {i} is still running " * 2)
                )
            reply = await run_command(app.engine, command("summarize"))
            summary = await app.store.latest_summary(conversation_key=GENERAL.key)
    assert summary is not None, reply.text
    sent = [b for b in llm.chat_requests if is_summary_request(b)]
    fits = [
        count_prompt_tokens("local-model", b["messages"]) + b["max_tokens"] <= 1200 for b in sent
    ]
    assert fits[0] is False and all(fits[1:]) and len(fits) >= 2  # one overflow, then it fits
    assert summary.message_count > 0
    told = [r.getMessage() for r in caplog.records if "overflowed" in r.getMessage()]
    assert len(told) == 1 and "local-model" in told[0]
