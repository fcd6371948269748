"""Recall in-process: a fact that left the window is found again by search in the in-memory
store, and only in its own conversation."""

from __future__ import annotations

from bot.core.memory.recall import RECALL_HEADING
from bot.core.models import Conversation, IncomingMessage
from tests.support.core import running_core, unit_config

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")
SMALL = {"strategy": "full", "max_context_tokens": 600, "recall_tokens": 250}


def said(text: str, where: Conversation = GENERAL, addressed: bool = False) -> IncomingMessage:
    return IncomingMessage(where, "bo", "Bo", text, addressed=addressed)


def recall_block(messages: list[dict[str, str]]) -> str:
    recalls = [m["content"] for m in messages[1:] if m["role"] == "system"]
    return recalls[0] if recalls else ""


async def test_a_fact_beyond_the_window_is_recalled_in_its_own_conversation() -> None:
    async with running_core(unit_config(memory=SMALL)) as core:
        engine = core.engine
        await engine.handle_message(said("the guest wifi password is tangerine-42"))
        for i in range(40):
            await engine.handle_message(said(f"chatter {i}: lunch plans and the weather again"))
        await engine.handle_message(said("@bot what is the guest wifi password?", addressed=True))
        here = core.model.chats()[-1]
        await engine.handle_message(
            said("@bot what is the guest wifi password?", where=RANDOM, addressed=True)
        )
        elsewhere = core.model.chats()[-1]
    window = [m["content"] for m in here if m["role"] != "system"]
    assert not any("tangerine" in text for text in window)  # it left the window
    block = recall_block(here)
    assert block.startswith(RECALL_HEADING)
    assert "tangerine-42" in block
    assert "tangerine" not in str(elsewhere)
