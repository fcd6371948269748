"""The Slack adapter in HTTP mode, through Bolt's real code paths: signed requests to the app
served on 127.0.0.1, a fake Slack Web API reached through the client's base URL, and the
local OpenAI-compatible server behind the engine."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.adapters.slack.names import NAME_WAIT
from bot.adapters.slack.platform import EVENTS_PATH, SlackPlatform
from bot.config import parse_config
from bot.ops.doctor import run_checks
from bot.run import enabled_platforms, run_platforms
from bot.wiring import App, open_app
from tests.conftest import config_dict, is_summary_request
from tests.support.fake_llm import FakeLLM, Reply, count_prompt_tokens
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack, signed_headers
from tests.support.slack_bot import ENV, SECRET, USERS, Slack, serving, slack_settings


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
async def bot_app(tmp_path: Any, llm: FakeLLM, fake_slack: FakeSlack) -> AsyncIterator[App]:
    raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack))
    async with open_app(parse_config(raw, ENV)) as app:
        yield app


@pytest.fixture
async def slack(bot_app: App, fake_slack: FakeSlack) -> AsyncIterator[Slack]:
    async with serving(bot_app, fake_slack) as slack:
        yield slack


def now() -> str:
    return f"{time.time():.6f}"


def chat_bodies(llm: FakeLLM) -> list[dict[str, Any]]:
    return [body for body in llm.chat_requests if not is_summary_request(body)]


async def test_url_verification_is_answered(slack: Slack) -> None:
    body = json.dumps({"token": "x", "challenge": "ch4llenge", "type": "url_verification"})
    status, text = await slack.post(body, "application/json")
    assert status == 200 and "ch4llenge" in text


async def test_a_wrong_signature_or_a_stale_timestamp_gets_401(slack: Slack, llm: FakeLLM) -> None:
    body = json.dumps({"type": "url_verification", "challenge": "c"})
    assert (await slack.post(body, "application/json", secret="wrong"))[0] == 401
    assert (await slack.post(body, "application/json", age=360))[0] == 401
    form = urlencode({"command": "/stats", "text": "", "user_id": "U1", "team_id": TEAM})
    assert (await slack.post(form, "application/x-www-form-urlencoded", secret="x"))[0] == 401
    assert llm.chat_requests == []


async def test_a_mention_is_answered_in_its_channel_after_a_thinking_message(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.say("U1", f"<@{BOT_USER}> **hello** there")
    assert fake_slack.called("auth.test")
    posted = fake_slack.called("chat.postMessage")
    assert [(p["channel"], p["text"]) for p in posted] == [("C1", "_Thinking…_")]
    updated = fake_slack.called("chat.update")
    assert [(u["ts"], u["text"]) for u in updated] == [
        (posted[0]["ts"], "echo: [Ana] *hello* there")
    ]
    assert chat_bodies(llm)[-1]["messages"][-1]["content"] == "[Ana] **hello** there"


async def test_display_names_are_looked_up_once(slack: Slack, fake_slack: FakeSlack) -> None:
    await slack.say("U1", "one")
    await slack.say("U1", f"<@{BOT_USER}> two, ask <@U2>")
    await slack.say("U1", f"<@{BOT_USER}> three")
    looked_up = [p["user"] for p in fake_slack.called("users.info")]
    assert sorted(looked_up) == ["U1", "U2"]


async def test_unaddressed_chatter_is_remembered_not_answered(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.say("U2", "the deploy is at 5pm")
    assert fake_slack.called("chat.postMessage") == [] and llm.chat_requests == []
    await slack.say("U1", f"<@{BOT_USER}> when is the deploy?")
    contents = [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]
    assert contents == ["[Bo] the deploy is at 5pm", "[Ana] when is the deploy?"]


async def test_dms_and_answer_all_channels_need_no_mention(slack: Slack, fake_slack: FakeSlack):
    await slack.say("U1", "hi in a DM", channel="D1")
    await slack.say("U2", "hi in the call channel", channel="CALL")
    assert [p["channel"] for p in fake_slack.messages()] == ["D1", "CALL"]


async def test_own_and_other_bots_messages_are_ignored_and_retries_deduplicated(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    own = {"type": "message", "user": BOT_USER, "bot_id": "BBOT", "text": "hi", "channel": "C1"}
    assert await slack.event({**own, "ts": "1.1"}) == 200
    other = {**own, "user": "U7", "bot_id": "B7", "text": f"<@{BOT_USER}> hi", "ts": "1.2"}
    assert await slack.event(other) == 200
    mention = {"type": "message", "user": "U1", "text": f"<@{BOT_USER}> once", "channel": "C1"}
    for _ in range(3):
        assert await slack.event({**mention, "ts": "1.3"}, event_id="EvSame") == 200
    await slack.settle()
    assert len(chat_bodies(llm)) == 1
    stored = await slack.platform.engine.store.count_messages(conversation_key=f"slack:{TEAM}:C1")
    assert stored == 2


async def test_edits_and_deletions_follow_into_memory(slack: Slack, llm: FakeLLM) -> None:
    ts = await slack.say("U2", "the budget is 10k")
    gone = await slack.say("U2", "lunch at noon")
    edited = {"user": "U2", "text": "the budget is 12k", "ts": ts}
    change = {"type": "message", "subtype": "message_changed", "channel": "C1", "message": edited}
    assert await slack.event({**change, "ts": "2.0"}) == 200
    delete = {"type": "message", "subtype": "message_deleted", "channel": "C1", "deleted_ts": gone}
    assert await slack.event({**delete, "ts": "2.1"}) == 200
    bot_edit = {**change, "message": {"bot_id": "BBOT", "text": "x", "ts": ts}}
    assert await slack.event({**bot_edit, "ts": "2.2"}) == 200
    await slack.say("U1", f"<@{BOT_USER}> budget?")
    contents = [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]
    assert contents == ["[Bo] the budget is 12k", "[Ana] budget?"]


async def test_a_deletion_takes_the_logged_prompts_that_showed_the_message(
    tmp_path: Any, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    page = {"port": 0, "page": {"enabled": True}}
    raw = config_dict(
        llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack), http=page
    )
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        # Said now: a prompt answered after a message was said may show it.
        await slack.say("U1", f"<@{BOT_USER}> good morning", ts=now())
        gone = await slack.say("U2", "the door code is 4711", ts=now())
        await slack.say("U1", f"<@{BOT_USER}> the door code?", ts=now())
        channel = f"slack:{TEAM}:C1"
        logged = await app.store.logged_prompts(channel_key=channel, limit=5)
        assert "4711" in str(logged[0].messages) and logged[0].person == "U1"
        delete = {"type": "message", "subtype": "message_deleted", "channel": "C1"}
        assert await slack.event({**delete, "deleted_ts": gone, "ts": "9.1"}) == 200
        await slack.settle()
        logged = await app.store.logged_prompts(channel_key=channel, limit=5)
    assert [r.question for r in logged] == ["good morning"]


async def test_slash_commands_ack_at_once_and_answer_through_the_response_url(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    status, body = await slack.command("pin", "Release freeze starts Dec 15")
    assert (status, body) == (200, "")
    assert slack.last_response()["response_type"] == "in_channel"
    assert "Pinned #1: Release freeze starts Dec 15" in slack.last_response()["text"]
    await slack.command("pins")
    assert "#1 (ana): Release freeze starts Dec 15" in slack.last_response()["text"]
    await slack.command("stats")
    assert slack.last_response()["response_type"] == "ephemeral"
    assert "Context for slack:T1:C1" in slack.last_response()["text"]
    await slack.say("U1", f"<@{BOT_USER}> when is the freeze?")
    assert "Release freeze starts Dec 15" in chat_bodies(llm)[-1]["messages"][0]["content"]
    await slack.command("unpin", "1")
    assert "Unpinned #1." in slack.last_response()["text"]
    await slack.command("summarize")
    assert "Nothing to summarize yet" in slack.last_response()["text"]


async def test_reset_is_for_configured_admins_only(slack: Slack, fake_slack: FakeSlack) -> None:
    await slack.say("U1", "remember me")
    await slack.command("reset", user="U1")
    refused = slack.last_response()
    assert refused["response_type"] == "ephemeral" and "Only" in refused["text"]
    await slack.command("reset", user="U9")
    assert "Forgot 1 message " in slack.last_response()["text"]


async def test_the_pin_shortcut_pins_a_message_through_interactivity(
    slack: Slack, fake_slack: FakeSlack
) -> None:
    payload = {
        "type": "message_action",
        "callback_id": "pin_to_memory",
        "trigger_id": "1.2.3",
        "team": {"id": TEAM, "domain": "t"},
        "channel": {"id": "C1", "name": "general"},
        "user": {"id": "U2", "username": "bo", "team_id": TEAM},
        "message": {"type": "message", "user": "U1", "text": "Ana owns billing", "ts": "3.3"},
        "response_url": fake_slack.response_url("shortcut"),
    }
    form = urlencode({"payload": json.dumps(payload)})
    status, _ = await slack.post(form, "application/x-www-form-urlencoded")
    await slack.settle()
    assert status == 200
    assert "Pinned #1: Ana: Ana owns billing" in slack.last_response()["text"]
    pins = await slack.platform.engine.store.pins(channel_key=f"slack:{TEAM}:C1")
    assert [(p.text, p.author_name) for p in pins] == [("Ana: Ana owns billing", "Bo")]


async def test_a_429_is_retried_after_retry_after(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    fake_slack.fail("chat.update", Failure(status=429, error="ratelimited", retry_after=1))
    started = time.monotonic()
    await slack.say("U1", f"<@{BOT_USER}> are you there?")
    assert time.monotonic() - started >= 1
    updates = [c for c in fake_slack.calls if c.method.startswith("chat.update")]
    assert [c.method for c in updates[:2]] == ["chat.update!ratelimited", "chat.update"]
    assert updates[0].params["text"] == updates[1].params["text"]  # the same update, again
    assert fake_slack.messages()[-1]["text"] == "echo: [Ana] are you there?"


async def test_model_errors_are_ephemeral(slack: Slack, fake_slack: FakeSlack, llm: FakeLLM):
    llm.script(*[Reply.server_error()] * 3)
    await slack.say("U1", f"<@{BOT_USER}> hello?")
    assert fake_slack.messages() == []  # the thinking message is deleted
    (ephemeral,) = fake_slack.called("chat.postEphemeral")
    assert ephemeral["user"] == "U1" and "could not reach the model" in ephemeral["text"]


async def test_bot_run_connects_slack_and_stops_on_sigterm(
    bot_app: App, fake_slack: FakeSlack
) -> None:
    platforms = enabled_platforms(bot_app)
    assert [p.name for p in platforms] == ["slack"]
    running = asyncio.create_task(run_platforms(platforms))
    for _ in range(200):
        if platforms[0].connected:
            break
        await asyncio.sleep(0.02)
    assert platforms[0].connected
    port = cast(SlackPlatform, platforms[0]).port
    body = json.dumps({"type": "url_verification", "challenge": "up"})
    headers = signed_headers(SECRET, body, content_type="application/json")
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"http://127.0.0.1:{port}{EVENTS_PATH}", data=body, headers=headers) as answer,
    ):
        assert "up" in await answer.text()
    os.kill(os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(running, timeout=10)
    assert not platforms[0].connected


async def test_doctor_signs_in_to_slack(bot_app: App, fake_slack: FakeSlack) -> None:
    lines: list[str] = []
    assert await run_checks(bot_app, Path("config.yaml"), lambda c: lines.append(c.line()))
    assert lines[-1] == f"ok   platforms: slack: http mode, signed in as {BOT_USER} in {TEAM}"
    fake_slack.fail("auth.test", Failure(error="invalid_auth"))
    lines.clear()
    assert not await run_checks(bot_app, Path("config.yaml"), lambda c: lines.append(c.line()))
    assert lines[-1] == "FAIL platforms: slack: auth.test failed: invalid_auth"


async def test_end_to_end_two_channels_and_a_thread_with_pins_within_budget(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    budget = 700
    raw = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        slack=slack_settings(fake_slack),
        memory={"strategy": "full", "max_context_tokens": budget},
    )
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        await slack.command("pin", "Billing is owned by Ana", channel="C1")
        await slack.command("pin", "Random has no owner", channel="C2")
        for i in range(20):
            await slack.say("U2", f"C1 chatter {i} " + "blah " * 40, channel="C1")
        root = await slack.say("U1", f"<@{BOT_USER}> who owns billing?", channel="C1")
        await slack.say("U2", f"<@{BOT_USER}> anything here?", channel="C2")
        reply = f"<@{BOT_USER}> tell me more"
        await slack.say("U2", reply, channel="C1", thread_ts=root, ts="1800000000.1")

    first, second, third = chat_bodies(llm)
    for body in (first, second, third):
        assert count_prompt_tokens("gpt-4o-mini", body["messages"]) <= budget
    # C1: its pin, its speakers, the oldest chatter evicted, the question last
    assert "Billing is owned by Ana" in first["messages"][0]["content"]
    assert "Random has no owner" not in first["messages"][0]["content"]
    c1 = [m["content"] for m in first["messages"][1:]]
    assert c1[-1] == "[Ana] who owns billing?"
    assert all(text.startswith("[Bo] C1 chatter") for text in c1[:-1])
    assert "[Bo] C1 chatter 19" in c1[-2] and not any("chatter 0 " in t for t in c1)
    # C2 sees only its own pin and message
    assert "Random has no owner" in second["messages"][0]["content"]
    assert "Billing is owned by Ana" not in second["messages"][0]["content"]
    assert [m["content"] for m in second["messages"][1:]] == ["[Bo] anything here?"]
    # the thread: the channel's pins, the message it hangs from, then only its own messages
    # (the reply came years later: each shows its day)
    assert "Billing is owned by Ana" in third["messages"][0]["content"]
    assert [m["content"] for m in third["messages"][1:]] == [
        "2023-11-14\n[Ana] who owns billing?",
        "2027-01-15\n[Bo] tell me more",
    ]
    # replies reached the right channel and thread
    shown = [(m["channel"], m.get("thread_ts"), m["text"]) for m in fake_slack.messages()]
    assert shown == [
        ("C1", None, "echo: [Ana] who owns billing?"),
        ("C2", None, "echo: [Bo] anything here?"),
        ("C1", root, "echo: 2027-01-15\n[Bo] tell me more"),
    ]


async def test_a_long_reply_is_split_into_several_messages(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    long_reply = "\n\n".join(f"Paragraph {i}. " + "words " * 120 for i in range(8))
    llm.script(long_reply)
    await slack.say("U1", f"<@{BOT_USER}> write a lot")
    texts = [m["text"] for m in fake_slack.messages()]
    assert len(texts) > 1 and all(len(t) <= 3500 for t in texts)
    assert texts[0].startswith("Paragraph 0.") and texts[-1].rstrip().endswith("words")
    assert "".join(texts).count("Paragraph") == 8


async def test_threads_start_from_their_root_and_the_bot_follows_its_threads(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.say("U1", f"<@{BOT_USER}> the plan is A")
    answer = fake_slack.messages()[0]["ts"]  # the thinking message the answer replaced
    # a reply in the thread of the bot's answer needs no mention, and sees that answer
    await slack.say("U2", "why A?", thread_ts=answer, parent_user_id=BOT_USER)
    body = chat_bodies(llm)[-1]["messages"]
    assert [(m["role"], m["content"]) for m in body[1:]] == [
        ("assistant", "echo: [Ana] the plan is A"),
        ("user", "[Bo] why A?"),
    ]
    # a thread on someone's message: answered once mentioned, then followed
    root = await slack.say("U2", "the build is red")
    await slack.say("U1", "ugh", thread_ts=root, parent_user_id="U2")
    assert len(chat_bodies(llm)) == 2
    await slack.say("U1", f"<@{BOT_USER}> why?", thread_ts=root, parent_user_id="U2")
    await slack.say("U1", "and now?", thread_ts=root, parent_user_id="U2")
    assert [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]] == [
        "[Bo] the build is red",
        "[Ana] ugh",
        "[Ana] why?",
        "echo: [Ana] why?",
        "[Ana] and now?",
    ]
    in_thread = [m for m in fake_slack.messages() if m.get("thread_ts") == root]
    assert [m["text"] for m in in_thread] == ["echo: [Ana] why?", "echo: [Ana] and now?"]
    # editing the root edits it in the channel and in its thread
    edited = {"user": "U2", "text": "the build is green", "ts": root, "thread_ts": root}
    change = {"type": "message", "subtype": "message_changed", "channel": "C1", "message": edited}
    assert await slack.event({**change, "ts": "3.0"}) == 200
    await slack.settle()
    store = slack.platform.engine.store
    for key in (f"slack:{TEAM}:C1", f"slack:{TEAM}:C1:{root}"):
        found = await store.find_message(conversation_key=key, message_id=root)
        assert found is not None and found.content == "the build is green"


async def test_a_reply_in_a_thread_while_the_bot_is_still_answering_there_is_answered(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    root = await slack.say("U2", "the deploy failed")
    llm.script(Reply(text="looking into it", delay=0.5), "here is more")
    thread = {"type": "message", "channel": "C1", "channel_type": "channel"}
    thread |= {"thread_ts": root, "parent_user_id": "U2"}
    mention = {**thread, "user": "U1", "text": f"<@{BOT_USER}> why?", "ts": "1800000001.000001"}
    follow_up = {**thread, "user": "U1", "text": "and the logs?", "ts": "1800000002.000001"}
    assert await slack.event(mention) == 200
    assert await slack.event(follow_up) == 200  # sent before the first answer arrived
    await slack.settle()
    in_thread = [m["text"] for m in fake_slack.messages() if m.get("thread_ts") == root]
    assert in_thread == ["looking into it", "here is more"]
    assert chat_bodies(llm)[-1]["messages"][-1]["content"] == "[Ana] and the logs?"


async def test_a_slow_command_is_acknowledged_before_its_work_is_done(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    for i in range(6):
        await slack.say("U2", f"FACT {i} is worth remembering")
    llm.script(Reply(text="Facts:\n- FACT all\nNarrative:\nsix messages.", delay=1.0))
    form = {"command": "/summarize", "text": "", "user_id": "U1", "user_name": "ana"}
    form |= {"channel_id": "C1", "team_id": TEAM, "response_url": fake_slack.response_url("s")}
    started = time.monotonic()
    status, _ = await slack.post(urlencode(form), "application/x-www-form-urlencoded")
    acked_after = time.monotonic() - started
    assert status == 200 and acked_after < 1.0
    assert fake_slack.responses == []  # the work goes on after the ack
    await slack.settle()
    assert "Summary updated" in slack.last_response()["text"]
    assert "FACT all" in slack.last_response()["text"]


async def test_messages_are_remembered_in_the_order_they_came(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.say("U1", "warming the name cache")
    fake_slack.delays["U3"] = 0.3  # looking Cy up is slow
    first = {"type": "message", "user": "U3", "text": "first", "channel": "C1"}
    first["ts"] = "1700000000.5"  # the day of the others: the prompt shows no date
    second = {**first, "user": "U1", "text": "second", "ts": "1700000000.6"}
    assert await slack.event(first) == 200
    assert await slack.event(second) == 200
    await slack.say("U1", f"<@{BOT_USER}> order?")
    contents = [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]
    assert contents == [
        "[Ana] warming the name cache",
        "[Cy] first",
        "[Ana] second",
        "[Ana] order?",
    ]


async def test_a_pushpin_reaction_keeps_a_message_in_the_window_until_it_is_removed(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    raw = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        slack=slack_settings(fake_slack),
        memory={"strategy": "full", "max_context_tokens": 500},
    )
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:

        async def react(kind: str, ts: str, name: str = "pushpin") -> None:
            item = {"type": "message", "channel": "C1", "ts": ts}
            event = {"type": kind, "user": "U1", "reaction": name, "item": item}
            assert await slack.event({**event, "item_user": "U2", "event_ts": "9.9"}) == 200
            await slack.settle()

        async def chatter(count: int) -> list[str]:
            for i in range(count):
                await slack.say("U3", f"chatter {i} " + "blah " * 30)
            await slack.say("U1", f"<@{BOT_USER}> anything to note?")
            return [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]

        noted = await slack.say("U2", "Ana owns billing")
        await react("reaction_added", "1.000001")  # a message memory doesn't have
        await react("reaction_added", noted, name="thumbsup")  # not a pin
        assert "[Bo] Ana owns billing" not in await chatter(12)
        await react("reaction_added", noted)
        assert "[Bo] Ana owns billing" in await chatter(12)
        await react("reaction_removed", noted)
        assert "[Bo] Ana owns billing" not in await chatter(12)
        # In a thread: the reaction finds the reply in its thread's conversation.
        root = await slack.say("U2", "thread root")
        reply = await slack.say("U2", "the code is blue", thread_ts=root)
        await react("reaction_added", reply)
        key = f"slack:{TEAM}:C1:{root}"
        found = await app.store.find_message(conversation_key=key, message_id=reply)
        assert found is not None and found.important


async def test_a_slow_name_lookup_does_not_hold_back_storing_the_message(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    fake_slack.delays["U3"] = 4 * NAME_WAIT  # Slack is slow to say who U3 is (rate limits)
    first = {"type": "message", "user": "U3", "text": "the deploy key is K-77", "channel": "C1"}
    assert await slack.event({**first, "ts": "1700000000.61"}) == 200  # the others' day
    await slack.say("U1", f"<@{BOT_USER}> what is the deploy key?")
    # Stored at once under the user id, before the question that came after it.
    contents = [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]
    assert contents[-2:] == ["[U3] the deploy key is K-77", "[Ana] what is the deploy key?"]
    await slack.settle()  # the lookup went on: U3's next message carries the name
    assert await slack.event({**first, "text": "thanks", "ts": "1700000000.63"}) == 200
    await slack.say("U1", f"<@{BOT_USER}> and now?")
    assert "[Cy] thanks" in [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]
    assert len(fake_slack.called("users.info")) == 2  # Ana's once (cached), U3's once


async def test_after_a_restart_the_bot_still_follows_the_threads_it_answered_in(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    config = parse_config(
        config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack)), ENV
    )

    async def session(work: Callable[[Slack], Awaitable[None]]) -> None:
        """One run of the bot: its app, its Slack endpoint, until ``work`` is done."""
        async with open_app(config) as app, serving(app, fake_slack) as slack:
            await work(slack)

    roots: dict[str, str] = {}

    async def before(slack: Slack) -> None:
        roots["answered"] = await slack.say("U2", "the build is red")
        await slack.say("U1", f"<@{BOT_USER}> why?", thread_ts=roots["answered"])
        roots["quiet"] = await slack.say("U2", "lunch?")
        await slack.say("U1", "pizza", thread_ts=roots["quiet"])  # never addressed

    async def after(slack: Slack) -> None:
        await slack.say("U1", "and now?", thread_ts=roots["answered"], ts="1800000001.000001")
        await slack.say("U1", "or sushi", thread_ts=roots["quiet"], ts="1800000002.000001")

    await session(before)
    answered = len(chat_bodies(llm))
    await session(after)  # a new process: what it followed is known from memory alone
    assert len(chat_bodies(llm)) == answered + 1
    # Years after the thread began: the prompt shows the day of each.
    dated = "2027-01-15\n[Ana] and now?"
    assert [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]][-1] == dated
    replies = [m for m in fake_slack.messages() if m.get("thread_ts") == roots["answered"]]
    assert [m["text"] for m in replies][-1] == f"echo: {dated}"
    assert not any(m.get("thread_ts") == roots["quiet"] for m in fake_slack.messages())


async def test_a_message_redelivered_after_a_restart_is_stored_and_answered_once(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    """Slack redelivers a message under a new event id (a retry after the bot restarted, or
    the same message twice): memory holds it once and the bot answers it once."""
    config = parse_config(
        config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack)), ENV
    )
    question = {"type": "message", "user": "U1", "text": f"<@{BOT_USER}> once?", "channel": "C1"}
    question["ts"] = "8.1"
    async with open_app(config) as app, serving(app, fake_slack) as slack:
        assert await slack.event(question, event_id="EvA") == 200
        assert await slack.event(question, event_id="EvB") == 200
        await slack.settle()
    async with open_app(config) as app, serving(app, fake_slack) as slack:
        assert await slack.event(question, event_id="EvC") == 200
        await slack.settle()
        stored = await app.store.count_messages(conversation_key=f"slack:{TEAM}:C1")
    assert stored == 2  # the question and its answer
    assert len(chat_bodies(llm)) == 1
    assert len(fake_slack.called("chat.postMessage")) == 1


async def test_a_replayed_slash_command_acts_once_even_after_a_restart(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    """The same signed ``/pin`` request sent again (within Slack's five minutes) pins once."""
    config = parse_config(
        config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack)), ENV
    )
    form = urlencode(
        {
            "command": "/pin",
            "text": "the freeze starts Monday",
            "user_id": "U1",
            "user_name": "ana",
            "channel_id": "C1",
            "team_id": TEAM,
            "response_url": fake_slack.response_url("pin"),
            "trigger_id": "13.57.9a",
        }
    )
    headers = signed_headers(SECRET, form, content_type="application/x-www-form-urlencoded")

    async def replay(slack: Slack) -> int:
        async with slack.http.post(slack.url, data=form.encode(), headers=headers) as response:
            status = response.status
        await slack.settle()
        return status

    async with open_app(config) as app, serving(app, fake_slack) as slack:
        assert await replay(slack) == 200
        assert await replay(slack) == 200
    async with open_app(config) as app, serving(app, fake_slack) as slack:
        assert await replay(slack) == 200
        pins = await app.store.pins(channel_key=f"slack:{TEAM}:C1")
    assert [pin.text for pin in pins] == ["the freeze starts Monday"]
    assert len(fake_slack.responses) == 1


