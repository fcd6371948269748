"""Caps on spend on SQLite and PostgreSQL: the real openai SDK against the local model server
reports known tokens, priced by llm.prices, with the engine's clock set. The answer that takes
the channel's day past 80% says so, once; at the cap the model is not called and the reply says
when the cap resets; the question is kept, and the next UTC day's answer sees it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core.models import Conversation, IncomingMessage, Reply, ReplyKind
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.support.fake_llm import FakeLLM
from tests.support.fake_llm import Reply as Scripted

pytestmark = pytest.mark.stores("sqlite", "postgres")

C1 = Conversation("slack", "T1", "C1")
# $ per million tokens: each token costs a round number of millionths.
PRICES = {"gpt-4o-mini": {"input": 2, "output": 4}}
NOW = datetime(2026, 12, 5, 19, tzinfo=UTC).timestamp()
TOMORROW = datetime(2026, 12, 6, 8, tzinfo=UTC).timestamp()


async def ask(app: App, text: str) -> Reply:
    reply = await app.engine.handle_message(IncomingMessage(C1, "U1", "Ana", text, True))
    assert reply is not None
    return reply


async def test_the_80_percent_notice_once_then_the_refusal_then_the_next_days_answer(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(llm={"prices": PRICES}, budgets={"channel": {"day": "$0.01"}})
    async with open_app(config) as app:
        app.engine.clock = lambda: NOW
        llm.script(
            Scripted("one", prompt_tokens=1000, completion_tokens=100),  # $0.0024: 24%
            Scripted("two", prompt_tokens=2500, completion_tokens=250),  # $0.006: 84%
            Scripted("three", prompt_tokens=500, completion_tokens=50),  # $0.0012: 96%
            Scripted("four", prompt_tokens=1000, completion_tokens=0),  # $0.002: 116%
        )
        replies = [await ask(app, f"question {n}") for n in range(1, 5)]
        assert [r.text for r in replies] == [
            "one",
            "two\n\nThis channel has used 84% of its budget for today ($0.0084 of $0.01); "
            "it resets at 00:00 UTC (in 5 h).",
            "three",
            "four",
        ]
        asked = len(llm.chat_requests)
        refused = await ask(app, "the release is on Friday")
        assert refused.kind is ReplyKind.INFO
        assert refused.text == (
            "This channel has reached its budget for today ($0.0116 of $0.01). No answers "
            "here until it resets at 00:00 UTC (in 5 h); messages are still remembered."
        )
        assert len(llm.chat_requests) == asked  # the model was not called
        assert await app.store.first_awaiting(conversation_key=C1.key) is None

        app.engine.clock = lambda: TOMORROW
        llm.script(Scripted("Friday", prompt_tokens=100, completion_tokens=1))
        assert (await ask(app, "when is the release?")).text == "Friday"
        sent = "\n".join(m["content"] for m in llm.chat_requests[-1]["messages"])
        assert "the release is on Friday" in sent
        assert llm.pending == 0
