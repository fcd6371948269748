"""The engine in-process: the in-memory store and an in-process chat model, no SQLite, no
server; the turn from storing a message to storing its answer."""

from __future__ import annotations

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind, Role
from bot.core.ports.llm import Failure, LLMError
from tests.support.core import running_core, unit_config
from tests.support.fake_llm import count_prompt_tokens

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")


def said(
    text: str,
    who: str = "Ana",
    where: Conversation = GENERAL,
    addressed: bool = True,
    message_id: str | None = None,
) -> IncomingMessage:
    return IncomingMessage(
        where, who.lower(), who, text, addressed=addressed, message_id=message_id
    )


def command(name: str, argument: str = "", where: Conversation = GENERAL) -> CommandCall:
    return CommandCall(where, name, argument, "ana", "Ana")


def contents(messages: list[dict[str, str]]) -> list[str]:
    return [message["content"] for message in messages]


async def test_a_prompt_is_the_system_prompt_the_pins_and_the_turns() -> None:
    async with running_core(unit_config()) as core:
        await run_command(core.engine, command("pin", "The release is on 2026-12-15"))
        await core.engine.handle_message(said("hi, I'm Ana"))
        reply = await core.engine.handle_message(said("and I'm Bo", who="Bo"))
        prompt = core.model.chats()[-1]
    assert reply is not None and reply.text == "echo: [Bo] and I'm Bo"
    assert prompt[0]["role"] == "system"
    assert prompt[0]["content"].startswith("You are a test assistant.")
    assert "The release is on 2026-12-15" in prompt[0]["content"]
    assert contents(prompt)[1:] == [
        "[Ana] hi, I'm Ana",
        "echo: [Ana] hi, I'm Ana",
        "[Bo] and I'm Bo",
    ]
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user"]


async def test_the_budget_is_kept_by_leaving_out_whole_old_turns() -> None:
    config = unit_config(memory={"strategy": "full", "max_context_tokens": 300})
    async with running_core(config) as core:
        for i in range(30):
            await core.engine.handle_message(said(f"message {i} " + "filler " * 10))
        stored = await core.store.count_messages(conversation_key=GENERAL.key)
        prompts = core.model.chats()
    assert stored == 60  # trimming deletes nothing
    for prompt in prompts:
        assert count_prompt_tokens("gpt-4o-mini", prompt) <= 300
        assert contents(prompt)[1].startswith("[Ana]")  # never an answer without its question
    assert contents(prompts[-1])[-1].startswith("[Ana] message 29")
    assert not any("message 0 " in text for text in contents(prompts[-1]))


async def test_conversations_do_not_see_each_other() -> None:
    async with running_core(unit_config()) as core:
        await core.engine.handle_message(said("the code is 4242"))
        await core.engine.handle_message(said("what is the code?", where=RANDOM))
        prompt = core.model.chats()[-1]
    assert not any("4242" in text for text in contents(prompt))


async def test_a_redelivered_message_is_stored_and_answered_once() -> None:
    async with running_core(unit_config()) as core:
        first = await core.engine.handle_message(said("hello", message_id="m1"))
        again = await core.engine.handle_message(said("hello", message_id="m1"))
        stored = await core.store.count_messages(conversation_key=GENERAL.key)
    assert first is not None and first.kind is ReplyKind.ANSWER
    assert again is None
    assert stored == 2


async def test_unaddressed_messages_are_remembered_but_not_answered() -> None:
    async with running_core(unit_config()) as core:
        assert await core.engine.handle_message(said("lunch at noon", addressed=False)) is None
        await core.engine.handle_message(said("when is lunch?"))
        prompt = core.model.chats()[-1]
    assert len(core.model.chats()) == 1
    assert "[Ana] lunch at noon" in contents(prompt)


async def test_edits_and_deletions_reach_the_next_prompt() -> None:
    async with running_core(unit_config()) as core:
        meeting = said("the meeting is at 3", who="Bo", addressed=False, message_id="m1")
        await core.engine.handle_message(meeting)
        assert await core.engine.edit_message(GENERAL, "m1", "the meeting is at 4")
        await core.engine.handle_message(said("when is the meeting?"))
        edited = core.model.chats()[-1]
        assert await core.engine.delete_message(GENERAL, "m1")
        assert not await core.engine.delete_message(GENERAL, "m1")
        await core.engine.handle_message(said("and now?"))
        deleted = core.model.chats()[-1]
    assert "[Bo] the meeting is at 4" in contents(edited)
    assert not any("meeting is at" in text for text in contents(deleted))


