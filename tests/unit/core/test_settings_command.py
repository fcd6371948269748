"""``/settings`` on the core: what is shown and where it comes from, who may change it, what a
bad value is told, the change log, threads inheriting, and the handler keeping to a channel's
answering and recording. In-process: the in-memory store and the in-process chat model."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import replace

from bot.core.commands import run_command
from bot.core.engine import Engine
from bot.core.handler import Handler
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from tests.support.core import running_core, unit_config

CHANNEL = Conversation("slack", "T1", "C1")
NEIGHBOUR = Conversation("slack", "T1", "C2")
THREAD = replace(CHANNEL, thread="100.0")


def settings(argument: str = "", where: Conversation = CHANNEL, **options: object) -> CommandCall:
    fields: dict[str, object] = {"can_manage": True, **options}
    return CommandCall(where, "settings", argument, "U1", "Ana", **fields)  # type: ignore[arg-type]


async def run(engine: Engine, argument: str = "", **options: object) -> Reply:
    return await run_command(engine, settings(argument, **options))


def config(**llm: object) -> object:
    return unit_config(
        llm={"allowed_models": ["big-model"], **llm},
        memory={"budget_ceiling": 16000, "max_context_tokens": 8000, "recall_tokens": 1600},
    )


async def test_settings_show_every_key_and_where_its_value_comes_from() -> None:
    async with running_core(unit_config()) as core:
        shown = (await run(core.engine)).text
        assert "• model: gpt-4o-mini (config: llm.chat_model)" in shown
        assert "• answer: mentions (config: answer_channels)" in shown
        await run(core.engine, "strategy window")
        here = (await run(core.engine)).text
        assert "• strategy: window (this channel)" in here
        in_thread = (await run(core.engine, where=THREAD)).text
        assert "• strategy: window (the channel (thread's parent))" in in_thread
        assert (
            "• strategy: hybrid (config: memory.strategy)"
            in (await run(core.engine, where=NEIGHBOUR)).text
        )


async def test_a_change_takes_effect_on_the_next_turn_in_that_channel_only() -> None:
    async with running_core(config()) as core:
        engine = core.engine
        changed = await run(engine, "model big-model")
        assert changed.kind is ReplyKind.INFO
        assert changed.text.startswith("model is now big-model in slack:T1:C1.")
        assert (await engine.settings_for(CHANNEL)).chat_model == "big-model"
        assert (await engine.settings_for(THREAD)).chat_model == "big-model"
        assert (await engine.settings_for(NEIGHBOUR)).chat_model == "gpt-4o-mini"
        await run(engine, "budget 12k")
        assert (await engine.settings_for(CHANNEL)).max_context_tokens == 12000
        # Recall keeps its share of the larger budget.
        assert (await engine.settings_for(CHANNEL)).recall.tokens == 2400


async def test_only_admins_change_settings_everyone_sees_them() -> None:
    async with running_core(unit_config()) as core:
        refused = await run(core.engine, "strategy window", can_manage=False)
        assert refused.kind is ReplyKind.ERROR and "Only channel admins" in refused.text
        assert (await core.engine.settings_for(CHANNEL)).strategy.value == "hybrid"
        reset = await run(core.engine, "reset strategy", can_manage=False)
        assert "Only channel admins" in reset.text
        seen = await run(core.engine, can_manage=False)
        assert seen.kind is ReplyKind.INFO and "• strategy: hybrid" in seen.text
        assert await core.store.setting_changes(scope=CHANNEL.key, limit=5) == []


async def test_a_bad_value_is_told_in_one_line_naming_the_key_and_what_is_allowed() -> None:
    async with running_core(config()) as core:
        told = {
            "model gpt-9": "model: 'gpt-9' is not allowed here; allowed: gpt-4o-mini, big-model",
            "budget 99999": "budget: 99,999 is not a number of tokens from 256 to 16,000",
            "budget lots": "budget: 'lots' is not a number of tokens from 256 to 16,000",
            "strategy smart": "strategy: 'smart' is not one of full, window, summary, hybrid",
            "recall maybe": "recall: 'maybe' is not on or off",
            "recall-share 80%": "recall-share: 80% is not a share of the budget from 0 to 50%",
            "answer sometimes": "answer: 'sometimes' is not one of mentions, all, none",
            "memory-group a b!": "memory-group: 'a b!' is not a name of letters, digits",
            "colour blue": "There is no setting 'colour'. Settings: persona, model,",
        }
        for typed, start in told.items():
            reply = await run(core.engine, typed)
            assert reply.kind is ReplyKind.ERROR, typed
            assert reply.text.startswith(start), reply.text
            assert "\n" not in reply.text
        assert await core.store.setting_changes(scope=CHANNEL.key, limit=5) == []


async def test_every_change_is_recorded_with_who_when_and_old_to_new() -> None:
    async with running_core(config()) as core:
        engine = core.engine
        await run(engine, "model big-model")
        await run(engine, "model big-model")  # no change: not recorded
        await run(engine, "model gpt-4o-mini")
        await run(engine, "reset model")
        history = (await run(engine, "history", can_manage=False)).text.splitlines()
        assert history[0] == "Latest changes to the settings of slack:T1:C1, newest first:"
        changes = [line.split(", ", 1)[1] for line in history[1:]]
        assert changes == [
            "Ana: model gpt-4o-mini → (default)",
            "Ana: model big-model → gpt-4o-mini",
            "Ana: model (default) → big-model",
        ]
        assert all(line.startswith("• ") and " UTC, " in line for line in history[1:])


async def test_reset_goes_back_to_the_default_and_reset_all_to_every_default() -> None:
    async with running_core(config()) as core:
        engine = core.engine
        await run(engine, "strategy window")
        await run(engine, "stream off")
        assert (await run(engine, "reset strategy")).text == (
            "Back to the defaults in slack:T1:C1: strategy hybrid."
        )
        assert not (await engine.settings_for(CHANNEL)).stream
        await run(engine, "reset all")
        assert (await engine.settings_for(CHANNEL)).stream
        assert "Nothing to reset" in (await run(engine, "reset budget")).text


async def test_a_thread_inherits_its_channel_and_may_set_its_own() -> None:
    async with running_core(config()) as core:
        engine = core.engine
        await run(engine, "persona You answer in haiku.")
        await run(engine, "strategy window", where=THREAD)
        thread = await engine.settings_for(THREAD)
        assert thread.system_prompt == "You answer in haiku." and thread.strategy.value == "window"
        assert (await engine.settings_for(CHANNEL)).strategy.value == "hybrid"
        shown = (await run(engine, where=THREAD)).text
        assert "• strategy: window (this thread)" in shown


async def test_a_persona_that_leaves_no_room_for_the_conversation_is_refused() -> None:
    async with running_core(unit_config(memory={"max_context_tokens": 600})) as core:
        refused = await run(core.engine, "persona " + "Be careful and thorough. " * 80)
        assert refused.kind is ReplyKind.ERROR
        assert refused.text.startswith("persona: the persona and pins would take")


async def test_a_private_channel_joins_a_memory_group_only_once_an_admin_opts_in() -> None:
    async with running_core(unit_config()) as core:
        engine = core.engine
        refused = await run(engine, "memory-group support", private=True)
        assert refused.kind is ReplyKind.ERROR and "share-private on" in refused.text
        await run(engine, "share-private on", private=True)
        joined = await run(engine, "memory-group support", private=True)
        assert joined.kind is ReplyKind.INFO
        assert (await engine.settings_for(CHANNEL)).memory_group == "support"
        left = await run(engine, "share-private off", private=True)
        assert "left the memory group support" in left.text
        assert (await engine.settings_for(CHANNEL)).memory_group is None
        public = await run(engine, "memory-group support", where=NEIGHBOUR)
        assert public.kind is ReplyKind.INFO


class Kept:
    def __init__(self) -> None:
        self.replies: list[str] = []

    def working(self) -> AbstractAsyncContextManager[None]:
        return nullcontext()

    async def show(self, text: str) -> None:
        pass

    async def send(self, reply: Reply) -> str | None:
        self.replies.append(reply.text)
        return None


def said(text: str, *, addressed: bool, where: Conversation = CHANNEL) -> IncomingMessage:
    return IncomingMessage(where, "U1", "Ana", text, addressed)


async def test_the_handler_keeps_to_the_channels_answering_and_recording() -> None:
    async with running_core(unit_config(llm={"stream": False})) as core:
        engine, kept = core.engine, Kept()
        handler = Handler(engine=engine)
        await handler.handle(said("lunch?", addressed=False), kept)
        assert kept.replies == []
        await run(engine, "answer all")
        await handler.handle(said("anyone?", addressed=False), kept)
        assert kept.replies == ["echo: [Ana] anyone?"]
        await run(engine, "answer none")
        await handler.handle(said("bot, hello?", addressed=True), kept)
        assert len(kept.replies) == 1  # listening only, but kept
        assert await core.store.count_messages(conversation_key=CHANNEL.key) == 4
        await run(engine, "record addressed")
        await handler.handle(said("not kept", addressed=False), kept)
        assert await core.store.count_messages(conversation_key=CHANNEL.key) == 4
        await run(engine, "answer mentions")
        await handler.handle(said("hi bot", addressed=True), kept)
        await handler.handle(said("still not kept", addressed=False), kept)
        assert kept.replies[-1] == "echo: [Ana] hi bot"
        assert await core.store.count_messages(conversation_key=CHANNEL.key) == 6
