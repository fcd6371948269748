"""A channel's chat model and summary model (``/settings model``, ``summary-model``) in
force: answers, summaries and digests asked of them, usage, calibration and ``/stats``
following them, and a model the config no longer allows falling back. In-process: the
in-memory store and one in-process chat model per allowed name."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.config import Config
from bot.core.commands import run_command
from bot.core.engine import Engine
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from bot.core.ports.llm import Failure, LLMError
from bot.store.memory import MemoryStore
from tests.support.core import running_core, unit_config

CHANNEL = Conversation("slack", "T1", "C1")
NEIGHBOUR = Conversation("slack", "T1", "C2")
THREAD = replace(CHANNEL, thread="100.0")
NEIGHBOURS_THREAD = replace(NEIGHBOUR, thread="200.0")


def allowing(**llm: object) -> Config:
    return unit_config(
        llm={"allowed_models": ["big-model"], "allowed_summary_models": ["big-summary"], **llm},
        memory={"strategy": "summary", "keep_recent_turns": 1},
    )


def said(text: str, where: Conversation = CHANNEL) -> IncomingMessage:
    return IncomingMessage(where, "u1", "Ana", text, addressed=True)


async def command(
    engine: Engine, name: str, argument: str = "", where: Conversation = CHANNEL
) -> Reply:
    call = CommandCall(where, name, argument, "U1", "Ana", can_manage=True)
    return await run_command(engine, call)


async def test_a_channel_set_to_another_model_is_answered_by_it_and_its_neighbour_is_not() -> None:
    async with running_core(allowing()) as core:
        engine = core.engine
        assert (await command(engine, "settings", "model big-model")).kind is ReplyKind.INFO
        here = await engine.handle_message(said("hello from C1"))
        there = await engine.handle_message(said("hello from C2", NEIGHBOUR))
        in_thread = await engine.handle_message(said("hello from the thread", THREAD))
        stats = (await command(engine, "stats")).text
        neighbour_stats = (await command(engine, "stats", where=NEIGHBOUR)).text
        usage = await core.store.usage(conversation_key=CHANNEL.key)
        neighbour_usage = await core.store.usage(conversation_key=NEIGHBOUR.key)
    big, default = core.models["big-model"], core.model
    assert here is not None and here.text == "echo: [Ana] hello from C1"
    assert there is not None and there.text == "echo: [Ana] hello from C2"
    assert in_thread is not None
    assert [m[-1]["content"] for m in big.chats()] == [
        "[Ana] hello from C1",
        "[Ana] hello from the thread",
    ]
    assert [m[-1]["content"] for m in default.chats()] == ["[Ana] hello from C2"]
    assert [(u.model, u.purpose, u.requests) for u in usage] == [("big-model", "chat", 1)]
    assert [(u.model, u.purpose) for u in neighbour_usage] == [("gpt-4o-mini", "chat")]
    assert (
        "Chat model: big-model: not a model tiktoken knows; counted with o200k_base and "
        "calibrated from the server's reported usage"
    ) in stats
    assert "Set here: model big-model (this channel)" in stats
    assert "Chat model: gpt-4o-mini: counted exactly with o200k_base" in neighbour_stats


async def test_the_chosen_models_own_count_calibrates_the_channels_budget_only() -> None:
    """Messages are counted once, with the default model's tokenizer; a prompt for a model
    whose server counts otherwise is budgeted with that model's calibration, learned from the
    usage its server reports (here a quarter more than ours)."""
    async with running_core(allowing()) as core:
        engine = core.engine
        core.models["big-model"].usage_ratio = 1.25
        await command(engine, "settings", "model big-model")
        for i in range(3):
            await engine.handle_message(said(f"question {i} " + "words " * 50))
            await engine.handle_message(said(f"question {i} " + "words " * 50, NEIGHBOUR))
        here = await engine.settings_for(CHANNEL)
        there = await engine.settings_for(NEIGHBOUR)
        samples = await core.store.calibration_samples()
        big_budget, default_budget = engine.budget(here), engine.budget(there)
        stats = (await command(engine, "stats")).text
    assert {s.model for s in samples} == {"big-model", "gpt-4o-mini"}
    assert default_budget == 8000  # exact: the budget is the limit
    assert big_budget < 8000 / 1.25  # the server's count of a prompt kept within the limit
    assert "Budget calibrated from 8,000 tokens." in stats
    assert "server counts per script against ours, fitted from the last 3 replies" in stats


async def test_an_overflow_of_the_chosen_models_context_is_learned_for_it() -> None:
    async with running_core(allowing()) as core:
        engine = core.engine
        await command(engine, "settings", "model big-model")
        for i in range(5):
            await engine.handle_message(said(f"earlier {i} " + "words " * 60))
        big = core.models["big-model"]
        big.failures.append(LLMError(Failure.CONTEXT_LENGTH, "too long", context=4096))
        reply = await engine.handle_message(said("hello"))
        assert reply is not None and reply.text == "echo: [Ana] hello"
        assert await engine.calibrator.learned_window("big-model") == 4096
        assert await engine.calibrator.learned_window("gpt-4o-mini") is None
    overflowed, retried = big.chats()[-2:]
    assert len(retried) < len(overflowed)  # smaller, to the same model
    assert core.model.chats() == []


async def test_summaries_and_digests_are_asked_of_the_channels_summary_model() -> None:
    async with running_core(allowing()) as core:
        engine = core.engine
        await command(engine, "settings", "summary-model big-summary")
        for i in range(4):
            await engine.handle_message(said(f"FACT number {i}"))
            await engine.handle_message(said(f"FACT number {i}", NEIGHBOUR))
        here = await engine.summarize(CHANNEL)
        there = await engine.summarize(NEIGHBOUR)
        digest = await command(engine, "summarize", "last 3")
        stats = (await command(engine, "stats")).text
        usage = await core.store.usage(conversation_key=CHANNEL.key)
    summary_model = core.models["big-summary"]
    assert here is not None and here.model == "big-summary"
    assert there is not None and there.model == "gpt-4o-mini"
    assert len(summary_model.summaries()) == 1 and len(core.model.summaries()) == 1
    assert digest.kind is ReplyKind.INFO
    assert summary_model.requests[-1][0]["content"].startswith("Someone is catching up")
    assert {(u.model, u.purpose) for u in usage} >= {
        ("big-summary", "summary"),
        ("big-summary", "digest"),
    }
    assert "Summary model: big-summary" in stats


async def test_a_model_no_longer_allowed_falls_back_to_the_default_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryStore()
    async with running_core(allowing(), store=store) as core:
        await command(core.engine, "settings", "model big-model")
        await command(core.engine, "settings", "summary-model big-summary")
    # The operator takes the models out of the config and restarts.
    with caplog.at_level("WARNING", logger="bot.core.settings.source"):
        async with running_core(unit_config(memory={"keep_recent_turns": 1}), store=store) as core:
            first = await core.engine.handle_message(said("still there?"))
            second = await core.engine.handle_message(said("and now?"))
            shown = (await command(core.engine, "settings")).text
            one = (await command(core.engine, "settings", "model")).text
            settings = await core.engine.settings_for(CHANNEL)
            summary = await core.engine.summarize(CHANNEL)
    assert first is not None and first.kind is not ReplyKind.ERROR
    assert second is not None and second.kind is not ReplyKind.ERROR
    assert len(core.model.chats()) == 2
    assert (settings.chat_model, settings.summary_model) == ("gpt-4o-mini", "gpt-4o-mini")
    assert summary is not None and summary.model == "gpt-4o-mini"
    warned = [r.getMessage() for r in caplog.records if "big-model" in r.getMessage()]
    assert len(warned) == 1  # once, not at every turn
    assert warned[0].startswith("slack:T1:C1: model big-model, set there, is not in force")
    assert (
        "• model: gpt-4o-mini (config: llm.chat_model) — big-model (this channel) is not in "
        "force: 'big-model' is not allowed here; allowed: gpt-4o-mini (an operator adds models "
        "to llm.allowed_models)"
    ) in shown
    assert "• summary-model: gpt-4o-mini (config: llm.summary_model) — big-summary" in shown
    assert "From config: llm.chat_model — big-model (this channel) is not in force" in one


async def test_a_model_refused_in_a_thread_leaves_its_channels_choice_in_force() -> None:
    store = MemoryStore()
    config = allowing(allowed_models=["big-model", "old-model"])
    async with running_core(config, store=store) as core:
        await command(core.engine, "settings", "model big-model")
        await command(core.engine, "settings", "model old-model", where=THREAD)
        assert (await core.engine.settings_for(THREAD)).chat_model == "old-model"
        await command(core.engine, "settings", "model old-model", where=NEIGHBOUR)
        await command(core.engine, "settings", "model big-model", where=NEIGHBOURS_THREAD)
    async with running_core(allowing(), store=store) as core:
        settings = await core.engine.settings_for(THREAD)
        shown = (await command(core.engine, "settings", where=THREAD)).text
        reset = await command(core.engine, "settings", "reset model", where=THREAD)
        overridden = (await command(core.engine, "settings", where=NEIGHBOURS_THREAD)).text
        neighbour = (await command(core.engine, "settings", where=NEIGHBOUR)).text
    assert settings.chat_model == "big-model"
    assert "• model: big-model (the channel (thread's parent)) — old-model (this thread)" in shown
    assert reset.text.startswith("Back to the defaults in slack:T1:C1:100.0: model big-model")
    # The thread's own model is in force: its channel's refused one is not worth telling there.
    assert "• model: big-model (this thread)\n" in overridden
    assert "• model: gpt-4o-mini (config: llm.chat_model) — old-model (this channel)" in neighbour
