"""Isolation: no prompt for one channel, Slack workspace or Discord server ever holds another's
messages, pins or summary; a thread sees its own messages and its channel's pins only.

Six conversations that share ids where platforms could confuse them (channel ``C1`` in two Slack
workspaces, in two Discord servers and on the console; a thread of one of them) talk in a
seeded random interleaving, concurrently, with pins and a budget small enough that summaries
fold every conversation several times. Every text carries a marker naming its conversation
(messages) or channel (pins); every request the model server received is then checked: a
chat prompt holds only its own conversation's messages and its channel's pins; a summary
request holds one conversation's messages only; so does every stored summary.
"""

from __future__ import annotations

import asyncio
import json
import random
import re

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from bot.wiring import open_app
from tests.conftest import ConfigFactory, is_summary_request
from tests.integration.slack.test_http import Slack, bot_app, fake_slack, slack
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, FakeSlack
from tests.support.stores import APP_KINDS, StoreKind, app_store

__all__ = ["bot_app", "fake_slack", "slack"]

CONVERSATIONS = {
    "a": Conversation("slack", "T1", "C1"),
    "b": Conversation("slack", "T2", "C1"),
    "c": Conversation("discord", "1001", "C1"),
    "d": Conversation("discord", "1002", "C1"),
    "e": Conversation("console", "local", "C1"),
    "t": Conversation("slack", "T1", "C1", thread="1700000000.000100"),
}
CHANNEL_OF = {tag: c.channel_key for tag, c in CONVERSATIONS.items()}
MARKER = re.compile(r"⟦([mp])([a-z])(\d+)⟧")


def allowed_in_chat(tag: str) -> set[tuple[str, str]]:
    """(kind, tag) pairs a prompt for conversation ``tag`` may contain."""
    pins = {("p", other) for other in CONVERSATIONS if CHANNEL_OF[other] == CHANNEL_OF[tag]}
    return {("m", tag)} | pins


def markers(text: str) -> set[tuple[str, str]]:
    return {(kind, tag) for kind, tag, _ in MARKER.findall(text)}


@pytest.mark.parametrize("kind", APP_KINDS)
async def test_no_prompt_or_summary_mixes_conversations(
    make_config: ConfigFactory, llm: FakeLLM, kind: StoreKind
) -> None:
    rng = random.Random(4242)
    config = make_config(memory={"max_context_tokens": 500, "keep_recent_turns": 2})
    counter = iter(range(1, 10**6))
    async with open_app(config, store=app_store(kind)) as app:
        engine = app.engine

        async def act(tag: str) -> None:
            where = CONVERSATIONS[tag]
            n = next(counter)
            if rng.random() < 0.08:
                reply = await run_command(
                    engine, CommandCall(where, "pin", f"pinned ⟦p{tag}{n}⟧", "u1", "Ana")
                )
                assert reply.kind is ReplyKind.INFO, reply.text
                return
            fact = "FACT " if rng.random() < 0.3 else ""
            text = f"{fact}said ⟦m{tag}{n}⟧ " + "words " * rng.randint(1, 12)
            addressed = rng.random() < 0.7
            await engine.handle_message(IncomingMessage(where, "u1", "Ana", text, addressed))

        for _ in range(40):  # rounds of concurrent turns, one per conversation in random order
            tags = list(CONVERSATIONS)
            rng.shuffle(tags)
            await asyncio.gather(*(act(tag) for tag in tags))
        await engine.drain()
        summaries = {
            tag: await app.store.latest_summary(conversation_key=c.key)
            for tag, c in CONVERSATIONS.items()
        }

    chat_checked = summary_checked = 0
    for body in llm.chat_requests:
        texts = [m["content"] for m in body["messages"]]
        found = markers("\n".join(texts))
        if is_summary_request(body):
            assert {kind for kind, _ in found} <= {"m"}
            assert len({tag for _, tag in found}) <= 1, found
            summary_checked += 1
            continue
        current = MARKER.search(texts[-1])
        assert current is not None
        tag = current.group(2)
        assert found <= allowed_in_chat(tag), (tag, found - allowed_in_chat(tag))
        chat_checked += 1
    assert chat_checked > 100 and summary_checked >= len(CONVERSATIONS)
    for tag, summary in summaries.items():
        assert summary is not None, tag
        assert markers(summary.content) <= {("m", tag)}
        assert ("m", tag) in markers(summary.content)


async def test_two_slack_workspaces_with_the_same_channel_id_stay_apart(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    """The same app installed in two workspaces: channel C1 of T1 and C1 of T2 are strangers."""

    async def say(team: str, text: str, ts: str) -> None:
        event = {"type": "message", "user": "U1", "text": text, "channel": "C1", "ts": ts}
        body = {
            "type": "event_callback",
            "team_id": team,
            "event_id": f"Ev{team}{ts}",
            "event": {**event, "channel_type": "channel"},
        }
        status, _ = await slack.post(json.dumps(body), "application/json")
        assert status == 200
        await slack.settle()

    await slack.command("pin", "T1's pinned secret")  # the fixture's workspace is T1
    await say("T1", "T1 chatter: the vault code is 1234", "1.1")
    await say("T2", f"<@{BOT_USER}> what is the vault code?", "1.2")
    prompt = "\n".join(m["content"] for m in llm.chat_requests[-1]["messages"])
    assert "what is the vault code?" in prompt
    assert "1234" not in prompt and "T1's pinned secret" not in prompt
    await say("T1", f"<@{BOT_USER}> and here?", "1.3")
    prompt = "\n".join(m["content"] for m in llm.chat_requests[-1]["messages"])
    assert "1234" in prompt and "T1's pinned secret" in prompt
    assert "what is the vault code?" not in prompt
