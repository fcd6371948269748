"""Threads behave the same on every platform: one scenario, driven through Slack's and
Discord's real libraries against their local fakes, must leave the same thread in memory and
send the model the same turns.

A thread starts with a copy of the message it hangs from and sees its channel's pins; an edit
of that message reaches the copy; once the bot has answered in a thread, or when the thread
hangs from one of its answers, it follows it and answers its messages without a mention.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bot.config import parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict, is_summary_request
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, StartBot, discord_fake, start_bot
from tests.support.fake_discord import JSON, FakeDiscord, Person, eventually
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

__all__ = ["discord_fake", "start_bot"]  # fixtures

PIN = "Releases ship on Fridays"


class Driver(Protocol):
    """One platform's channel, as the scenario uses it (people by name: Ana, Bo); each step
    returns once the bot has done what it does with it."""

    async def pin(self, text: str) -> None: ...
    async def post(self, author: str, text: str) -> str:
        """A message in the channel; its platform id."""
        ...

    async def ask(self, author: str, text: str) -> str:
        """A question to the bot in the channel; the platform id of its answer."""
        ...

    async def start_thread(self, root: str) -> None: ...
    async def edit(self, message: str, text: str) -> None: ...
    async def reply(self, root: str, author: str, text: str, *, mention: bool) -> None: ...
    async def answers(self, count: int, root: str) -> list[str]:
        """The bot's answers in the thread, once there are ``count``."""
        ...

    async def stored(self, root: str) -> list[tuple[str, str, str]]:
        """The thread's conversation in memory: (role, author, text) per message."""
        ...

    def prompts(self) -> list[list[str]]:
        """The turns of each chat prompt sent to the model (the system message left out)."""
        ...

    def system_prompts(self) -> list[str]: ...


@dataclass(frozen=True)
class Outcome:
    answers: list[str]
    stored: list[tuple[str, str, str]]
    on_answer: list[tuple[str, str, str]]
    """The thread started from the bot's answer, in memory."""
    prompts: list[list[str]]
    systems: list[str]


async def thread_scenario(driver: Driver) -> Outcome:
    """Post in the channel, start a thread from it, pin, ask in the thread, edit the root,
    reply in the thread without a mention; then ask in the channel and reply, without a
    mention, in a thread started from the bot's answer."""
    root = await driver.post("Ana", "the build is red")
    await driver.start_thread(root)
    await driver.pin(PIN)
    await driver.reply(root, "Bo", "why is it red?", mention=True)
    await driver.answers(1, root)
    await driver.edit(root, "the build is green")
    await driver.reply(root, "Bo", "and now?", mention=False)
    answers = await driver.answers(2, root)
    answer = await driver.ask("Ana", "is it shipped?")
    await driver.start_thread(answer)
    await driver.reply(answer, "Bo", "when?", mention=False)
    await driver.answers(1, answer)
    return Outcome(
        answers,
        await driver.stored(root),
        await driver.stored(answer),
        driver.prompts(),
        driver.system_prompts(),
    )


class Prompts:
    """What the model was sent from the moment a platform's run began."""

    def __init__(self, llm: FakeLLM) -> None:
        self._llm = llm
        self._since = len(llm.chat_requests)

    def bodies(self) -> list[dict[str, Any]]:
        new = self._llm.chat_requests[self._since :]
        return [body for body in new if not is_summary_request(body)]

    def turns(self) -> list[list[str]]:
        return [[m["content"] for m in body["messages"][1:]] for body in self.bodies()]

    def systems(self) -> list[str]:
        return [body["messages"][0]["content"] for body in self.bodies()]


async def stored_thread(app: App, key: str) -> list[tuple[str, str, str]]:
    found = await app.store.messages_after_turn(conversation_key=key, after_turn=0, limit=50)
    return [(m.role.value, m.author_name, m.content) for m in found]


SLACK_PEOPLE = {"Ana": "U1", "Bo": "U2"}
DISCORD_PEOPLE = {"Ana": Person(7011, "Ana"), "Bo": BO}
IN_GENERAL = {"channel_id": GENERAL, "guild_id": GUILD}