async def test_a_failed_model_call_is_explained_and_the_question_kept() -> None:
    async with running_core(unit_config()) as core:
        core.model.failures.append(LLMError(Failure.TIMEOUT, "slow"))
        reply = await core.engine.handle_message(said("are you there?"))
        stored = await core.store.recent_messages(
            conversation_key=GENERAL.key, through_id=10**9, after_turn=0, limit=10
        )
        retried = await core.engine.handle_message(said("now?"))
        prompt = core.model.chats()[-1]
    assert reply is not None and reply.kind is ReplyKind.ERROR
    assert "did not answer in time" in reply.text
    assert [(m.role, m.content) for m in stored] == [(Role.USER, "are you there?")]
    assert retried is not None and retried.kind is ReplyKind.ANSWER
    assert contents(prompt)[1:] == ["[Ana] are you there?", "[Ana] now?"]


async def test_usage_is_recorded_per_conversation() -> None:
    async with running_core(unit_config()) as core:
        await core.engine.handle_message(said("hello"))
        await core.engine.handle_message(said("again"))
        totals = await core.store.usage(conversation_key=GENERAL.key)
    assert [(t.purpose, t.requests) for t in totals] == [("chat", 2)]
    assert totals[0].prompt_tokens > 0


async def test_a_foreign_models_budget_is_calibrated_from_its_reported_usage() -> None:
    config = unit_config(llm={"chat_model": "local-model"})
    async with running_core(config) as core:
        core.model.usage_ratio = 2.0  # its tokenizer counts twice what ours does
        for i in range(5):
            await core.engine.handle_message(said(f"message {i}"))
        calibration = core.engine.calibrator.get("local-model")
        budget = core.engine.budget(await core.engine.settings_for(GENERAL))
        saved = list(await core.store.calibration_samples())
    assert calibration is not None and calibration.rates[0] > 1.9
    assert budget < 8000 / 2
    assert [s.reported / (s.latin + s.cjk + s.other) for s in saved] == pytest.approx(
        [2.0] * 5, abs=0.1
    )


@pytest.mark.parametrize("include_pins", [False, True])
async def test_reset_forgets_the_conversation(include_pins: bool) -> None:
    async with running_core(unit_config()) as core:
        await run_command(core.engine, command("pin", "keep me"))
        await core.engine.handle_message(said("remember this"))
        reply = await run_command(core.engine, command("reset", "all" if include_pins else ""))
        pins = await core.store.pins(channel_key=GENERAL.channel_key)
        await core.engine.handle_message(said("fresh start"))
        prompt = core.model.chats()[-1]
    assert "Forgot 2 messages" in reply.text
    assert len(pins) == (0 if include_pins else 1)
    assert contents(prompt)[1:] == ["[Ana] fresh start"]


async def test_a_thread_sees_its_channels_pins_but_not_its_messages() -> None:
    thread = Conversation("console", "local", "general", thread="t1")
    async with running_core(unit_config()) as core:
        await run_command(core.engine, command("pin", "the channel's pinned fact"))
        await core.engine.handle_message(said("channel chatter"))
        await core.engine.handle_message(said("in the thread", where=thread))
        prompt = core.model.chats()[-1]
    assert "the channel's pinned fact" in prompt[0]["content"]
    assert contents(prompt)[1:] == ["[Ana] in the thread"]


async def test_pins_that_would_crowd_out_the_conversation_are_refused() -> None:
    async with running_core(unit_config(memory={"max_context_tokens": 300})) as core:
        reply = await run_command(core.engine, command("pin", "word " * 200))
        pins = await core.store.pins(channel_key=GENERAL.channel_key)
    assert reply.kind is ReplyKind.ERROR and "Not pinned" in reply.text
    assert pins == []


async def test_a_message_larger_than_the_budget_is_kept_and_explained() -> None:
    async with running_core(unit_config(memory={"max_context_tokens": 300})) as core:
        giant = await core.engine.handle_message(said("long " * 1000))
        stored = await core.store.count_messages(conversation_key=GENERAL.key)
        asked = len(core.model.chats())
        after = await core.engine.handle_message(said("short one"))
    assert giant is not None and giant.kind is ReplyKind.ERROR
    assert "too long to send" in giant.text
    assert (stored, asked) == (1, 0)
    # the giant turn never fits again, but it does not block the turns after it
    assert after is not None and after.kind is ReplyKind.ANSWER
