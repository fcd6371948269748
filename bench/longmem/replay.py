"""Replaying the benchmark's conversations into the bot as Slack would deliver them.

The bot is the real one, wired by :func:`bot.wiring.open_app` from a config (a fresh SQLite
file) with its Slack platform in HTTP mode (:class:`bot.adapters.slack.platform.SlackPlatform`:
the signature gate, Bolt, the adapter's translation and the core's handler), served on
127.0.0.1 inside this process. This script plays Slack: signed ``event_callback`` requests to
``/slack/events`` and ``/pin`` / ``/remember`` slash commands, and the Web API the bot calls
(``tests/support/fake_slack.py``); the model is :mod:`.model`.

- Each conversation is a channel. Its messages are sent one at a time in their order, each
  acknowledged (stored) before the next; the event's ``ts`` is the message's date, which the
  adapter stores as the message's time. Messages are not addressed to the bot (the bot keeps
  them because ``slack.record`` is ``all``), except those the data marks ``addressed``, which
  mention it; the bot answers those, and the replay waits for the answer and for the
  background work it started (a summary) before the next message, so every run folds the
  same turns.
- Then each question is asked by its asker, mentioning the bot, with ``ts`` its time; once
  answered (and the background work done), the question and the answer are deleted
  (``message_deleted`` events), so every question meets the same history and none is
  recalled for another. Summaries made meanwhile stay: questions asked later may meet a
  summary that covers more.

Conversations are replayed side by side (one task each); a conversation's own order is kept.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp

from bench.longmem.data import ConversationInfo, Dataset, Message, Person, Question
from bench.longmem.model import BenchModel
from bot.adapters.slack.platform import EVENTS_PATH, SlackPlatform
from bot.config import Config, parse_config
from bot.wiring import App, open_app
from tests.support.fake_llm import count_prompt_tokens
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers

SECRET = "longmem-signing-secret"
SYSTEM_PROMPT = (
    "You are a helpful assistant in a group chat. Several people talk here; each of their "
    "messages starts with the writer's name in brackets. Answer the person who addressed you, "
    "concisely. Facts the group pinned, what the person speaking asked you to remember about "
    "them and the summary of earlier conversation come first."
)


@dataclass(frozen=True)
class Asked:
    """A question and the prompt the model received for it."""

    question: Question
    messages: list[dict[str, Any]]


@dataclass
class Replayed:
    """What one configuration's replay produced."""

    asked: list[Asked]
    max_aside_tokens: int
    """The largest prompt sent while the conversations were replayed (answering asides)."""
    summaries: int
    seconds: float


def bot_config(
    folder: Path,
    llm_url: str,
    api_url: str,
    memory: dict[str, Any],
    embedding_model: str | None,
    llm: dict[str, Any] | None = None,
) -> Config:
    """The bot's config for one run: the memory settings given (and any ``llm`` keys),
    everything else fixed."""
    data = {
        "system_prompt": SYSTEM_PROMPT,
        "llm": {
            "base_url": llm_url,
            "chat_model": "gpt-4o-mini",
            "summary_model": "gpt-4o-mini",
            "embedding_model": embedding_model,
            "max_retries": 0,
            **(llm or {}),
        },
        "memory": memory,
        # normal: no fsync per message; what is stored, and so every figure, is the same.
        "storage": {"path": str(folder / "bot.sqlite3"), "synchronous": "normal"},
        "logging": {"level": "WARNING"},
        "catch_up": {"hours": 0},
        "slack": {
            "enabled": True,
            "mode": "http",
            "host": "127.0.0.1",
            "port": 0,
            "api_base_url": api_url,
            "record": "all",
        },
    }
    return parse_config(data, {"SLACK_BOT_TOKEN": "xoxb-longmem", "SLACK_SIGNING_SECRET": SECRET})


def slack_users(dataset: Dataset) -> dict[str, str]:
    """Slack user id → display name, for the fake ``users.info``."""
    return {p.slack_id: p.name for c in dataset.conversations for p in c.people}


