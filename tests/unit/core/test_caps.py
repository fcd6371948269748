"""Caps on spend in-process, with the engine's clock set: the notice at 80% once, the refusal
at the cap naming it and its reset, the question kept and seen after the reset; a person's,
a workspace's and a month's caps; summaries under and past a cap; a channel's own cap set with
``/settings``. What was spent before is put in the ledger as the calls it would have held."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager, nullcontext
from datetime import UTC, datetime

import pytest

from bot.config import ConfigError, parse_cap
from bot.core.commands import run_command
from bot.core.cost import money
from bot.core.handler import Handler
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from bot.core.ports.spend import ModelCall
from tests.support.core import Core, running_core, unit_config

C1 = Conversation("slack", "T1", "C1")
C2 = Conversation("slack", "T1", "C2")
ELSEWHERE = Conversation("slack", "T2", "C1")
# $0.001 a token: an answer of a few dozen tokens costs a few cents.
PRICES = {"gpt-4o-mini": {"input": 1000, "output": 1000}}
MORNING = datetime(2026, 12, 20, 9, tzinfo=UTC).timestamp()
NOW = datetime(2026, 12, 20, 19, tzinfo=UTC).timestamp()
TOMORROW = datetime(2026, 12, 21, 0, 30, tzinfo=UTC).timestamp()
NEXT_MONTH = datetime(2027, 1, 1, 0, 5, tzinfo=UTC).timestamp()


def config(**budgets: object) -> object:
    return unit_config(llm={"prices": PRICES}, budgets=budgets)


async def spent(
    core: Core, where: Conversation, *, cost: float = 0, tokens: int = 0, who: str = "", at=NOW
) -> None:
    """Calls already made (a chat call for ``who``; a summary for no one)."""
    await core.store.record_call(
        call=ModelCall(
            at=at,
            conversation=where,
            person=who,
            model="gpt-4o-mini",
            purpose="chat" if who else "summary",
            prompt_tokens=tokens,
            cached_tokens=0,
            completion_tokens=0,
            cost=cost,
        )
    )


async def ask(core: Core, where: Conversation, who: str, text: str) -> Reply:
    reply = await core.engine.handle_message(IncomingMessage(where, who, who, text, True))
    assert reply is not None
    return reply


async def command(core: Core, where: Conversation, name: str, argument: str, who: str) -> Reply:
    return await run_command(core.engine, CommandCall(where, name, argument, who, who))


async def channel_spend(core: Core, where: Conversation, since: float) -> float:
    rows = await core.store.spend(since=since, until=None, channel_key=where.channel_key)
    return sum(row.cost for row in rows)


async def test_the_answer_that_takes_the_channel_past_80_percent_says_so_once() -> None:
    async with running_core(config(channel={"day": "$1.00"})) as core:
        core.engine.clock = lambda: NOW
        await spent(core, C1, cost=0.79, who="U2", at=MORNING)
        first = await ask(core, C1, "U1", "what is the deploy window?")
        used = await channel_spend(core, C1, MORNING)
        assert 0.8 <= used < 1
        answer, notice = first.text.split("\n\n")
        assert notice == (
            f"This channel has used {int(used * 100)}% of its budget for today "
            f"({money(used)} of $1.00); it resets at 00:00 UTC (in 5 h)."
        )
        second = await ask(core, C1, "U1", "and who owns it?")
        assert "budget" not in second.text and second.kind is ReplyKind.ANSWER
        # the notice is told, not remembered: the stored answer is the model's alone
        assert all("budget" not in chat[-2]["content"] for chat in core.model.chats()[1:])
        assert core.model.chats()[1][-2]["content"] == answer


async def test_at_the_cap_the_model_is_not_called_and_the_reply_says_until_when() -> None:
    async with running_core(config(channel={"day": "$1.00"})) as core:
        core.engine.clock = lambda: NOW
        await spent(core, C1, cost=1.0, who="U2", at=MORNING)
        refused = await ask(core, C1, "U1", "the launch moved to Thursday, right?")
        assert refused.kind is ReplyKind.INFO and not refused.ephemeral
        assert refused.text == (
            "This channel has reached its budget for today ($1.00 of $1.00). No answers here "
            "until it resets at 00:00 UTC (in 5 h); messages are still remembered."
        )
        assert core.model.chats() == []
        assert await core.store.first_awaiting(conversation_key=C1.key) is None  # not stuck
        # another channel of the workspace is not this channel's cap
        assert (await ask(core, C2, "U1", "hello")).kind is ReplyKind.ANSWER

        core.engine.clock = lambda: TOMORROW  # a new UTC day: the cap starts again
        again = await ask(core, C1, "U1", "what did I say about the launch?")
        assert again.kind is ReplyKind.ANSWER
        prompt = "\n".join(m["content"] for m in core.model.chats()[-1])
        assert "the launch moved to Thursday, right?" in prompt  # the refused one, remembered


async def test_a_person_cap_refuses_that_person_only_counting_the_whole_workspace() -> None:
    async with running_core(config(person={"day": "1000 tokens"})) as core:
        core.engine.clock = lambda: NOW
        await spent(core, C2, tokens=1000, who="U1")  # spent in another channel
        await spent(core, ELSEWHERE, tokens=5000, who="U2")  # in another workspace
        refused = await ask(core, C1, "U1", "one more?")
        assert refused.text == (
            "You have reached your budget for today (1,000 of 1,000 tokens). No answers for "
            "you in this workspace until it resets at 00:00 UTC (in 5 h); messages are still "
            "remembered."
        )
        assert (await ask(core, C1, "U2", "and me?")).kind is ReplyKind.ANSWER
        assert len(core.model.chats()) == 1


async def test_a_workspace_cap_covers_every_channel_of_it_and_no_other_workspace() -> None:
    async with running_core(config(workspace={"day": "$5"})) as core:
        core.engine.clock = lambda: NOW
        await spent(core, C2, cost=3.0)  # summaries count, no one's
        await spent(core, C2, cost=2.0, who="U7")
        refused = await ask(core, C1, "U1", "anything?")
        assert refused.text.startswith(
            "This workspace has reached its budget for today ($5.00 of $5.00). No answers in "
            "this workspace until it resets at 00:00 UTC (in 5 h)"
        )
        assert (await ask(core, ELSEWHERE, "U1", "here?")).kind is ReplyKind.ANSWER
        assert await core.engine.caps.workspace_use("slack:T1") == {"day": 1.0}
        other = await core.engine.caps.workspace_use("slack:T2")
        assert 0 < other["day"] < 0.1


async def test_a_month_cap_counts_the_month_and_resets_on_the_first() -> None:
    async with running_core(config(channel={"month": "$2.50 or 1M tokens"})) as core:
        core.engine.clock = lambda: NOW
        await spent(core, C1, cost=9.0, who="U1", at=datetime(2026, 11, 30, tzinfo=UTC).timestamp())
        assert (await ask(core, C1, "U1", "last month's spend is not this month's")).kind is (
            ReplyKind.ANSWER
        )
        await spent(core, C1, cost=2.5, who="U1", at=datetime(2026, 12, 2, tzinfo=UTC).timestamp())
        refused = await ask(core, C1, "U1", "now?")
        assert "has reached its budget for this month ($2.5" in refused.text
        assert refused.text.endswith(
            "until it resets on 2027-01-01 at 00:00 UTC (in 11 days 5 h); messages are still "
            "remembered."
        )
        core.engine.clock = lambda: NEXT_MONTH
        assert (await ask(core, C1, "U1", "a new month")).kind is ReplyKind.ANSWER


async def test_summaries_count_but_never_block_a_question_under_the_cap_and_stop_at_it() -> None:
    cfg = unit_config(
        llm={"prices": PRICES},
        budgets={"channel": {"day": "$10"}, "person": {"day": "$0.01"}},
        memory={"strategy": "summary", "keep_recent_turns": 1},
    )
    async with running_core(cfg) as core:
        core.engine.clock = lambda: NOW
        for i in range(6):
            await core.engine.record(IncomingMessage(C1, "U2", "Ana", f"FACT: item {i}", False))
        await spent(core, C1, cost=9.0, who="U2")
        await spent(core, C1, cost=0.99, who="U1")  # U1 is past their own cap
        made = await command(core, C1, "summarize", "", "U1")  # no one's: U1's cap is not its
        assert made.text.startswith("Summary "), made.text
        assert len(core.model.summaries()) == 1
        assert await channel_spend(core, C1, MORNING) >= 10  # the summary took it to the cap
        refused = await ask(core, C1, "U2", "what are the items?")
        assert refused.text.startswith("This channel has reached its budget for today")

        skipped = await command(core, C1, "summarize", "", "U2")
        assert skipped.text.startswith("No summary now. This channel has reached its budget")
        await core.engine.schedule_summary(C1)
        await core.engine.drain()
        assert len(core.model.summaries()) == 1  # neither made one


async def test_a_summary_under_the_cap_leaves_the_question_answered() -> None:
    cfg = unit_config(
        llm={"prices": PRICES},
        budgets={"channel": {"day": "$100"}},
        memory={"strategy": "summary", "keep_recent_turns": 1},
    )
    async with running_core(cfg) as core:
        core.engine.clock = lambda: NOW
        for i in range(6):
            await core.engine.record(IncomingMessage(C1, "U2", "Ana", f"FACT: item {i}", False))
        await spent(core, C1, cost=99.0, who="U2")
        await command(core, C1, "summarize", "", "U2")
        assert len(core.model.summaries()) == 1
        assert await channel_spend(core, C1, MORNING) < 100
        assert (await ask(core, C1, "U2", "what are the items?")).kind is ReplyKind.ANSWER


async def test_a_digest_is_refused_at_the_cap_of_the_person_asking() -> None:
    async with running_core(config(person={"day": "$0.50"})) as core:
        core.engine.clock = lambda: NOW
        await core.engine.record(IncomingMessage(C1, "U2", "Ana", "the build is red", False))
        await spent(core, C2, cost=0.5, who="U1")
        refused = await command(core, C1, "summarize", "last 5", "U1")
        assert refused.text.startswith("You have reached your budget for today ($0.5 of $0.5)")
        assert core.model.requests == []
        digest = await command(core, C1, "summarize", "last 5", "U2")
        assert digest.text.startswith("Digest"), digest.text


async def test_settings_spend_day_sets_this_channels_cap_over_the_config_default() -> None:
    async with running_core(config(channel={"day": "$100"})) as core:
        core.engine.clock = lambda: NOW
        changed = await command(core, C1, "settings", "spend-day $1", "admin")
        assert changed.kind is ReplyKind.INFO
        assert changed.text.startswith("spend-day is now $1.00 in slack:T1:C1")
        bad = await command(core, C1, "settings", "spend-day lots", "admin")
        assert bad.kind is ReplyKind.ERROR and bad.text.startswith("spend-day: 'lots' is not")
        shown = await command(core, C1, "settings", "", "admin")
        assert "• spend-day: $1.00 (this channel)" in shown.text
        assert "• spend-month: off (config: budgets.channel.month)" in shown.text
        for where in (C1, C2):
            await spent(core, where, cost=1.0, who="U2")
        assert "reached its budget" in (await ask(core, C1, "U1", "here?")).text
        assert (await ask(core, C2, "U1", "there?")).kind is ReplyKind.ANSWER  # $100 there

        await command(core, C2, "settings", "spend-day 150k tokens", "admin")
        await command(core, C1, "settings", "spend-day off", "admin")
        assert (await ask(core, C1, "U1", "no cap here now")).kind is ReplyKind.ANSWER
        await spent(core, C2, tokens=150_000, who="U2")
        assert "(150,0" in (await ask(core, C2, "U1", "tokens?")).text

        usage = await command(core, C2, "usage", "", "U1")
        budgets = usage.text.split("Budgets in force:\n")[1]
        assert budgets.startswith("  This channel, today: 150,")
        assert budgets.endswith(" of 150,000 tokens (reached); resets at 00:00 UTC (in 5 h)")


async def test_a_thread_cannot_set_a_cap_of_its_own() -> None:
    async with running_core(config()) as core:
        thread = Conversation("slack", "T1", "C1", "17.1")
        told = await command(core, thread, "settings", "spend-day $1", "admin")
        assert told.text == "spend-day: set it in the channel; its caps cover its threads."


@pytest.mark.parametrize(
    ("typed", "cap"),
    [
        ("$2.50", "$2.50"),
        ("2.5", "$2.50"),
        ("150k tokens", "150,000 tokens"),
        ("150000 tokens", "150,000 tokens"),
        ("$1,000 or 2M tokens", "$1,000.00 or 2,000,000 tokens"),
        ("$0.005", "$0.005"),
    ],
)
def test_caps_are_read_in_money_tokens_or_both(typed: str, cap: str) -> None:
    assert str(parse_cap(typed)) == cap
    assert parse_cap(cap) == parse_cap(typed)


def test_a_bad_cap_in_the_config_names_its_key() -> None:
    with pytest.raises(ConfigError) as raised:
        unit_config(budgets={"workspace": {"month": "a lot"}})
    assert "budgets.workspace.month" in str(raised.value)
    assert "'a lot' is not a cap" in str(raised.value)
    assert parse_cap("off") is None
    assert unit_config(budgets={"channel": {"day": 3}}).budgets.channel.day == "$3.00"


LIMITED = {"person": {"day": "1000 tokens"}}


class Shown:
    """An outbox keeping what the handler sends."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def working(self) -> AbstractAsyncContextManager[None]:
        return nullcontext()

    async def show(self, text: str) -> None:
        pass

    async def send(self, reply: Reply) -> str | None:
        self.texts.append(reply.text)
        return None


