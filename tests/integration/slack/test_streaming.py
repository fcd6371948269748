"""Answers streamed into Slack through Bolt's real code paths: signed requests to the app on
127.0.0.1, the local model server streaming SSE, the fake Slack recording each
``chat.startStream`` / ``appendStream`` / ``stopStream`` and ``chat.update`` with when it came.

Both ways are covered: Slack's streaming API in threads, and updates of the thinking message
about once a second at the top of a channel and where Slack refuses the API."""

from __future__ import annotations

import asyncio
import itertools
import re
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.slack.render import to_mrkdwn
from bot.adapters.slack.stream import MESSAGE_CHARS
from bot.config import parse_config
from bot.core.answering import INTERRUPTED
from bot.core.models import Conversation, Role
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_llm import Break, FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, TEAM, Call, Failure, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

ROOT = "1690000000.000100"  # a thread's root: answers in it stream natively
WORDS = " ".join(f"word{i}" for i in range(40))
PATHS = ["native", "update"]


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
async def app(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> AsyncIterator[App]:
    llm_settings = {"max_retries": 0, "timeout_seconds": 2, "max_reply_chars": 40_000}
    raw = config_dict(
        llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack), llm=llm_settings
    )
    async with open_app(parse_config(raw, ENV)) as app:
        yield app


@pytest.fixture
async def slack(app: App, fake_slack: FakeSlack) -> AsyncIterator[Slack]:
    async with serving(app, fake_slack) as slack:
        yield slack


def where(path: str) -> dict[str, Any]:
    """Where a question goes for an answer streamed ``path``'s way."""
    return {"thread_ts": ROOT} if path == "native" else {}


async def ask(slack: Slack, path: str, text: str = "tell me", channel: str = "C1") -> str:
    return await slack.say("U1", f"<@{BOT_USER}> {text}", channel=channel, **where(path))


def edits(fake: FakeSlack, path: str) -> list[Call]:
    """The calls that change a shown answer while it is written (not its last)."""
    method = "chat.appendStream" if path == "native" else "chat.update"
    return [call for call in fake.calls if call.method == method]


async def stored(app: App, conversation: Conversation) -> list[str]:
    messages = await app.store.messages_between(
        conversation_key=conversation.key, first_id=0, through_id=10**9
    )
    return [m.content for m in messages if m.role is Role.ASSISTANT]


def conversation(path: str, channel: str = "C1") -> Conversation:
    return Conversation("slack", TEAM, channel, ROOT if path == "native" else None)


def as_shown(path: str, markdown: str) -> str:
    return markdown if path == "native" else to_mrkdwn(markdown)


async def until(check: Callable[[], object], within: float = 10.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.02)


@pytest.mark.parametrize("path", PATHS)
async def test_text_shows_before_the_model_finishes_at_most_once_a_second_a_message(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM, app: App, path: str
) -> None:
    llm.script(Reply(WORDS, piece_delay=0.08))  # about 3.2 s of writing
    await ask(slack, path)
    (answer,) = fake_slack.messages()
    assert answer["text"] == WORDS
    last = fake_slack.calls[-1]
    partial = edits(fake_slack, path)
    if path == "native":
        (start,) = fake_slack.called("chat.startStream")
        assert last.method == "chat.stopStream" and WORDS.startswith(start["markdown_text"])
        first_at = next(c.at for c in fake_slack.calls if c.method == "chat.startStream")
    else:
        assert last.method == "chat.update"
        partial = partial[:-1]  # the finished answer
        first_at = partial[0].at
        assert WORDS.startswith(partial[0].params["text"])
    assert last.at - first_at > 2  # visible seconds before the model's last word
    assert len(partial) >= 2
    for before, after in itertools.pairwise(partial):
        assert after.at - before.at >= 0.9, "more than one update a second"
    assert await stored(app, conversation(path)) == [WORDS]


@pytest.mark.parametrize("path", PATHS)
async def test_a_429_is_waited_out_and_the_answer_still_arrives(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM, path: str
) -> None:
    method = "chat.appendStream" if path == "native" else "chat.update"
    fake_slack.fail(method, Failure(status=429, error="ratelimited", retry_after=2))
    llm.script(Reply(WORDS, piece_delay=0.08))
    await ask(slack, path)
    (answer,) = fake_slack.messages()
    assert answer["text"] == WORDS
    limited = next(c for c in fake_slack.calls if c.method == f"{method}!ratelimited")
    after = [c for c in fake_slack.calls if c.at > limited.at and c.method.startswith("chat.")]
    assert after and after[0].at - limited.at >= 1.9  # Retry-After honoured


@pytest.mark.parametrize("path", PATHS)
async def test_a_stream_cut_off_keeps_its_text_marked_and_memory_holds_what_slack_shows(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM, app: App, path: str
) -> None:
    llm.script(Reply(WORDS, piece_delay=0.05, breaks=Break(after=25, how="drop")))
    await ask(slack, path)
    (answer,) = fake_slack.messages()
    start = " ".join(WORDS.split()[:25])
    assert answer["text"] == as_shown(path, f"{start}\n\n{INTERRUPTED}")
    (kept,) = await stored(app, conversation(path))
    assert as_shown(path, kept) == answer["text"]
    assert "_Thinking…_" not in [m["text"] for m in fake_slack.messages()]
    assert fake_slack.streaming() == set()