class SlackDriver:
    def __init__(self, slack: Slack, app: App, prompts: Prompts) -> None:
        self.slack, self.app, self._prompts = slack, app, prompts
        self._authors: dict[str, str] = {}

    async def pin(self, text: str) -> None:
        await self.slack.command("pin", text)

    async def post(self, author: str, text: str) -> str:
        ts = await self.slack.say(SLACK_PEOPLE[author], text)
        self._authors[ts] = SLACK_PEOPLE[author]
        return ts

    async def ask(self, author: str, text: str) -> str:
        await self.slack.say(SLACK_PEOPLE[author], f"<@{BOT_USER}> {text}")
        answer = str(self.slack.fake.messages()[-1]["ts"])
        self._authors[answer] = BOT_USER
        return answer

    async def start_thread(self, root: str) -> None:
        """Nothing to do: on Slack a thread is its root's replies."""

    async def edit(self, message: str, text: str) -> None:
        edited = {"user": self._authors[message], "text": text, "ts": message, "thread_ts": message}
        change = {"type": "message", "subtype": "message_changed", "channel": "C1"}
        assert await self.slack.event({**change, "message": edited, "ts": "3.0"}) == 200
        await self.slack.settle()

    async def reply(self, root: str, author: str, text: str, *, mention: bool) -> None:
        said = f"<@{BOT_USER}> {text}" if mention else text
        user = SLACK_PEOPLE[author]
        await self.slack.say(user, said, thread_ts=root, parent_user_id=self._authors[root])

    async def answers(self, count: int, root: str) -> list[str]:
        shown = [m["text"] for m in self.slack.fake.messages() if m.get("thread_ts") == root]
        assert len(shown) == count
        return shown

    async def stored(self, root: str) -> list[tuple[str, str, str]]:
        return await stored_thread(self.app, f"slack:{TEAM}:C1:{root}")

    def prompts(self) -> list[list[str]]:
        return self._prompts.turns()

    def system_prompts(self) -> list[str]:
        return self._prompts.systems()


class DiscordDriver:
    def __init__(self, fake: FakeDiscord, app: App, prompts: Prompts) -> None:
        self.fake, self.app, self._prompts = fake, app, prompts
        self._messages: dict[str, JSON] = {}

    async def pin(self, text: str) -> None:
        followups = len(self.fake.followups)
        await self.fake.command(DISCORD_PEOPLE["Ana"], "pin", {"text": text}, **IN_GENERAL)
        await self.fake.until(lambda: len(self.fake.followups) > followups)

    async def post(self, author: str, text: str) -> str:
        message = await self.fake.say(DISCORD_PEOPLE[author], text, **IN_GENERAL)
        self._messages[message["id"]] = message
        key = f"discord:{GUILD}:{GENERAL}"
        await eventually(lambda: self._has(key, message["id"], text))
        return str(message["id"])

    async def ask(self, author: str, text: str) -> str:
        sent = len(self.fake.sent)
        await self.fake.say(
            DISCORD_PEOPLE[author], f"<@{BOT.id}> {text}", mentions=(BOT,), **IN_GENERAL
        )
        (answer,) = (await self.fake.sent_count(sent + 1))[sent:]
        self._messages[answer.message["id"]] = {**answer.message, "guild_id": str(GUILD)}
        key, answer_id = f"discord:{GUILD}:{GENERAL}", str(answer.message["id"])
        await eventually(lambda: self._has(key, answer_id, answer.content))  # linked
        return answer_id

    async def start_thread(self, root: str) -> None:
        await self.fake.start_thread(self._messages[root], "the build", owner=DISCORD_PEOPLE["Ana"])

    async def edit(self, message: str, text: str) -> None:
        await self.fake.edit(self._messages[message], text)
        channel, thread = f"discord:{GUILD}:{GENERAL}", f"discord:{GUILD}:{GENERAL}:{message}"

        async def edited() -> bool:
            return await self._has(channel, message, text) and await self._has(
                thread, message, text
            )

        await eventually(edited)

    async def reply(self, root: str, author: str, text: str, *, mention: bool) -> None:
        where: dict[str, Any] = {"channel_id": int(root), "guild_id": GUILD}
        if mention:
            await self.fake.say(
                DISCORD_PEOPLE[author], f"<@{BOT.id}> {text}", mentions=(BOT,), **where
            )
        else:
            await self.fake.say(DISCORD_PEOPLE[author], text, **where)

    async def answers(self, count: int, root: str) -> list[str]:
        await self.fake.until(lambda: len(self._in(root)) >= count)
        return self._in(root)

    def _in(self, root: str) -> list[str]:
        return [sent.content for sent in self.fake.sent if sent.channel_id == int(root)]

    async def _has(self, key: str, message_id: str, text: str) -> bool:
        found = await self.app.store.find_message(conversation_key=key, message_id=message_id)
        return found is not None and found.content == text

    async def stored(self, root: str) -> list[tuple[str, str, str]]:
        return await stored_thread(self.app, f"discord:{GUILD}:{GENERAL}:{root}")

    def prompts(self) -> list[list[str]]:
        return self._prompts.turns()

    def system_prompts(self) -> list[str]:
        return self._prompts.systems()


