"""A channel's chat model and summary model, end to end: the real openai SDK against the local
model server (which records the ``model`` each request names), on SQLite and PostgreSQL. A
channel set to another allowed model is answered by it, streamed or whole, while its neighbour
keeps the default; its usage, metrics and ``/stats`` name it; its summaries are asked of its
summary model; and after the operator takes a model out of the config, the channel falls
back to the default instead of failing."""

from __future__ import annotations

import itertools
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path

import pytest

from bot.core.commands import run_command
from bot.core.handler import Handler
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from bot.ops.doctor import run_checks
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, is_summary_request
from tests.support.fake_llm import FakeLLM

pytestmark = pytest.mark.stores("sqlite", "postgres")

_IDS = itertools.count(1)
CHANNEL = Conversation("slack", "T1", "C1")
NEIGHBOUR = Conversation("slack", "T1", "C2")


class Outbox:
    """Keeps what the handler sends and shows."""

    def __init__(self) -> None:
        self.shown: list[str] = []
        self.replies: list[Reply] = []

    def working(self) -> AbstractAsyncContextManager[None]:
        return nullcontext()

    async def show(self, text: str) -> None:
        self.shown.append(text)

    async def send(self, reply: Reply) -> str | None:
        self.replies.append(reply)
        return f"sent-{next(_IDS)}"


def said(text: str, where: Conversation = CHANNEL) -> IncomingMessage:
    return IncomingMessage(where, "U1", "Ana", text, True, message_id=f"m-{next(_IDS)}")


async def command(app: App, name: str, argument: str = "", where: Conversation = CHANNEL) -> str:
    call = CommandCall(where, name, argument, "U1", "Ana", can_manage=True)
    reply = await run_command(app.engine, call)
    assert reply.kind is not ReplyKind.ERROR, reply.text
    return reply.text


def asked(llm: FakeLLM, *, summaries: bool = False) -> list[tuple[str, str]]:
    """(model, last message) of each chat (or summary) request the server got."""
    return [
        (body["model"], body["messages"][-1]["content"])
        for body in llm.chat_requests
        if is_summary_request(body) == summaries
    ]


async def test_a_channel_set_to_another_model_is_answered_by_it_its_neighbour_by_the_default(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(llm={"allowed_models": ["gpt-4o"]}, http={"port": 0})
    async with open_app(config) as app:
        await command(app, "settings", "model gpt-4o")
        outbox = Outbox()
        await Handler(engine=app.engine).handle(said("streamed in C1"), outbox)
        whole = await app.engine.handle_message(said("whole in C1"))
        there = await app.engine.handle_message(said("hello from C2", NEIGHBOUR))
        usage = await app.store.usage(conversation_key=CHANNEL.key)
        neighbour_usage = await app.store.usage(conversation_key=NEIGHBOUR.key)
        stats = await command(app, "stats")
        assert app.metrics is not None
        metrics = app.metrics.render().decode()
    assert asked(llm) == [
        ("gpt-4o", "[Ana] streamed in C1"),
        ("gpt-4o", "[Ana] whole in C1"),
        ("gpt-4o-mini", "[Ana] hello from C2"),
    ]
    assert llm.chat_requests[0]["stream"] is True
    assert [r.text for r in outbox.replies] == ["echo: [Ana] streamed in C1"]
    assert whole is not None and whole.text == "echo: [Ana] whole in C1"
    assert there is not None and there.text == "echo: [Ana] hello from C2"
    assert [(u.model, u.requests, u.estimated) for u in usage] == [("gpt-4o", 2, 0)]
    assert [u.model for u in neighbour_usage] == ["gpt-4o-mini"]
    assert "Chat model: gpt-4o: counted exactly with o200k_base" in stats
    assert "Set here: model gpt-4o (this channel)" in stats
    assert 'bot_llm_request_seconds_count{model="gpt-4o",purpose="chat"} 2.0' in metrics
    assert 'bot_llm_request_seconds_count{model="gpt-4o-mini",purpose="chat"} 1.0' in metrics


async def test_a_channels_summaries_are_asked_of_its_summary_model(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(
        llm={"allowed_summary_models": ["local-model"]},
        memory={"strategy": "summary", "keep_recent_turns": 1},
    )
    async with open_app(config) as app:
        await command(app, "settings", "summary-model local-model")
        for i in range(3):
            await app.engine.handle_message(said(f"FACT number {i}"))
            await app.engine.handle_message(said(f"FACT number {i}", NEIGHBOUR))
        here = await app.engine.summarize(CHANNEL)
        there = await app.engine.summarize(NEIGHBOUR)
        digest = await command(app, "summarize", "last 2")
        usage = await app.store.usage(conversation_key=CHANNEL.key)
        stats = await command(app, "stats")
    summary_models = [model for model, _ in asked(llm, summaries=True)]
    assert summary_models == ["local-model", "gpt-4o-mini"]
    assert here is not None and "FACT number 0" in here.content
    assert there is not None
    assert digest.startswith("Digest of the last 2 messages")
    assert llm.chat_requests[-1]["model"] == "local-model"  # the digest
    assert {u.model for u in usage if u.purpose in ("summary", "digest")} == {"local-model"}
    assert {u.model for u in usage if u.purpose == "chat"} == {"gpt-4o-mini"}
    assert "Summary model: local-model" in stats


async def test_a_model_taken_out_of_the_config_falls_back_to_the_default_with_a_warning(
    make_config: ConfigFactory, llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    async with open_app(make_config(llm={"allowed_models": ["gpt-4o"]})) as app:
        await command(app, "settings", "model gpt-4o")
        await app.engine.handle_message(said("before"))
    # The operator takes gpt-4o out of llm.allowed_models and restarts the bot.
    with caplog.at_level("WARNING", logger="bot.core.settings.source"):
        async with open_app(make_config()) as app:
            replies = [await app.engine.handle_message(said(f"after {i}")) for i in range(2)]
            shown = await command(app, "settings")
            stats = await command(app, "stats")
    assert [r.text for r in replies if r is not None] == [
        "echo: [Ana] after 0",
        "echo: [Ana] after 1",
    ]
    assert asked(llm) == [
        ("gpt-4o", "[Ana] before"),
        ("gpt-4o-mini", "[Ana] after 0"),
        ("gpt-4o-mini", "[Ana] after 1"),
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("slack:T1:C1: model gpt-4o, set there, is not in force")
    assert "/settings reset model clears it" in warnings[0]
    assert (
        "• model: gpt-4o-mini (config: llm.chat_model) — gpt-4o (this channel) is not in force: "
        "'gpt-4o' is not allowed here; allowed: gpt-4o-mini"
    ) in shown
    assert "Chat model: gpt-4o-mini: counted exactly" in stats


async def test_doctor_names_the_models_channels_may_choose_and_those_the_server_lacks(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    config = make_config(
        llm={"allowed_models": ["gpt-4o", "gpt-5-typo"], "allowed_summary_models": ["gpt-4o"]}
    )
    async with open_app(config) as app:
        lines: list[str] = []
        passed = await run_checks(app, Path("config.yaml"), lambda c: lines.append(c.line()))
    assert passed  # a warning: it works until a channel chooses the model
    (choices,) = [line for line in lines if "model choices" in line]
    assert choices == (
        "warn model choices: channels may also choose gpt-4o, gpt-5-typo (llm.allowed_models); "
        "gpt-4o (llm.allowed_summary_models), but the server does not list gpt-5-typo: a "
        "channel set to it gets errors"
    )
    assert (
        lines.index(choices) == lines.index(next(x for x in lines if "summary endpoint" in x)) + 1
    )
