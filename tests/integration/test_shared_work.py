"""Processes sharing one store (each its own ``open_app``, its own connection and holder
name), on a SQLite file and on PostgreSQL: a conversation's answers keep their order whichever
process received each message, what a process that stopped left unanswered is answered by
another, and a conversation is summarized by one process at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext
from pathlib import Path

import pytest

from bot.config import Config, parse_config
from bot.core.handler import Handler
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, StoredMessage
from bot.core.ports.leases import Awaiting
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_llm import Reply as Scripted

CHANNEL = Conversation("slack", "T1", "C1")

Opener = Callable[[], AbstractAsyncContextManager[App]]


class Shown:
    """An outbox keeping what it shows, shared by the processes (one channel on screen)."""

    def __init__(self) -> None:
        self.replies: list[str] = []
        self.drafts: list[str] = []
        """The answer so far, each time it grew while the model wrote it."""

    def working(self) -> AbstractAsyncContextManager[None]:
        return nullcontext()

    async def show(self, text: str) -> None:
        self.drafts.append(text)

    async def send(self, reply: Reply) -> str | None:
        self.replies.append(reply.text)
        return f"sent-{len(self.replies)}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.slow)])
def config(request: pytest.FixtureRequest, llm: FakeLLM, tmp_path: Path) -> Config:
    raw = config_dict(llm.url, tmp_path / "bot.sqlite3")
    if request.param == "sqlite":
        return parse_config(raw, {})
    url = request.getfixturevalue("postgres_url")
    return parse_config(raw, {"DATABASE_URL": url})


@pytest.fixture
def process(config: Config) -> Opener:
    """Opens another process's view of the store (a new connection, a new holder)."""

    @asynccontextmanager
    async def opened() -> AsyncIterator[App]:
        async with open_app(config) as app:
            yield app

    return opened


def said(text: str, message_id: str) -> IncomingMessage:
    return IncomingMessage(CHANNEL, "U1", "Ana", text, True, message_id=message_id)


async def until(check: Callable[[], object], *, within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


async def test_a_conversation_is_answered_in_order_whichever_process_received_each_message(
    process: Opener, llm: FakeLLM
) -> None:
    llm.script(Scripted("the slow first answer", delay=1.0))
    shown = Shown()
    async with process() as a, process() as b:
        first = asyncio.create_task(
            Handler(engine=a.engine).handle(said("first question", "1.0"), shown)
        )
        await until(lambda: llm.chat_records)  # stored, and being answered by a
        await Handler(engine=b.engine).handle(said("second", "1.1"), shown)
        await first
    assert shown.replies == ["the slow first answer", "echo: [Ana] second"]


async def test_what_a_process_left_unanswered_is_answered_by_another_once(
    process: Opener, llm: FakeLLM
) -> None:
    async with process() as gone:
        accepted = await gone.engine.accept(said("are you there?", "2.0"))
        assert accepted is not None  # stored; its process stops before answering it
    shown = Shown()
    async with process() as other:
        handler = Handler(engine=other.engine)
        handler.take_over("slack", lambda conversation, question: shown)
        await until(lambda: shown.replies)
        await handler.settle()
        assert await other.store.first_awaiting(conversation_key=CHANNEL.key) is None
        answer = await other.store.find_message(conversation_key=CHANNEL.key, message_id="sent-1")
        await handler.aclose()
    assert shown.replies == ["echo: [Ana] are you there?"]
    assert answer is not None and answer.turn_id != answer.id  # stored as its answer
    assert len(llm.chat_records) == 1


async def test_an_answer_stored_before_its_process_went_is_shown_not_made_again(
    process: Opener, llm: FakeLLM
) -> None:
    async with process() as gone:
        accepted = await gone.engine.accept(said("what is 2+2?", "3.0"))
        assert accepted is not None and not isinstance(accepted, Reply)
        made = await gone.engine.answer(accepted)  # made and stored, never shown
    shown = Shown()
    async with process() as other:
        handler = Handler(engine=other.engine)
        handler.take_over("slack", lambda conversation, question: shown)
        await until(lambda: shown.replies)
        await handler.aclose()
        linked = await other.store.find_message(conversation_key=CHANNEL.key, message_id="sent-1")
    assert shown.replies == [made.text]
    assert linked is not None and linked.id == made.stored_id
    assert len(llm.chat_records) == 1  # the model was asked once


async def test_a_message_that_cannot_be_answered_from_here_is_given_up(process: Opener) -> None:
    async with process() as gone:
        assert await gone.engine.accept(said("hello?", "4.0")) is not None
    async with process() as other:
        asked: list[StoredMessage] = []

        def nowhere(conversation: Conversation, item: Awaiting) -> None:
            asked.append(item.question)

        handler = Handler(engine=other.engine)
        handler.take_over("slack", nowhere)
        await until(lambda: asked)
        await handler.settle()
        assert await other.store.first_awaiting(conversation_key=CHANNEL.key) is None
        await handler.aclose()
    assert [q.content for q in asked] == ["hello?"]


async def test_summarize_says_when_another_process_is_making_the_summary(
    process: Opener,
) -> None:
    async with process() as a, process() as b:
        assert await b.store.take_lease(
            name=f"summary:{CHANNEL.key}", holder=b.engine.leases.holder, seconds=60
        )
        call = CommandCall(CHANNEL, "summarize", "", "U1", "Ana")
        reply = await Handler(engine=a.engine).command(call)
        assert reply.text == (
            "Another bot process is summarizing this conversation right now; "
            "try /summarize again in a minute."
        )
        await b.store.drop_lease(name=f"summary:{CHANNEL.key}", holder=b.engine.leases.holder)
        again = await Handler(engine=a.engine).command(call)
        assert "Nothing to summarize yet" in again.text


async def test_a_running_process_keeps_what_it_awaits(process: Opener) -> None:
    async with process() as a, process() as b:
        assert await a.engine.accept(said("mine to answer", "5.0")) is not None
        taken = await b.store.adopt_awaiting(
            platform="slack", holder=b.engine.leases.holder, limit=10
        )
        assert taken == []