async def test_where_every_message_is_answered_a_person_at_their_cap_is_told_once() -> None:
    streamless = {"prices": PRICES, "stream": False}  # the handler's outbox shows no stream
    async with running_core(unit_config(llm=streamless, budgets=LIMITED)) as core:
        core.engine.clock = lambda: NOW
        await command(core, C1, "settings", "answer all", "U9")
        await spent(core, C2, tokens=1000, who="U1")
        handler, shown = Handler(engine=core.engine), Shown()

        async def says(who: str, text: str, *, asked: bool = False) -> None:
            await handler.handle(IncomingMessage(C1, who, who, text, asked), shown)

        await says("U1", "lunch?")
        assert shown.texts[-1].startswith("You have reached your budget for today")
        await says("U1", "anyone?")
        await says("U1", "hello?")
        assert len(shown.texts) == 1  # kept without a word
        await says("U2", "I'm in")  # another person, under their cap: answered
        assert len(shown.texts) == 2 and shown.texts[-1].startswith("echo: [U2]")
        await says("U1", "bot, are you there?", asked=True)  # asked: told again
        assert shown.texts[-1].startswith("You have reached your budget for today")
        await command(core, C1, "settings", "person-spend-day off", "U9")
        await says("U1", "and now?")
        assert shown.texts[-1].startswith("echo: [U1]")  # the cap lifted: answered again
        assert await core.store.count_messages(conversation_key=C1.key) == 8  # six and two answers
