"""The rules every platform shares, on the handler itself: on SQLite and PostgreSQL, the real
openai SDK, the local model server, and an outbox that keeps what it is given (the platform's
edge)."""

from __future__ import annotations

import asyncio
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import replace

import pytest

from bot.core.handler import Handler
from bot.core.models import Conversation, IncomingMessage, Reaction, Reply
from bot.wiring import App

pytestmark = pytest.mark.stores("sqlite", "postgres")

CHANNEL = Conversation("slack", "T1", "C1")
THREAD = replace(CHANNEL, thread="100.0")


class Kept:
    """An outbox that keeps the replies, each sent under a new id."""

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


def said(
    text: str, where: Conversation = CHANNEL, *, addressed: bool = False, message_id: str = ""
) -> IncomingMessage:
    return IncomingMessage(where, "U1", "Ana", text, addressed, message_id=message_id or None)


async def test_only_addressed_messages_are_kept_when_the_record_setting_says_so(app: App) -> None:
    await app.store.change_setting(
        scope=CHANNEL.key, key="record", value="addressed", by_id="U9", by_name="Admin", at=1.0
    )
    handler = Handler(engine=app.engine)
    kept = Kept()
    await handler.handle(said("lunch?", message_id="1.0"), kept)
    assert await app.store.count_messages(conversation_key=CHANNEL.key) == 0
    await handler.handle(said("hello bot", addressed=True, message_id="1.1"), kept)
    assert kept.replies == ["echo: [Ana] hello bot"]
    assert await app.store.count_messages(conversation_key=CHANNEL.key) == 2


async def test_a_thread_the_bot_answered_in_is_followed_after_a_restart_too(app: App) -> None:
    handler, kept = Handler(engine=app.engine), Kept()
    await handler.handle(said("the build is red", message_id="100.0"), kept)
    await handler.handle(said("ugh", THREAD, message_id="100.1"), kept)
    assert kept.replies == []
    await handler.handle(said("why?", THREAD, addressed=True, message_id="100.2"), kept)
    await handler.handle(said("and now?", THREAD, message_id="100.3"), kept)
    await handler.handle(said("unrelated", message_id="101.0"), kept)  # the channel: not followed
    assert kept.replies == ["echo: [Ana] why?", "echo: [Ana] and now?"]
    restarted = Handler(engine=app.engine)  # what it follows: from memory
    await restarted.handle(said("still there?", THREAD, message_id="100.4"), kept)
    assert kept.replies[-1] == "echo: [Ana] still there?"
    answer = await app.store.find_message(conversation_key=THREAD.key, message_id="sent-1")
    assert answer is not None and answer.content == "echo: [Ana] why?"  # linked once sent


async def test_a_thread_hanging_from_the_bots_answer_is_followed(app: App) -> None:
    handler, kept = Handler(engine=app.engine), Kept()
    await handler.handle(said("the plan is A", addressed=True, message_id="1.0"), kept)
    on_answer = replace(CHANNEL, thread="sent-1")  # the answer was sent as "sent-1"
    await handler.handle(said("why A?", on_answer, message_id="2.0"), kept)
    assert kept.replies == ["echo: [Ana] the plan is A", "echo: [Ana] why A?"]
    stored = await app.store.messages_after_turn(
        conversation_key=on_answer.key, after_turn=0, limit=10
    )
    assert [m.content for m in stored] == [
        "echo: [Ana] the plan is A",
        "why A?",
        "echo: [Ana] why A?",
    ]


async def test_answers_go_out_in_the_order_their_messages_came(app: App) -> None:
    handler, kept = Handler(engine=app.engine), Kept()
    first = await handler.take(said("first", addressed=True, message_id="1.0"))
    second = await handler.take(said("second", addressed=True, message_id="1.1"))
    assert first is not None and second is not None
    await asyncio.gather(handler.answer(second, kept), handler.answer(first, kept))
    assert kept.replies == ["echo: [Ana] first", "echo: [Ana] second"]


async def test_a_redelivered_reaction_and_a_replayed_request_act_once(app: App) -> None:
    handler = Handler(engine=app.engine)
    await handler.handle(said("Ana owns billing", message_id="1.0"), Kept())
    for _ in range(2):
        await handler.react(Reaction(CHANNEL, "1.0", on=True), delivery="Ev1")
    found = await app.store.find_message(conversation_key=CHANNEL.key, message_id="1.0")
    assert found is not None and found.important
    await handler.react(Reaction(CHANNEL, "1.0", on=False), delivery="Ev2")
    found = await app.store.find_message(conversation_key=CHANNEL.key, message_id="1.0")
    assert found is not None and not found.important  # counted once, taken back once
    assert await handler.first_request("slack:trigger-1")
    assert not await Handler(engine=app.engine).first_request("slack:trigger-1")
