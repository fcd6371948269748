"""``/usage`` in-process: a model at a remote endpoint with no price is recorded at $0 and
flagged; one at a local endpoint costs nothing and is not."""

from __future__ import annotations

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage
from tests.support.core import running_core, unit_config

GENERAL = Conversation.console("general")


async def asked_and_shown(base_url: str) -> tuple[str, list[float]]:
    config = unit_config(llm={"base_url": base_url, "chat_model": "house-model"})
    async with running_core(config) as core:
        await core.engine.handle_message(IncomingMessage(GENERAL, "ana", "Ana", "hi", True))
        reply = await run_command(core.engine, CommandCall(GENERAL, "usage", "", "ana", "Ana"))
        spent = await core.store.spend(since=None, until=None)
    return reply.text, [row.cost for row in spent]


async def test_a_remote_model_without_a_price_is_flagged_and_costs_nothing() -> None:
    text, costs = await asked_and_shown("https://models.example.com/v1")
    assert costs == [0.0]
    assert "completion tokens: no price (set llm.prices)\n" in text
    assert "    total: 1 request: $0 (no price for house-model)\n" in text


async def test_a_local_model_without_a_price_is_free_and_not_flagged() -> None:
    text, costs = await asked_and_shown("http://localhost:11434/v1")
    assert costs == [0.0]
    assert "no price" not in text
    assert "completion tokens: $0\n    total: 1 request: $0\n" in text
