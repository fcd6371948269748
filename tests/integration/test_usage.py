"""Costs add up, on SQLite and PostgreSQL: the real openai SDK against the local model server
reports known prompt, cached and completion tokens for answers, summaries, digests and
embeddings; priced by llm.prices, ``/usage`` shows exactly the money each made, for this
channel (its threads too) and for the caller (in this workspace), today, this month and in
total, with the engine's clock set to known times."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.support.fake_llm import FakeLLM, encoding_for
from tests.support.fake_llm import Reply as Scripted

pytestmark = pytest.mark.stores("sqlite", "postgres")

C1 = Conversation("slack", "T1", "C1")
THREAD = replace(C1, thread="1700000000.000100")
C2 = Conversation("slack", "T1", "C2")
ELSEWHERE = Conversation("slack", "T2", "C1")
# $ per million tokens: each token of these costs a round number of millionths.
PRICES = {
    "gpt-4o-mini": {"input": 2, "cached_input": 1, "output": 4},
    "text-embedding-3-small": {"input": 1000},
}
LAST_MONTH = datetime(2026, 11, 20, 12, tzinfo=UTC).timestamp()
THIS_MONTH = datetime(2026, 12, 2, 10, tzinfo=UTC).timestamp()
TODAY = datetime(2026, 12, 5, 9, tzinfo=UTC).timestamp()
NOW = datetime(2026, 12, 5, 18, tzinfo=UTC).timestamp()


def at(app: App, when: float) -> None:
    app.engine.clock = lambda: when


async def ask(app: App, where: Conversation, who: str, text: str) -> None:
    reply = await app.engine.handle_message(IncomingMessage(where, who, who, text, addressed=True))
    assert reply is not None and reply.kind is not ReplyKind.ERROR, reply


async def usage(app: App, where: Conversation, who: str) -> str:
    reply = await run_command(app.engine, CommandCall(where, "usage", "", who, who))
    assert reply.kind is ReplyKind.INFO and reply.ephemeral
    return reply.text


async def command(app: App, where: Conversation, name: str, argument: str, who: str) -> Reply:
    reply = await run_command(app.engine, CommandCall(where, name, argument, who, who))
    assert reply.kind is ReplyKind.INFO, reply.text
    return reply


async def test_usage_shows_the_exact_money_of_each_call_by_channel_person_and_period(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(llm={"prices": PRICES}, memory={"strategy": "hybrid"})
    async with open_app(config) as app:
        at(app, LAST_MONTH)  # 1,000 × 2 + 100 × 4 = $0.0024, U1 in C1
        llm.script(Scripted("one", prompt_tokens=1000, cached_tokens=0, completion_tokens=100))
        await ask(app, C1, "U1", "first question")
        at(app, THIS_MONTH)  # 1,000 × 2 + 1,000 × 1 + 200 × 4 = $0.0038, U1 in C1's thread
        llm.script(Scripted("two", prompt_tokens=2000, cached_tokens=1000, completion_tokens=200))
        await ask(app, THREAD, "U1", "second question")
        at(app, TODAY)  # 1,000 × 2 + 2,000 × 1 + 300 × 4 = $0.0052, U2 in C1
        llm.script(Scripted("three", prompt_tokens=3000, cached_tokens=2000, completion_tokens=300))
        await ask(app, C1, "U2", "third question")
        # 500 × 2 + 50 × 4 = $0.0012, U1 in C2: the person's, not C1's
        llm.script(Scripted("four", prompt_tokens=500, completion_tokens=50))
        await ask(app, C2, "U1", "elsewhere in the workspace")
        # $0.002, U1 in another workspace: neither C1's nor U1's in T1
        llm.script(Scripted("five", prompt_tokens=1000, completion_tokens=0))
        await ask(app, ELSEWHERE, "U1", "another workspace")
        # a digest asked by U1: 4,000 × 2 + 400 × 4 = $0.0096, C1's and U1's
        llm.script(Scripted("- digest", prompt_tokens=4000, completion_tokens=400))
        await command(app, C1, "summarize", "last 10", "U1")
        # the summary: 5,000 × 2 + 5,000 × 1 + 1,000 × 4 = $0.019, C1's, no one's
        for i in range(3):
            await app.engine.record(IncomingMessage(C1, "U3", "U3", f"chatter {i}", False))
        llm.script(
            Scripted("Facts:\n- x", prompt_tokens=10000, cached_tokens=5000, completion_tokens=1000)
        )
        await command(app, C1, "summarize", "", "U2")
        assert llm.pending == 0
        at(app, NOW)
        channel, person = (await usage(app, C1, "U1")).split("You, in this workspace:\n")
    assert channel == (
        "This channel (and its threads):\n"
        "  Today (2026-12-05 UTC):\n"
        "    gpt-4o-mini: 3 requests, 17,000 prompt (7,000 cached) + 1,700 completion tokens: "
        "$0.0338\n"
        "    total: 3 requests: $0.0338\n"
        "  This month (December 2026):\n"
        "    gpt-4o-mini: 4 requests, 19,000 prompt (8,000 cached) + 1,900 completion tokens: "
        "$0.0376\n"
        "    total: 4 requests: $0.0376\n"
        "  In total:\n"
        "    gpt-4o-mini: 5 requests, 20,000 prompt (8,000 cached) + 2,000 completion tokens: "
        "$0.04\n"
        "    total: 5 requests: $0.04\n"
    )
    assert person == (
        "  Today (2026-12-05 UTC):\n"
        "    gpt-4o-mini: 2 requests, 4,500 prompt + 450 completion tokens: $0.0108\n"
        "    total: 2 requests: $0.0108\n"
        "  This month (December 2026):\n"
        "    gpt-4o-mini: 3 requests, 6,500 prompt (1,000 cached) + 650 completion tokens: "
        "$0.0146\n"
        "    total: 3 requests: $0.0146\n"
        "  In total:\n"
        "    gpt-4o-mini: 4 requests, 7,500 prompt (1,000 cached) + 750 completion tokens: "
        "$0.017\n"
        "    total: 4 requests: $0.017"
    )


async def test_embeddings_are_the_channels_spend_and_no_ones(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(
        llm={"prices": PRICES, "embedding_model": "text-embedding-3-small"},
        memory={"recall_tokens": 400, "recall_embeddings": True},
    )
    texts = ["the deploy window is Tuesday", "Ana owns the budget review", "lunch at noon"]
    async with open_app(config) as app:
        for text in texts:
            await app.engine.record(IncomingMessage(C1, "U1", "Ana", text, False))
            await app.engine.drain()  # one request per message
        shown = await usage(app, C1, "U1")
    tokens = sum(len(encoding_for("text-embedding-3-small").encode_ordinary(t)) for t in texts)
    money = f"${tokens * 1000 / 1_000_000:.6f}".rstrip("0")
    assert (
        f"    text-embedding-3-small: 3 requests, {tokens:,} prompt + 0 completion tokens: "
        f"{money}\n    total: 3 requests: {money}\n  This month"
    ) in shown
    assert shown.split("You, in this workspace:\n")[1].count("    nothing") == 3  # no one's