async def test_an_event_the_database_cannot_store_is_refused_so_slack_sends_it_again(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    """Another process holds the write lock past the busy timeout: no 200 (Slack retries);
    the retry, once the lock is free, is stored once."""
    db_path = tmp_path / "bot.sqlite3"
    raw = config_dict(
        llm.url, db_path, slack=slack_settings(fake_slack), storage={"busy_timeout_ms": 200}
    )
    note = {"type": "message", "user": "U1", "text": "keep this", "channel": "C1", "ts": "9.1"}
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        blocker = sqlite3.connect(db_path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            assert await slack.event(note, event_id="EvLocked") == 503
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert await slack.event(note, event_id="EvLocked") == 200
        assert await slack.event(note, event_id="EvLocked") == 200
        await slack.settle()
        stored = await app.store.messages_after_turn(
            conversation_key=f"slack:{TEAM}:C1", after_turn=0, limit=10
        )
    assert [m.content for m in stored] == ["keep this"]


async def test_edits_deletions_and_pushpins_are_acknowledged_only_once_committed(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    db_path = tmp_path / "bot.sqlite3"
    raw = config_dict(
        llm.url, db_path, slack=slack_settings(fake_slack), storage={"busy_timeout_ms": 200}
    )
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        kept = await slack.say("U2", "the budget is 10k")
        gone = await slack.say("U2", "lunch at noon")
        edited = {"user": "U2", "text": "the budget is 12k", "ts": kept}
        edit = {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "2.0"}
        edit["message"] = edited
        delete = {"type": "message", "subtype": "message_deleted", "channel": "C1", "ts": "2.1"}
        delete["deleted_ts"] = gone
        item = {"type": "message", "channel": "C1", "ts": kept}
        pushpin = {"type": "reaction_added", "user": "U1", "reaction": "pushpin", "item": item}
        events = [(edit, "EvEdit"), (delete, "EvDelete"), (pushpin, "EvPin")]
        blocker = sqlite3.connect(db_path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            for event, event_id in events:
                assert await slack.event(event, event_id=event_id) == 503
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        for event, event_id in events:  # Slack's retries
            assert await slack.event(event, event_id=event_id) == 200
        await slack.settle()
    db = sqlite3.connect(db_path)
    try:
        rows = db.execute("SELECT content, marks FROM messages").fetchall()
    finally:
        db.close()
    assert rows == [("the budget is 12k", 1)]  # edited, the other deleted, pinned once


async def test_deleting_the_bots_own_answer_takes_it_out_of_memory(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    await slack.say("U1", f"<@{BOT_USER}> what is the budget?")
    (answer,) = fake_slack.messages()
    # Slack names the bot as the deleted message's author.
    previous = {"type": "message", "user": BOT_USER, "bot_id": "BBOT", "ts": answer["ts"]}
    delete = {"type": "message", "subtype": "message_deleted", "hidden": True, "channel": "C1"}
    delete.update(ts="1700000100.000001", deleted_ts=answer["ts"], previous_message=previous)
    assert await slack.event(delete) == 200
    await slack.settle()
    await slack.say("U1", f"<@{BOT_USER}> and now?")
    contents = [m["content"] for m in chat_bodies(llm)[-1]["messages"][1:]]
    assert contents == ["[Ana] what is the budget?", "[Ana] and now?"]


async def test_search_shows_the_caller_what_memory_holds_with_permalinks(
    tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack
) -> None:
    raw = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        slack=slack_settings(fake_slack),
        memory={"recall_tokens": 500},
    )
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        ts = await slack.say("U2", "the staging password rotates every 90 days")
        await slack.say("U1", "lunch at noon?")
        await slack.command("search", "staging password")
        await slack.command("search", "")
    found, usage = (response.params for response in fake_slack.responses)
    assert found["response_type"] == "ephemeral"
    lines = found["text"].splitlines()
    assert lines[0] == "Best matches for “staging password” in this conversation:"
    link = f"https://fake-team.slack.com/archives/C1/p{ts.replace('.', '')}"
    assert len(lines) == 2 and lines[1].endswith(
        f"Bo: the staging password rotates every 90 days ({link})"
    )
    assert usage["text"].startswith("Usage: /search TEXT") and usage["response_type"] == "ephemeral"
