"""Bad model output: a reply holding a lone surrogate (valid JSON, ``"\\ud83d"``) and bodies
that are JSON but not a chat completion. The person always gets an answer: the text with
U+FFFD, or the honest "could not read"; the question is stored, the answer stored exactly as
shown or not at all; the messages after it are answered as usual.

Driven through ``bot chat`` as a process and through Slack (Bolt against the local fake).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.config import parse_config
from bot.wiring import open_app
from tests.conftest import config_dict, is_summary_request
from tests.e2e.test_cli import bot, write_config
from tests.integration.slack.test_http import ENV, USERS, Slack, serving, slack_settings
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import FakeSlack

SURROGATE = Reply.raw_content(r"hi \ud83d there")
SHOWN = "hi \ufffd there"
UNREADABLE = "The model endpoint sent an answer I could not read."
MALFORMED = [
    '{"choices":"nope"}',
    '{"choices":[]}',
    '{"choices":[5]}',
    '{"choices":[{"message":"m"}]}',
    '{"choices":[{"message":{"content":5}}]}',
    '{"choices":[{"message":{"content":["a"]}}]}',
    "[1, 2]",
    "null",
    "<html>Bad gateway</html>",
]


@pytest.fixture
async def slack(tmp_path: Path, llm: FakeLLM) -> AsyncIterator[Slack]:
    async with FakeSlack(USERS) as fake:
        raw = config_dict(
            llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake), llm={"max_retries": 0}
        )
        async with open_app(parse_config(raw, ENV)) as app, serving(app, fake) as slack:
            yield slack


def stored(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as connection:
        rows = connection.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    return [(str(role), str(content)) for role, content in rows]


def test_bot_chat_answers_every_line_whatever_the_model_sends(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = write_config(tmp_path, llm_thread.url, llm={"max_retries": 0})
    llm_thread.script(SURROGATE, *(Reply(raw_body=body) for body in MALFORMED))
    questions = ["first", *(f"malformed {i}" for i in range(len(MALFORMED))), "last"]
    result = bot(
        "chat", "--config", str(config), "--user", "ana", stdin="".join(f"{q}\n" for q in questions)
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == SHOWN
    assert all(line.startswith(UNREADABLE) for line in lines[1:-1]), lines
    assert lines[-1] == "echo: [ana] last"
    assert len(lines) == len(questions)
    answers = [("assistant", SHOWN), ("assistant", "echo: [ana] last")]
    assert stored(tmp_path / "bot.sqlite3") == [
        ("user", "first"),
        answers[0],
        *(("user", q) for q in questions[1:-1]),
        ("user", "last"),
        answers[1],
    ]
    # The next prompt holds the answer as it was shown.
    prompt = [m for m in llm_thread.chat_requests if not is_summary_request(m)][-1]["messages"]
    assert {"role": "assistant", "content": SHOWN} in prompt


async def test_slack_shows_the_reply_with_a_replacement_character_or_says_it_was_unreadable(
    slack: Slack, llm: FakeLLM, tmp_path: Path
) -> None:
    llm.script(SURROGATE, Reply(raw_body='{"choices":"nope"}'))
    await slack.say("U1", "first", channel="D1")
    await slack.say("U1", "second", channel="D1")
    await slack.say("U1", "third", channel="D1")
    shown = [m["text"] for m in slack.fake.messages()]
    assert shown == [SHOWN, "echo: [Ana] third"]
    (unreadable,) = slack.fake.called("chat.postEphemeral")
    assert unreadable["text"].startswith(UNREADABLE)
    assert stored(tmp_path / "bot.sqlite3") == [
        ("user", "first"),
        ("assistant", SHOWN),
        ("user", "second"),
        ("user", "third"),
        ("assistant", "echo: [Ana] third"),
    ]
