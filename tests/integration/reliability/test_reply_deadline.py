"""One deadline per answer (``llm.reply_deadline_seconds``) over all its retries: a hung
model, or one that asks to wait longer than the deadline leaves (``Retry-After: 50``), gives
the person an honest answer by the deadline, and the messages that arrived meanwhile in the
same channel are answered right after, in order.

Driven through ``bot chat`` as a process and through Slack (Bolt against the local fake);
the times are those at which the model server received each request.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.config import parse_config
from bot.wiring import open_app
from tests.conftest import config_dict, respond
from tests.e2e.test_cli import bot, write_config
from tests.integration.slack.test_http import ENV, USERS, Slack, serving, slack_settings
from tests.support.fake_llm import FakeLLM, Record, Reply, Responder
from tests.support.fake_slack import FakeSlack

DEADLINE = 2.0
# Without the deadline, a hung model costs timeout x (retries + 1) = 15 s a question.
LLM = {"timeout_seconds": 5, "max_retries": 2, "reply_deadline_seconds": DEADLINE}
HUNG = Reply(text="too late", delay=30)
THROTTLED = Reply.rate_limited(retry_after=50)
TIMED_OUT = "The model did not answer in time."
RATE_LIMITED = "The model is rate-limited; try again in about 50 s."


def stuck_on(word: str, fault: Reply) -> Responder:
    """The model answers every request for the message ``word`` with ``fault``."""

    def responder(body: dict[str, Any]) -> Reply | str:
        return fault if body["messages"][-1]["content"].endswith(f"] {word}") else respond(body)

    return responder


def gaps(records: list[Record]) -> list[float]:
    return [later.at - earlier.at for earlier, later in itertools.pairwise(records)]


def asked(record: Record) -> str:
    return str(record.body["messages"][-1]["content"])


@pytest.mark.parametrize(("fault", "says"), [(HUNG, TIMED_OUT), (THROTTLED, RATE_LIMITED)])
def test_bot_chat_answers_by_the_deadline_then_the_next_lines_at_once(
    tmp_path: Path, llm_thread: FakeLLM, fault: Reply, says: str
) -> None:
    config = write_config(tmp_path, llm_thread.url, llm=LLM)
    llm_thread.responder = stuck_on("one", fault)
    result = bot(
        "chat", "--config", str(config), "--user", "ana", stdin="one\ntwo\nthree\n"
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(says), lines
    assert lines[1:] == ["echo: [ana] two", "echo: [ana] three"]
    records = llm_thread.chat_records
    assert [asked(r) for r in records] == ["[ana] one", "[ana] two", "[ana] three"]
    first_wait, *rest = gaps(records)
    if fault is HUNG:  # the deadline runs from before the prompt is built and sent
        assert DEADLINE - 0.5 <= first_wait < DEADLINE + 1.0
    else:  # a wait longer than the deadline leaves fails at once
        assert first_wait < 1.0
    assert all(gap < 1.0 for gap in rest)


@pytest.fixture
async def slack(tmp_path: Path, llm: FakeLLM) -> AsyncIterator[Slack]:
    async with FakeSlack(USERS) as fake:
        raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake), llm=LLM)
        async with open_app(parse_config(raw, ENV)) as app, serving(app, fake) as slack:
            yield slack


def message(text: str, ts: str) -> dict[str, str]:
    return {"type": "message", "user": "U1", "text": text, "channel": "D1",
            "channel_type": "im", "ts": ts}  # fmt: skip


@pytest.mark.parametrize(("fault", "says"), [(HUNG, TIMED_OUT), (THROTTLED, RATE_LIMITED)])
async def test_slack_messages_behind_a_stuck_answer_wait_one_deadline_at_most(
    slack: Slack, llm: FakeLLM, fault: Reply, says: str
) -> None:
    llm.responder = stuck_on("one", fault)
    started = time.monotonic()
    async with asyncio.timeout(DEADLINE + 8):
        for i, text in enumerate(["one", "two", "three"], 1):
            assert await slack.event(message(text, f"1700000000.00000{i}")) == 200
        await slack.settle()
    took = time.monotonic() - started
    (error,) = slack.fake.called("chat.postEphemeral")
    assert error["text"].startswith(says)
    assert [m["text"] for m in slack.fake.messages()] == ["echo: [Ana] two", "echo: [Ana] three"]
    assert took < DEADLINE + 2.0
    assert all(gap < 1.0 for gap in gaps(llm.chat_records)[1:])
