"""``/summarize since WHEN`` and ``/summarize last N``: which part of the conversation a
digest reads, and that the rolling summary is left as it is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.commands import run_command
from bot.core.memory.digest import DIGEST_INSTRUCTIONS, Span, parse_span
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from tests.support.core import running_core, unit_config
from tests.support.fake_chat import FakeChatModel, Messages

GENERAL = Conversation.console("general")
NOW = datetime(2026, 12, 4, 15, 30, tzinfo=UTC)


def at(**delta: float) -> float:
    return (NOW - timedelta(**delta)).timestamp()


@pytest.mark.parametrize(
    ("argument", "span"),
    [
        ("since yesterday", Span(since=datetime(2026, 12, 3, tzinfo=UTC).timestamp())),
        ("since today", Span(since=datetime(2026, 12, 4, tzinfo=UTC).timestamp())),
        ("since 9:00", Span(since=datetime(2026, 12, 4, 9, tzinfo=UTC).timestamp())),
        ("since 21:15", Span(since=datetime(2026, 12, 3, 21, 15, tzinfo=UTC).timestamp())),
        ("since 2026-11-28", Span(since=datetime(2026, 11, 28, tzinfo=UTC).timestamp())),
        ("since 3h", Span(since=at(hours=3))),
        ("SINCE  2 days", Span(since=at(days=2))),
        ("since 90 minutes ago", Span(since=at(minutes=90))),
        ("last 50", Span(last=50)),
        ("last 50 messages", Span(last=50)),
        ("last 99999", Span(last=2000)),
    ],
)
def test_when_is_read_in_utc(argument: str, span: Span) -> None:
    assert parse_span(argument, NOW.timestamp()) == span


@pytest.mark.parametrize(
    "argument", ["since", "since soon", "since 25:00", "since 2026-02-30", "last 0", "lately"]
)
def test_what_names_no_span_is_refused(argument: str) -> None:
    assert parse_span(argument, NOW.timestamp()) is None


def said(text: str, when: float) -> IncomingMessage:
    sent = datetime.fromtimestamp(when, UTC)
    return IncomingMessage(GENERAL, "ana", "Ana", text, addressed=False, sent_at=sent)


def digester(messages: Messages) -> str:
    if messages[0]["content"] == DIGEST_INSTRUCTIONS:
        return f"- {messages[1]['content'].count(chr(10)) + 1} lines read"
    return "ok"


async def test_a_digest_reads_only_its_span_and_leaves_the_summary_alone() -> None:
    model = FakeChatModel(responder=digester)
    config = unit_config(memory={"strategy": "summary"})
    async with running_core(config, model=model) as core:
        core.engine.clock = NOW.timestamp
        await core.engine.handle_message(said("old news from last week", at(days=7)))
        await core.engine.handle_message(said("the deploy moved to Friday", at(hours=20)))
        await core.engine.handle_message(said("Bo owns the rollback plan", at(hours=2)))
        before = await core.store.latest_summary(conversation_key=GENERAL.key)
        call = CommandCall(GENERAL, "summarize", "since yesterday", "ana", "Ana")
        reply = await run_command(core.engine, call)
        last = await run_command(core.engine, CommandCall(GENERAL, "summarize", "last 1", "a", "A"))
        empty = await run_command(
            core.engine, CommandCall(GENERAL, "summarize", "since 15:00", "a", "A")
        )
        bad = await run_command(
            core.engine, CommandCall(GENERAL, "summarize", "since soon", "a", "A")
        )
        after = await core.store.latest_summary(conversation_key=GENERAL.key)
        usage = await core.store.usage(conversation_key=GENERAL.key)
    assert reply.kind is ReplyKind.INFO and not reply.ephemeral  # posted in the channel
    assert reply.text == "Digest since 2026-12-03 00:00 UTC (2 messages):\n- 2 lines read"
    sent = next(m for m in model.requests if m[0]["content"] == DIGEST_INSTRUCTIONS)[1]["content"]
    assert "deploy moved to Friday" in sent and "Bo owns the rollback" in sent
    assert "old news" not in sent
    assert last.text == "Digest of the last 1 message:\n- 1 lines read"
    assert empty.text == "Nothing was said here since 2026-12-04 15:00 UTC." and empty.ephemeral
    assert bad.kind is ReplyKind.ERROR and bad.text.startswith("Usage: /summarize since WHEN")
    assert before == after  # the rolling summary is untouched
    assert [row.purpose for row in usage if row.purpose == "digest"] == ["digest"]


async def test_search_says_when_nothing_matches_or_search_is_off() -> None:
    on = unit_config(memory={"recall_tokens": 500})
    async with running_core(on) as core:
        await core.engine.handle_message(said("the deploy moved to Friday", at(hours=1)))
        for i in range(10):
            await core.engine.handle_message(said(f"chatter {i} about lunch", at(minutes=50 - i)))
        call = CommandCall(GENERAL, "search", "deploy", "ana", "Ana")
        found = await run_command(core.engine, call)
        nothing = await run_command(core.engine, CommandCall(GENERAL, "search", "zebra", "a", "A"))
    assert found.ephemeral and found.text.splitlines()[1] == (
        "• 2026-12-04 14:30 UTC, Ana: the deploy moved to Friday"
    )
    assert nothing.text == "Nothing in this conversation matches “zebra”." and nothing.ephemeral
    async with running_core(unit_config(memory={"recall_tokens": 0})) as core:
        off = await run_command(core.engine, CommandCall(GENERAL, "search", "deploy", "a", "A"))
    assert off.kind is ReplyKind.ERROR and "memory.recall_tokens is 0" in off.text
