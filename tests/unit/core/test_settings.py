"""Settings resolved per conversation: the same stored conversation, built with other settings,
gives the prompt those settings describe; the engine asks for a conversation's settings at the
start of each turn. In-process: the in-memory store and the in-process chat model."""

from __future__ import annotations

from dataclasses import replace

from bot.config import Strategy
from bot.core.commands import run_command
from bot.core.engine import Engine
from bot.core.memory.tokens import MESSAGE_OVERHEAD
from bot.core.models import CommandCall, Conversation, IncomingMessage, Person
from bot.core.prompt.assembler import Speaker
from bot.core.prompt.layout import Prompt
from bot.core.settings import Settings
from tests.support.core import running_core, unit_config

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")
PIRATE = "You are a pirate. Answer in pirate speak."


def said(text: str, where: Conversation = GENERAL, addressed: bool = True) -> IncomingMessage:
    return IncomingMessage(where, "ana", "Ana", text, addressed=addressed)


async def build(engine: Engine, settings: Settings, through_id: int) -> Prompt:
    return await engine.assembler.build(
        settings=settings,
        conversation_key=GENERAL.key,
        channel_key=GENERAL.channel_key,
        through_id=through_id,
        current_id=through_id,
        budget=engine.budget(settings),
        speaker=Speaker(Person.of(GENERAL, "ana"), "Ana"),
    )


async def test_one_stored_conversation_built_with_two_settings_gives_two_prompts() -> None:
    async with running_core(unit_config()) as core:
        engine = core.engine
        for i in range(6):
            await engine.handle_message(said(f"message number {i}"))
        last = await engine.record(said("and the last one"), embed=False)
        defaults = await engine.settings_for(GENERAL)
        pirate = replace(defaults, system_prompt=PIRATE, strategy=Strategy.WINDOW, window_turns=2)

        usual = await build(engine, defaults, last.id)
        other = await build(engine, pirate, last.id)

    assert usual.messages[0]["content"].startswith("You are a test assistant.")
    assert other.messages[0]["content"].startswith(PIRATE)
    assert PIRATE not in usual.messages[0]["content"]
    # The system prompt is counted in each prompt, as each has it.
    count = engine.tokenizer.count
    assert usual.breakdown["system"] == count("You are a test assistant.") + MESSAGE_OVERHEAD
    assert other.breakdown["system"] == count(PIRATE) + MESSAGE_OVERHEAD
    # The defaults hold the whole conversation; the window strategy its newest two turns.
    assert usual.window[0].content == "message number 0"
    assert len(usual.window) == 13 and not usual.turns_left_out
    newest = [m.content for m in usual.window][-3:]
    assert newest[0] == "message number 5" and newest[-1] == "and the last one"
    assert [m.content for m in other.window] == newest
    assert other.turns_left_out
    assert other.messages[-1]["content"].endswith("and the last one")


def setting(name: str, value: str, where: Conversation = RANDOM) -> CommandCall:
    return CommandCall(where, "settings", f"{name} {value}", "ana", "Ana", can_manage=True)


async def test_each_turn_is_built_with_its_conversations_settings() -> None:
    async with running_core(unit_config()) as core:
        engine = core.engine
        await engine.handle_message(said("hello general"))
        changed = await run_command(engine, setting("persona", PIRATE))
        assert "takes effect on the next message" in changed.text
        await engine.handle_message(said("hello random", where=RANDOM))
        await engine.handle_message(said("hello again"))
        await engine.handle_message(said("and you, pirate?", where=RANDOM))
    systems = [messages[0]["content"] for messages in core.model.chats()]
    assert [text.startswith(PIRATE) for text in systems] == [False, True, False, True]
