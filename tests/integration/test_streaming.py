"""Answers streamed as the model writes them, on the handler with the real openai SDK and the
local model server streaming SSE, an outbox that keeps each draft it is shown (the platform's
edge), on SQLite and PostgreSQL: text is shown before the model finishes, what is stored is
what was shown, a stream cut part way stays shown and stored marked as interrupted, and one
conversation's slow stream does not hold up another's."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from contextlib import AbstractAsyncContextManager, nullcontext

import pytest

from bot.core.answering import INTERRUPTED
from bot.core.commands import format_stats
from bot.core.handler import Handler
from bot.core.models import Conversation, IncomingMessage, Reply, Role
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.support.fake_llm import Break, FakeLLM
from tests.support.fake_llm import Reply as Scripted

pytestmark = pytest.mark.stores("sqlite", "postgres")

_IDS = itertools.count(1)
CHANNEL = Conversation("slack", "T1", "C1")
OTHER = Conversation("slack", "T1", "C2")
ANSWER = "The deploy key lives in the vault under ops slash deploy, rotated every month."


class Drafts:
    """An outbox keeping every draft shown, with when, and the finished reply."""

    def __init__(self) -> None:
        self.drafts: list[tuple[float, str]] = []
        self.replies: list[Reply] = []
        self.finished_at: float | None = None

    def working(self) -> AbstractAsyncContextManager[None]:
        return nullcontext()

    async def show(self, text: str) -> None:
        self.drafts.append((time.monotonic(), text))

    async def send(self, reply: Reply) -> str | None:
        self.replies.append(reply)
        self.finished_at = time.monotonic()
        return f"sent-{next(_IDS)}"


def said(text: str, where: Conversation = CHANNEL) -> IncomingMessage:
    return IncomingMessage(where, "U1", "Ana", text, True, message_id=f"m-{text}")


async def stored_answers(app: App, where: Conversation = CHANNEL) -> list[str]:
    messages = await app.store.messages_between(
        conversation_key=where.key, first_id=0, through_id=10**9
    )
    return [m.content for m in messages if m.role is Role.ASSISTANT]


async def test_text_is_shown_as_it_is_written_and_the_stored_answer_is_what_was_shown(
    app: App, llm: FakeLLM
) -> None:
    llm.script(Scripted(ANSWER, piece_delay=0.05))
    shown = Drafts()
    started = time.monotonic()
    await Handler(engine=app.engine).handle(said("where is the key?"), shown)
    assert shown.finished_at is not None
    first_at, first = shown.drafts[0]
    assert shown.finished_at - first_at > 0.3  # text was visible long before the end
    assert first_at - started < 0.5 and ANSWER.startswith(first) and len(first) < len(ANSWER)
    texts = [text for _, text in shown.drafts]
    assert all(b.startswith(a) for a, b in itertools.pairwise(texts))  # only grows
    assert [r.text for r in shown.replies] == [ANSWER]
    assert await stored_answers(app) == [ANSWER]
    assert llm.chat_requests[0]["stream"] is True


async def test_a_speaker_tag_the_model_copies_is_never_shown(app: App, llm: FakeLLM) -> None:
    llm.script(Scripted("[Ana] sure, it is in the vault", piece_delay=0.02))
    shown = Drafts()
    await Handler(engine=app.engine).handle(said("where?"), shown)
    assert shown.drafts and not any("[Ana]" in text for _, text in shown.drafts)
    assert [r.text for r in shown.replies] == ["sure, it is in the vault"]


@pytest.mark.parametrize("how", ["drop", "error", "stall"])
async def test_a_stream_cut_part_way_stays_shown_marked_interrupted_and_is_stored_so(
    make_config: ConfigFactory, llm: FakeLLM, how: str
) -> None:
    llm.script(Scripted(ANSWER, breaks=Break(after=4, how=how)))  # type: ignore[arg-type]
    llm_settings = {"max_retries": 0, "timeout_seconds": 1, "reply_deadline_seconds": 3}
    async with open_app(make_config(llm=llm_settings)) as app:
        shown = Drafts()
        handler = Handler(engine=app.engine)
        await handler.handle(said("where is the key?"), shown)
        (reply,) = shown.replies
        start = " ".join(ANSWER.split()[:4])
        assert reply.text == f"{start}\n\n{INTERRUPTED}"
        assert shown.drafts[-1][1] == start
        assert await stored_answers(app) == [reply.text]
        # The next prompt shows the answer as the interrupted one it was.
        await handler.handle(said("go on"), Drafts())
        prompt = json.dumps(llm.chat_requests[-1]["messages"], ensure_ascii=False)
        assert "the model stopped answering" in prompt


async def test_the_deadline_covers_the_whole_stream(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.script(Scripted(" ".join(["word"] * 200), piece_delay=0.05))
    async with open_app(make_config(llm={"reply_deadline_seconds": 1})) as app:
        shown = Drafts()
        started = time.monotonic()
        await Handler(engine=app.engine).handle(said("talk"), shown)
    assert time.monotonic() - started < 3
    (reply,) = shown.replies
    assert reply.text.startswith("word word") and reply.text.endswith(INTERRUPTED)


async def test_a_context_overflow_before_any_text_is_retried_smaller_and_streamed(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={"strategy": "full"})) as app:
        handler = Handler(engine=app.engine)
        for i in range(10):
            await handler.handle(said(f"turn {i} " + "x " * 50), Drafts())
        llm.script(Scripted.context_length(), Scripted(ANSWER))
        shown = Drafts()
        await handler.handle(said("again?"), shown)
    assert [r.text for r in shown.replies] == [ANSWER]
    overflowed, retried = llm.chat_requests[-2:]
    assert len(retried["messages"]) < len(overflowed["messages"]) and retried["stream"]
    assert shown.drafts


async def test_one_conversations_slow_stream_does_not_hold_up_anothers(
    app: App, llm: FakeLLM
) -> None:
    def respond(body: dict[str, object]) -> Scripted:
        slow = "slow" in json.dumps(body["messages"])
        return Scripted(ANSWER, piece_delay=0.3 if slow else 0.01)

    llm.responder = respond
    handler = Handler(engine=app.engine)
    slow, fast = Drafts(), Drafts()
    slowly = asyncio.create_task(handler.handle(said("slow question"), slow))
    await asyncio.sleep(0.2)
    await handler.handle(said("fast question", OTHER), fast)
    assert fast.finished_at is not None and not slow.replies  # done while the other streams
    await slowly
    assert [r.text for r in slow.replies] == [ANSWER]


async def test_a_streamed_answer_records_the_servers_usage_and_calibrates_from_it(
    app: App, llm: FakeLLM
) -> None:
    model = app.chat.model
    llm.prompt_token_factor[model] = 1.25  # the server counts a quarter more than the bot
    llm.script(Scripted(ANSWER, completion_tokens=17))
    await Handler(engine=app.engine).handle(said("where?"), Drafts())
    (usage,) = await app.store.usage(conversation_key=CHANNEL.key)
    assert (usage.completion_tokens, usage.estimated) == (17, 0)
    assert llm.chat_requests[0]["stream_options"] == {"include_usage": True}
    samples = await app.store.calibration_samples()
    (sample,) = [s for s in samples if s.model == model]
    assert sample.reported == usage.prompt_tokens
    assert sample.reported > sample.latin + sample.cjk + sample.other  # the server's count


async def test_without_usage_from_the_server_the_bots_own_count_is_kept_marked_estimated(
    app: App, llm: FakeLLM
) -> None:
    llm.sends_usage = False
    await Handler(engine=app.engine).handle(said("where?"), Drafts())
    (usage,) = await app.store.usage(conversation_key=CHANNEL.key)
    assert usage.estimated == 1 and usage.prompt_tokens > 0 and usage.completion_tokens > 0
    stats = await format_stats(app.engine, CHANNEL)
    assert "1 of the requests estimated: the server sent no usage" in stats