@pytest.mark.parametrize("path", PATHS)
async def test_a_slow_stream_in_one_channel_does_not_hold_up_another(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM, path: str
) -> None:
    def respond(body: dict[str, Any]) -> Reply:
        slow = "slowly" in str(body["messages"])
        return Reply(WORDS, piece_delay=0.2 if slow else 0.01)

    llm.responder = respond
    question = {"type": "message", "user": "U1", "channel_type": "channel", **where(path)}
    slow_event = {**question, "text": f"<@{BOT_USER}> slowly", "channel": "C1", "ts": "1.1"}
    fast_event = {**question, "text": f"<@{BOT_USER}> fast", "channel": "C2", "ts": "1.2"}
    assert await slack.event(slow_event) == 200
    await until(lambda: fake_slack.called("chat.startStream") or edits(fake_slack, path))
    assert await slack.event(fast_event) == 200

    def answered(channel: str) -> bool:
        return any(m["channel"] == channel and m["text"] == WORDS for m in fake_slack.messages())

    await until(lambda: answered("C2"), within=4)
    assert not answered("C1")  # still being written
    await slack.settle()
    assert answered("C1")


async def test_a_thread_answer_streams_to_the_asker_and_leaves_no_thinking_message(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    llm.script(Reply("Use the **blue** key; ask <!here> if lost.", piece_delay=0.02))
    await ask(slack, "native")
    (start,) = fake_slack.called("chat.startStream")
    assert (start["channel"], start["thread_ts"]) == ("C1", ROOT)
    assert (start["recipient_team_id"], start["recipient_user_id"]) == (TEAM, "U1")
    (stop,) = fake_slack.called("chat.stopStream")
    assert stop["ts"] == fake_slack.calls[-1].params["ts"]
    (answer,) = fake_slack.messages()
    assert answer["text"] == "Use the **blue** key; ask <\u200b!here> if lost."  # no mention
    (thinking,) = fake_slack.called("chat.postMessage")
    assert thinking["text"] == "_Thinking…_"
    assert [d["ts"] for d in fake_slack.called("chat.delete")] == [thinking["ts"]]
    assert fake_slack.called("chat.update") == []


async def test_where_slack_refuses_streaming_the_thinking_message_is_updated_from_then_on(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    fake_slack.fail("chat.startStream", Failure(error="unknown_method"))
    llm.script(Reply(WORDS, piece_delay=0.03), Reply("second", piece_delay=0.03))
    await ask(slack, "native")
    await slack.say("U1", f"<@{BOT_USER}> again", thread_ts="1690000000.000200")
    assert [m["text"] for m in fake_slack.messages()] == [WORDS, "second"]
    assert [c.method for c in fake_slack.calls if "Stream" in c.method] == [
        "chat.startStream!unknown_method"  # asked once, remembered
    ]
    assert fake_slack.called("chat.update")[-1]["text"] == "second"


def long_answer() -> str:
    paragraph = " ".join(["lorem ipsum dolor sit amet"] * 40)  # 1,079 characters
    code = "```python\n" + "\n".join(f"x{i} = {i}  # a line" for i in range(150)) + "\n```"
    return "\n\n".join([paragraph] * 9 + [code] + [paragraph] * 3)


@pytest.mark.parametrize("path", PATHS)
async def test_a_long_answer_goes_on_in_a_new_message_at_a_boundary_with_fences_balanced(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM, path: str
) -> None:
    text = long_answer()
    assert len(text) > MESSAGE_CHARS
    llm.script(Reply(text, piece_delay=0.0005))
    await ask(slack, path)
    messages = [m["text"] for m in fake_slack.messages()]
    assert len(messages) >= 2
    for message in messages:
        assert message.count("```") % 2 == 0, message[-200:]
    shown = "\n".join(messages)
    assert "lorem" in messages[1]
    for message in messages[:-1]:
        assert message.rstrip().endswith(("amet", "```")), message[-50:]  # paragraph or block
    if path == "native":
        assert len(messages) == 2 and all(len(m) <= MESSAGE_CHARS for m in messages)
        assert shown.replace("\n", "") == text.replace("\n", "")
        for state in streamed_states(fake_slack):  # never a fence half written
            assert not re.search(r"(^|\n)[ \t]*[`~]{1,2}$|```\w*$", state), state[-40:]


def streamed_states(fake: FakeSlack) -> list[str]:
    """Each streamed message's text after each call, as people saw it grow."""
    texts: dict[str, str] = {}
    states = []
    for call in fake.calls:
        if call.method in ("chat.startStream", "chat.appendStream", "chat.stopStream"):
            ts = call.params["ts"]
            texts[ts] = texts.get(ts, "") + str(call.params.get("markdown_text") or "")
            states.append(texts[ts])
    return states
