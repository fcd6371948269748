"""Prompts whose recent turns span days, end to end in-process (the engine over the in-memory
store and the in-process chat model): every prompt sent stays within its budget, is counted
exactly with its day lines (the model's reported usage matches the engine's count; ``/stats``
equals an independent recount), and shows a day exactly where the rule says: on the first of
the people's messages among the recent turns and on each one whose UTC day differs from the
one before, and only when they span days.

Hypothesis and pytest-asyncio fixtures don't mix, so each example runs its own event loop.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bot.core.memory.tokens import REPLY_PRIMING
from bot.core.models import Conversation, IncomingMessage
from tests.support.core import running_core, unit_config
from tests.support.fake_llm import count_prompt_tokens

MODEL = "gpt-4o-mini"
GENERAL = Conversation.console("general")
START = datetime(2026, 12, 1, 6, tzinfo=UTC)
TAG = re.compile(r"⟦(\d+)⟧")
DAY_LINE = re.compile(r"\d{4}-\d{2}-\d{2}\n")


@dataclass(frozen=True)
class Say:
    hours_later: int
    who: str
    words: int
    addressed: bool
    important: bool


says = st.builds(
    Say,
    hours_later=st.sampled_from((0, 0, 1, 5, 20, 30, 80)),
    who=st.sampled_from(("Ana", "Bo", "李雷")),
    words=st.one_of(st.integers(1, 12), st.integers(30, 120)),
    addressed=st.booleans(),
    important=st.booleans(),
)


@dataclass(frozen=True)
class Scenario:
    strategy: str
    budget: int
    recall_tokens: int
    says: tuple[Say, ...]


scenarios = st.builds(
    Scenario,
    strategy=st.sampled_from(("full", "window", "hybrid")),
    budget=st.integers(256, 1500),
    recall_tokens=st.sampled_from((0, 80)),
    says=st.lists(says, min_size=2, max_size=25).map(tuple),
)


def check_days(messages: list[dict[str, str]], days: dict[int, str]) -> None:
    """The day lines of one prompt's recent turns, against the rule; ``days``: each
    message's UTC day, by its tag."""
    recent = messages[1:]
    if recent and recent[0]["role"] == "system":
        recent = recent[1:]  # recall's
    shown: list[tuple[str, bool]] = []
    for message in recent:
        dated = DAY_LINE.match(message["content"]) is not None
        if message["role"] == "assistant":
            assert not dated, f"an answer opens with a date: {message!r}"
            continue
        tag = TAG.search(message["content"])
        assert tag is not None, message
        day = days[int(tag.group(1))]
        shown.append((day, dated))
        if dated:
            assert message["content"].startswith(f"{day}\n["), message
    spans = len({day for day, _ in shown}) > 1
    expected = [spans and (i == 0 or day != shown[i - 1][0]) for i, (day, _) in enumerate(shown)]
    assert [dated for _, dated in shown] == expected, shown
    event("dated turns" if spans else "turns of one day")
    if messages[1:2] and messages[1]["role"] == "system":
        event("recalled messages")


async def play(scenario: Scenario) -> None:
    memory = {
        "strategy": scenario.strategy,
        "max_context_tokens": scenario.budget,
        "recall_tokens": scenario.recall_tokens,
        "window_turns": 3,
    }
    days: dict[int, str] = {}
    when = START
    async with running_core(unit_config(memory=memory)) as core:
        for number, say in enumerate(scenario.says):
            when += timedelta(hours=say.hours_later)
            days[number] = when.strftime("%Y-%m-%d")
            text = f"⟦{number}⟧ " + " ".join(["word"] * say.words)
            if say.important:
                text += " we decided 4200"
            message = IncomingMessage(
                GENERAL, say.who.lower(), say.who, text, say.addressed, sent_at=when
            )
            await core.engine.handle_message(message)
            preview = (await core.engine.preview(GENERAL)).prompt
            assert count_prompt_tokens(MODEL, preview.messages) == preview.tokens <= preview.budget
            assert sum(preview.breakdown.as_dict().values()) + REPLY_PRIMING == preview.tokens
            check_days(preview.messages, days)
            if preview.turns_left_out and any(
                DAY_LINE.match(m["content"]) for m in preview.messages
            ):
                event("dated turns, some left out")
        await core.engine.background.drain()
        sent = core.model.chats()
        for prompt in sent:
            assert count_prompt_tokens(MODEL, prompt) <= scenario.budget
            check_days(prompt, days)
        calibration = core.engine.calibrator.get(MODEL)
        if sent:  # the model's count of every prompt sent was the engine's
            assert calibration is not None and calibration.lowest == calibration.highest == 1.0


@given(scenarios)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_dated_prompts_are_counted_exactly_and_stay_within_budget(scenario: Scenario) -> None:
    asyncio.run(play(scenario))
