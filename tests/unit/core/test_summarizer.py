"""Summaries in-process: folding old turns, keeping facts, and never saving one the
conversation has moved past."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage
from tests.support.core import running_core, unit_config
from tests.support.fake_chat import FakeChatModel, Messages, is_summary
from tests.support.fake_llm import count_prompt_tokens

GENERAL = Conversation.console("general")


def said(text: str) -> IncomingMessage:
    return IncomingMessage(GENERAL, "ana", "Ana", text, addressed=True)


def contents(messages: Messages) -> list[str]:
    return [message["content"] for message in messages]


async def test_summaries_fold_old_turns_and_carry_facts_forward() -> None:
    config = unit_config(
        memory={"max_context_tokens": 600, "summary_rebuild_every": 0, "keep_recent_turns": 2}
    )
    async with running_core(config) as core:
        await core.engine.handle_message(said("FACT Ana's budget is 4200 EUR"))
        for i in range(40):
            await core.engine.handle_message(said(f"small talk {i} " + "blah " * 10))
            await core.engine.drain()
        summary = await core.store.latest_summary(conversation_key=GENERAL.key)
        stored = await core.store.count_messages(conversation_key=GENERAL.key)
    assert summary is not None and summary.compactions >= 2
    assert "FACT Ana's budget is 4200 EUR" in summary.content
    assert summary.first_message_id == 1
    assert stored == 82  # folding deletes nothing
    summaries = core.model.summaries()
    # incremental: the second starts from the first summary, not from the raw history
    assert "FACT Ana's budget" in contents(summaries[1])[-1].split("New messages:")[0]
    last = core.model.chats()[-1]
    assert "FACT Ana's budget is 4200 EUR" in last[0]["content"]
    assert count_prompt_tokens("gpt-4o-mini", last) <= 600
    assert contents(last)[-1] == "[Ana] small talk 39 " + "blah " * 10


async def test_summarize_keeps_only_the_summary_and_the_last_turns() -> None:
    config = unit_config(memory={"strategy": "summary", "keep_recent_turns": 2})
    async with running_core(config) as core:
        await core.engine.handle_message(said("FACT the office is in Lyon"))
        for i in range(5):
            await core.engine.handle_message(said(f"chat {i}"))
        reply = await run_command(core.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        await core.engine.handle_message(said("where is the office?"))
    assert "covers 8 messages" in reply.text
    last = core.model.chats()[-1]
    assert "FACT the office is in Lyon" in last[0]["content"]
    assert contents(last)[1:] == [
        "[Ana] chat 3",
        "echo: [Ana] chat 3",
        "[Ana] chat 4",
        "echo: [Ana] chat 4",
        "[Ana] where is the office?",
    ]


async def test_a_summary_of_a_conversation_reset_meanwhile_is_discarded() -> None:
    config = unit_config(memory={"strategy": "summary", "keep_recent_turns": 1})
    async with running_core(config) as core:
        for i in range(4):
            await core.engine.handle_message(said(f"FACT number {i}"))

        async def reset_first(sent: Messages) -> None:
            if is_summary(sent):
                await core.store.reset(conversation=GENERAL, include_pins=False)

        core.model.meanwhile = reset_first
        summary = await core.engine.summarize(GENERAL)
        kept = await core.store.latest_summary(conversation_key=GENERAL.key)
    assert len(core.model.summaries()) == 1  # the model was asked
    assert summary is None and kept is None  # what it wrote is not kept


summary_lines = st.lists(
    st.one_of(
        st.sampled_from(["Facts:", "Narrative:", "- a fact", ""]),
        st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=400),
    ),
    max_size=40,
)


@given(lines=summary_lines, budget=st.integers(min_value=256, max_value=2000))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
async def test_whatever_the_summary_model_writes_the_summary_keeps_to_a_quarter_of_the_budget(
    lines: list[str], budget: int
) -> None:
    written = "\n".join(lines)

    def responder(messages: Messages) -> str:
        return written if is_summary(messages) else "ok"

    config = unit_config(memory={"strategy": "summary", "max_context_tokens": budget})
    async with running_core(config, model=FakeChatModel(responder=responder)) as core:
        await core.engine.handle_message(said("decided: the launch is on 2026-03-01"))
        for i in range(3):
            await core.engine.handle_message(said(f"chat {i}"))
        await run_command(core.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        summary = await core.store.latest_summary(conversation_key=GENERAL.key)
    if summary is not None:
        assert summary.tokens <= max(64, budget // 4)
        assert "2026-03-01" in summary.content  # the important message, in one form or another