def _escaped(text: str) -> str:
    """Text as Slack sends it: ``&``, ``<`` and ``>`` escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackDriver:
    """Sends one run's requests to the bot's Slack endpoint, as Slack would."""

    def __init__(self, app: App, platform: SlackPlatform, fake: FakeSlack) -> None:
        assert platform.listeners is not None and platform.port is not None
        self.app = app
        self.listeners = platform.listeners
        self.fake = fake
        self.url = f"http://127.0.0.1:{platform.port}{EVENTS_PATH}"
        self._http: aiohttp.ClientSession | None = None
        self._ids = itertools.count(1)

    async def __aenter__(self) -> SlackDriver:
        self._http = aiohttp.ClientSession()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._http is not None:
            await self._http.close()

    async def _post(self, body: str, content_type: str) -> None:
        assert self._http is not None
        headers = signed_headers(SECRET, body, content_type=content_type)
        async with self._http.post(self.url, data=body.encode(), headers=headers) as response:
            if response.status != 200:
                raise RuntimeError(f"the bot answered {response.status}: {await response.text()}")

    async def event(self, event: dict[str, Any]) -> None:
        body = {
            "token": "unused",
            "team_id": TEAM,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": f"EvLongmem{next(self._ids)}",
            "event_time": int(time.time()),
            "event": event,
        }
        await self._post(json.dumps(body), "application/json")

    async def say(self, channel: str, user: str, text: str, ts: str, *, mention: bool) -> None:
        text = f"<@{BOT_USER}> {_escaped(text)}" if mention else _escaped(text)
        event = {
            "type": "message",
            "user": user,
            "text": text,
            "channel": channel,
            "channel_type": "channel",
            "ts": ts,
        }
        await self.event(event)

    async def delete(self, channel: str, ts: str) -> None:
        event = {
            "type": "message",
            "subtype": "message_deleted",
            "hidden": True,
            "channel": channel,
            "channel_type": "channel",
            "ts": f"{time.time():.6f}",
            "deleted_ts": ts,
            "previous_message": {"type": "message", "ts": ts},
        }
        await self.event(event)

    async def command(self, channel: str, user: Person, name: str, text: str) -> None:
        """``/name text`` run by ``user`` (Slack sends their handle as ``user_name``)."""
        n = next(self._ids)
        form = {
            "command": f"/{name}",
            "text": _escaped(text),
            "user_id": user.slack_id,
            "user_name": user.id,
            "channel_id": channel,
            "team_id": TEAM,
            "response_url": self.fake.response_url(f"longmem-{n}"),
            "trigger_id": f"longmem.{n}",
        }
        await self._post(urlencode(form), "application/x-www-form-urlencoded")

    async def settle(self) -> None:
        """Wait for every answer, lookup and summary under way."""
        while True:
            await self.listeners.settle()
            await self.app.engine.drain()
            # (the handler's and the background's own sets: nothing public says "all done")
            if not self.listeners.handler._in_flight() and not self.app.engine.background._tasks():
                return

    def answer_ts(self, channel: str) -> str:
        """The ts of the bot's latest answer in ``channel``."""
        for call in reversed(self.fake.calls):
            if call.method == "chat.update" and call.params.get("channel") == channel:
                return str(call.params["ts"])
        raise RuntimeError(f"no answer in {channel}")


def _ts(message_time: float, n: int) -> str:
    """A Slack ts for a message said at ``message_time``, unique in its channel by ``n``."""
    return f"{int(message_time)}.{n % 1_000_000:06d}"


async def replay_conversation(
    driver: SlackDriver, info: ConversationInfo, messages: Sequence[Message]
) -> None:
    spoken: set[str] = set()
    for n, message in enumerate(messages, 1):
        person = info.person(message.speaker)
        user = person.slack_id
        if message.kind in ("pin", "remember"):
            await driver.command(info.channel, person, message.kind, message.text)
            await driver.settle()
            continue
        ts = _ts(message.at.timestamp(), n)
        if message.addressed:
            await driver.settle()  # what it may recall by meaning is embedded by now
        await driver.say(info.channel, user, message.text, ts, mention=message.addressed)
        if message.addressed or user not in spoken:
            # An answer and its summary, or a newcomer's name looked up: done before the next.
            await driver.settle()
            spoken.add(user)


async def ask_questions(
    driver: SlackDriver, info: ConversationInfo, questions: Sequence[Question], model: BenchModel
) -> list[Asked]:
    asked: list[Asked] = []
    for n, question in enumerate(questions, 1):
        user = info.person(question.asker).slack_id
        ts = _ts(question.at.timestamp(), 900_000 + n)
        await driver.say(info.channel, user, question.question, ts, mention=True)
        await driver.settle()
        prompt = next(
            (
                body["messages"]
                for body in reversed(model.prompts)
                if str(body["messages"][-1].get("content", "")).endswith(question.question)
            ),
            None,
        )
        if prompt is None:
            raise RuntimeError(f"{question.id}: the model never received the question")
        asked.append(Asked(question, prompt))
        await driver.delete(info.channel, ts)
        await driver.delete(info.channel, driver.answer_ts(info.channel))
        await driver.settle()
    return asked


async def run(
    dataset: Dataset,
    *,
    memory: dict[str, Any],
    model: BenchModel,
    folder: Path,
    embedding_model: str | None = None,
    llm: dict[str, Any] | None = None,
) -> Replayed:
    """Replay the dataset into a fresh bot with these memory settings, then ask its questions."""
    started = time.perf_counter()
    model.prompts.clear()
    summaries_before = model.summaries
    fake = FakeSlack(slack_users(dataset))
    await fake.start()
    try:
        config = bot_config(folder, model.url, fake.api_url, memory, embedding_model, llm)
        async with open_app(config) as app:
            platform = SlackPlatform(engine=app.engine, settings=app.config.slack)
            await platform.start()
            try:
                async with SlackDriver(app, platform, fake) as driver:
                    by_conversation = {
                        info.id: [m for m in dataset.messages if m.conversation == info.id]
                        for info in dataset.conversations
                    }
                    await asyncio.gather(
                        *(
                            replay_conversation(driver, info, by_conversation[info.id])
                            for info in dataset.conversations
                        )
                    )
                    max_aside = max(
                        (model_tokens(body["messages"]) for body in model.prompts), default=0
                    )
                    results = await asyncio.gather(
                        *(
                            ask_questions(
                                driver,
                                info,
                                [q for q in dataset.questions if q.conversation == info.id],
                                model,
                            )
                            for info in dataset.conversations
                        )
                    )
            finally:
                await platform.stop()
    finally:
        await fake.aclose()
    order = {q.id: n for n, q in enumerate(dataset.questions)}
    asked = sorted((a for group in results for a in group), key=lambda a: order[a.question.id])
    return Replayed(
        asked=asked,
        max_aside_tokens=max_aside,
        summaries=model.summaries - summaries_before,
        seconds=time.perf_counter() - started,
    )


def model_tokens(messages: list[dict[str, Any]]) -> int:
    """The prompt's tokens as the model server counts them (its ``usage.prompt_tokens``)."""
    return count_prompt_tokens("gpt-4o-mini", messages)