@asynccontextmanager
async def on_slack(tmp_path: Path, llm: FakeLLM) -> AsyncIterator[SlackDriver]:
    async with FakeSlack(USERS) as fake:
        database = tmp_path / "slack.sqlite3"
        raw = config_dict(llm.url, database, slack=slack_settings(fake))
        async with open_app(parse_config(raw, ENV)) as app, serving(app, fake) as slack:
            yield SlackDriver(slack, app, Prompts(llm))


@asynccontextmanager
async def on_discord(
    start: StartBot, fake: FakeDiscord, llm: FakeLLM
) -> AsyncIterator[DiscordDriver]:
    running: AbstractAsyncContextManager[Any] = start()
    async with running as (app, _):
        yield DiscordDriver(fake, app, Prompts(llm))


EXPECTED_STORED = [
    ("user", "Ana", "the build is green"),
    ("user", "Bo", "why is it red?"),
    ("assistant", "assistant", "echo: [Bo] why is it red?"),
    ("user", "Bo", "and now?"),
    ("assistant", "assistant", "echo: [Bo] and now?"),
]
EXPECTED_ON_ANSWER = [
    ("assistant", "assistant", "echo: [Ana] is it shipped?"),
    ("user", "Bo", "when?"),
    ("assistant", "assistant", "echo: [Bo] when?"),
]
EXPECTED_PROMPTS = [
    ["[Ana] the build is red", "[Bo] why is it red?"],
    [
        "[Ana] the build is green",
        "[Bo] why is it red?",
        "echo: [Bo] why is it red?",
        "[Bo] and now?",
    ],
    ["[Ana] the build is green", "[Ana] is it shipped?"],
    ["echo: [Ana] is it shipped?", "[Bo] when?"],
]


async def test_a_thread_behaves_the_same_on_slack_and_discord(
    tmp_path: Path, llm: FakeLLM, start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    async with on_slack(tmp_path, llm) as slack:
        on_slack_outcome = await thread_scenario(slack)
    async with on_discord(start_bot, discord_fake, llm) as discord:
        on_discord_outcome = await thread_scenario(discord)
    for outcome in (on_slack_outcome, on_discord_outcome):
        assert outcome.answers == ["echo: [Bo] why is it red?", "echo: [Bo] and now?"]
        assert outcome.stored == EXPECTED_STORED
        assert outcome.on_answer == EXPECTED_ON_ANSWER
        assert outcome.prompts == EXPECTED_PROMPTS
        assert all(PIN in system for system in outcome.systems)  # the channel's pins
    assert on_slack_outcome.stored == on_discord_outcome.stored
    assert on_slack_outcome.on_answer == on_discord_outcome.on_answer
    assert on_slack_outcome.prompts == on_discord_outcome.prompts
