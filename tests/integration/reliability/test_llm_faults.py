"""Model faults, through the real ``openai`` SDK against the local test server: timeouts, 429
with Retry-After, 500s, malformed JSON, empty completions, context-length errors and a server
that drops the connection.

For each: the person gets a short, honest reply; the retries stop at ``llm.max_retries``
(the engine adds one smaller retry on a context-length error, no more); the question stays in
history without an invented answer; the next message is answered, with that question in its
prompt. A failing summary model changes nothing and replies go on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind, Role
from bot.wiring import open_app
from tests.conftest import ConfigFactory, is_summary_request, respond
from tests.support.fake_llm import FakeLLM, Reply

GENERAL = Conversation.console("general")
MAX_RETRIES = 2
FAST_RETRY = {"retry-after-ms": "10"}  # the SDK honours it; keeps the retries quick


@dataclass(frozen=True)
class Fault:
    reply: Reply
    says: str
    requests: int
    """Requests one question may cost at most."""


FAULTS = {
    "timeout": Fault(Reply(text="late", delay=2), "did not answer in time", 1 + MAX_RETRIES),
    "429 with Retry-After": Fault(
        Reply.rate_limited(retry_after=0.2), "rate-limited", 1 + MAX_RETRIES
    ),
    "500": Fault(
        Reply(status=500, headers=FAST_RETRY, error=Reply.server_error().error),
        "could not reach the model",
        1 + MAX_RETRIES,
    ),
    "malformed JSON": Fault(Reply(raw_body='{"choices": [{"mess'), "could not read", 1),
    "empty completion": Fault(Reply(text=""), "empty reply", 1),
    "null content": Fault(Reply(text=None), "empty reply", 1),
    "context length": Fault(Reply.context_length(), "too long for the model", 2),
    "connection closed": Fault(
        Reply(close_connection=True), "could not reach the model", 1 + MAX_RETRIES
    ),
}


def said(text: str) -> IncomingMessage:
    return IncomingMessage(GENERAL, "ana", "Ana", text, addressed=True)


def chats(llm: FakeLLM) -> list[dict[str, Any]]:
    return [b for b in llm.chat_requests if not is_summary_request(b)]


@pytest.mark.parametrize("name", list(FAULTS))
async def test_a_model_fault_gets_an_honest_reply_bounded_retries_and_the_next_message_works(
    make_config: ConfigFactory, llm: FakeLLM, name: str
) -> None:
    fault = FAULTS[name]
    llm.responder = lambda body: fault.reply
    config = make_config(llm={"max_retries": MAX_RETRIES, "timeout_seconds": 0.3})
    async with open_app(config) as app:
        await app.engine.handle_message(IncomingMessage(GENERAL, "bo", "Bo", "before", False))
        started = time.monotonic()
        reply = await app.engine.handle_message(said("will this work?"))
        took = time.monotonic() - started
        assert reply is not None and reply.kind is ReplyKind.ERROR
        assert fault.says in reply.text and len(reply.text) < 200
        assert "HTTP" not in reply.text and "Traceback" not in reply.text
        tries = chats(llm)
        assert len(tries) == fault.requests
        assert all(t["messages"][-1]["content"] == "[Ana] will this work?" for t in tries)
        if name == "429 with Retry-After":
            assert took >= 0.2 * MAX_RETRIES  # Retry-After was waited for
        assert took < 10

        llm.responder = respond
        ok = await app.engine.handle_message(said("and now?"))
        assert ok is not None and ok.text == "echo: [Ana] and now?"
        stored = await app.store.messages_between(
            conversation_key=GENERAL.key, first_id=0, through_id=10**9
        )
    assert [(m.role, m.content) for m in stored] == [
        (Role.USER, "before"),
        (Role.USER, "will this work?"),
        (Role.USER, "and now?"),
        (Role.ASSISTANT, "echo: [Ana] and now?"),
    ]
    assert [m["content"] for m in chats(llm)[-1]["messages"][1:]] == [
        "[Bo] before",
        "[Ana] will this work?",
        "[Ana] and now?",
    ]


@pytest.mark.parametrize("name", list(FAULTS))
async def test_a_failing_summary_model_changes_nothing_and_replies_go_on(
    make_config: ConfigFactory, llm: FakeLLM, name: str
) -> None:
    fault = FAULTS[name]
    summaries_fail = True

    def responder(body: dict[str, Any]) -> Any:
        if is_summary_request(body) and summaries_fail:
            return fault.reply
        return respond(body)

    llm.responder = responder
    config = make_config(
        llm={"max_retries": 0, "timeout_seconds": 0.3},
        memory={"strategy": "summary", "summary_retry_seconds": 0},
    )
    async with open_app(config) as app:
        for i in range(6):
            reply = await app.engine.handle_message(said(f"FACT number {i}"))
            assert reply is not None and reply.kind is ReplyKind.ANSWER
        refused = await run_command(app.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
        assert refused.kind is ReplyKind.ERROR and "nothing was changed" in refused.text
        assert await app.store.latest_summary(conversation_key=GENERAL.key) is None
        assert await app.store.count_messages(conversation_key=GENERAL.key) == 12
        summaries_fail = False
        made = await run_command(app.engine, CommandCall(GENERAL, "summarize", "", "ana", "Ana"))
    assert made.kind is ReplyKind.INFO and "FACT number 0" in made.text
