"""Bad input: a clear answer, nothing crashes, nothing stored is lost.

Named cases first (a 1 MB message, 10,000 pins, a pin larger than the budget, control and
invisible characters in names and pins), then property-based tests: any text, any name, any
command line, against one running app (real SQLite file, the real SDK, the local test server).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import parse_config
from bot.core.commands import COMMANDS, run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind, Role
from bot.core.ports.llm import clean_text
from bot.wiring import App, open_app
from tests.conftest import config_dict, respond
from tests.e2e.slack.test_run import ROOT
from tests.e2e.test_cli import write_config
from tests.support.fake_llm import FakeLLM

GENERAL = Conversation.console("general")
SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>system",
    "<|im_end|>",
    "<|fim_prefix|>",
    "<|endofprompt|>",
    "[INST]",
    "<s>",
    "</s>",
)
INVISIBLE = ("\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u202e", "\u2067", "\u061c")
T = TypeVar("T")


def said(text: str, who: str = "Ana", addressed: bool = True) -> IncomingMessage:
    return IncomingMessage(GENERAL, "ana", who, text, addressed=addressed)


def command(name: str, argument: str = "", who: str = "Ana", admin: bool = True) -> CommandCall:
    return CommandCall(GENERAL, name, argument, "ana", who, can_manage=admin)


async def user_texts(app: App, where: Conversation = GENERAL) -> list[str]:
    stored = await app.store.messages_between(
        conversation_key=where.key, first_id=0, through_id=10**9
    )
    return [m.content for m in stored if m.role is Role.USER]


async def test_a_1_mb_message_is_kept_explained_and_does_not_block_the_next(
    app: App, llm: FakeLLM
) -> None:
    huge = ("Lorem ipsum dolor sit amet, 数据 🎉 " * 40_000)[:1_000_000]
    reply = await app.engine.handle_message(said(huge))
    assert reply is not None and reply.kind is ReplyKind.ERROR
    assert "It is saved, but too long to send" in reply.text
    assert llm.chat_requests == []
    again = await app.engine.handle_message(said("and a short one"))
    assert again is not None and again.text == "echo: [Ana] and a short one"
    assert await user_texts(app) == [huge, "and a short one"]
    stats = await run_command(app.engine, command("stats"))
    assert "Messages stored: 3" in stats.text


async def test_10000_pins_get_clear_answers_everywhere(app: App, llm: FakeLLM) -> None:
    # More pins than any budget holds (pinned under a bigger budget, or imported).
    for i in range(10_000):
        await app.store.add_pin(
            channel_key=GENERAL.channel_key,
            text=f"fact {i}",
            tokens=3,
            author_id="ana",
            author_name="Ana",
        )
    reply = await app.engine.handle_message(said("hello?"))
    assert reply is not None and reply.kind is ReplyKind.ERROR
    assert "10,000 pinned facts" in reply.text and "/unpin ID" in reply.text
    assert llm.chat_requests == []
    listing = await run_command(app.engine, command("pins"))
    assert listing.text.startswith("10,000 pinned facts")
    assert len(listing.text) < 3200 and "more (#" in listing.text
    assert (
        "Context for console:local:general"
        in (await run_command(app.engine, command("stats"))).text
    )
    refused = await run_command(app.engine, command("pin", "one more"))
    assert refused.kind is ReplyKind.ERROR and "Not pinned" in refused.text
    assert (await run_command(app.engine, command("unpin", "#5"))).text == "Unpinned #5."
    assert len(await app.store.pins(channel_key=GENERAL.channel_key)) == 9_999
    assert await user_texts(app) == ["hello?"]


async def test_a_pin_larger_than_the_budget_is_refused_and_nothing_changes(app: App) -> None:
    await run_command(app.engine, command("pin", "small fact"))
    refused = await run_command(app.engine, command("pin", "enormous " * 20_000))
    assert refused.kind is ReplyKind.ERROR and refused.text.startswith("Not pinned")
    assert [p.text for p in await app.store.pins(channel_key=GENERAL.channel_key)] == ["small fact"]


async def test_a_long_pin_is_listed_cut_short_and_said_so(app: App) -> None:
    long_fact = "word " * 3000  # within the budget's half, but longer than a listing
    assert (await run_command(app.engine, command("pin", long_fact))).kind is ReplyKind.INFO
    await run_command(app.engine, command("pin", "short fact"))
    listing = (await run_command(app.engine, command("pins"))).text.splitlines()
    assert listing[1].startswith("#1 (Ana): word word") and listing[1].endswith("…")
    assert listing[2] == "… and 1 more (#2)."
    assert sum(len(line) for line in listing) < 3200


async def test_control_and_invisible_characters_in_names_and_pins(app: App, llm: FakeLLM) -> None:
    odd_name = "Zoë\x00\ud800\u202e<|im_start|>"
    pinned = await run_command(app.engine, command("pin", "nul\x00 and \udfff pin", who=odd_name))
    assert pinned.kind is ReplyKind.INFO, pinned.text
    for text in ("\u200b", "\u202e", "\ufeff only", "<|endoftext|>" * 50):
        reply = await app.engine.handle_message(said(text, who=odd_name))
        assert reply is not None and reply.kind is ReplyKind.ANSWER
    for blank in ("", " ", "\n\t ", "\u3000\u2003"):
        reply = await app.engine.handle_message(said(blank))
        assert reply is not None and reply.text == "Your message was empty."
    listing = await run_command(app.engine, command("pins"))
    assert "nul and \ufffd pin" in listing.text  # control characters are not kept
    assert await user_texts(app) == ["\u200b", "\u202e", "\ufeff only", "<|endoftext|>" * 50]
    names = {m["content"].split("]")[0] for m in llm.chat_requests[-1]["messages"][1::2]}
    assert names == {"[Zoë\ufffd\u202e<|im_start|>"}


# -- properties ---------------------------------------------------------------------------------


@dataclass
class Running:
    """One app on one event loop for many examples (hypothesis and async fixtures don't mix)."""

    loop: asyncio.AbstractEventLoop
    app: App
    llm: FakeLLM

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(work)


@pytest.fixture(scope="module")
def running() -> Iterator[Running]:
    loop = asyncio.new_event_loop()
    llm = FakeLLM()
    loop.run_until_complete(llm.start())
    llm.responder = respond
    with tempfile.TemporaryDirectory() as folder:
        raw = config_dict(llm.url, Path(folder) / "bot.sqlite3", llm={"max_retries": 0})
        opened = open_app(parse_config(raw, {}))
        app = loop.run_until_complete(opened.__aenter__())
        try:
            yield Running(loop, app, llm)
        finally:
            loop.run_until_complete(opened.__aexit__(None, None, None))
            loop.run_until_complete(llm.aclose())
            loop.close()


PROPERTIES = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# Any code point, lone surrogates included, with the strings that trip tokenizers and renderers.
any_char = st.characters(exclude_categories=())
hostile = st.sampled_from(SPECIAL_TOKENS + INVISIBLE + ("\x00", "\ud800", "\udfff", "\r\n", "/"))
any_text = st.lists(st.one_of(st.text(any_char, max_size=40), hostile), max_size=8).map("".join)
channels = st.integers(min_value=0, max_value=10**9).map(lambda n: Conversation.console(f"p{n}"))


@PROPERTIES
@given(where=channels, text=any_text, name=any_text, addressed=st.booleans())
def test_any_message_is_stored_once_and_answered_clearly(
    running: Running, where: Conversation, text: str, name: str, addressed: bool
) -> None:
    async def check() -> None:
        engine, store = running.app.engine, running.app.store
        before = await store.count_messages(conversation_key=where.key)
        message = IncomingMessage(where, "u1", name, text, addressed=addressed)
        reply = await engine.handle_message(message)
        after = await store.messages_between(
            conversation_key=where.key, first_id=0, through_id=10**9
        )
        if not clean_text(text).strip():  # nothing but control characters is empty too
            assert len(after) == before
            assert (reply is None) if not addressed else (reply and reply.kind is ReplyKind.INFO)
            return
        users = [m for m in after if m.role is Role.USER]
        assert users[-1].content == clean_text(text)
        assert users[-1].author_name == (clean_text(name) or "u1")
        if not addressed:
            assert reply is None and len(after) == before + 1
            return
        assert reply is not None and reply.text.strip()
        if reply.kind is ReplyKind.ANSWER:
            assert len(after) == before + 2 and after[-1].content == reply.text
        else:
            assert len(after) == before + 1

    running.run(check())


command_names = st.one_of(st.sampled_from([spec.name for spec in COMMANDS]), any_text)


@PROPERTIES
@given(name=command_names, argument=any_text, who=any_text, admin=st.booleans())
def test_any_command_line_gets_an_answer_and_loses_nothing(
    running: Running, name: str, argument: str, who: str, admin: bool
) -> None:
    where = Conversation.console("commands")

    async def check() -> None:
        engine, store = running.app.engine, running.app.store
        await engine.handle_message(IncomingMessage(where, "u1", "Ana", "keep me", False))
        before = await store.count_messages(conversation_key=where.key)
        pins_before = await store.pins(channel_key=where.channel_key)
        call = CommandCall(where, name, argument, "u1", who, can_manage=admin)
        reply = await run_command(engine, call)
        assert reply.text.strip()
        known = name.lower() in {spec.name for spec in COMMANDS}
        if not known:
            assert reply.kind is ReplyKind.ERROR and reply.text.startswith("Unknown command")
        if name.lower() != "reset" or reply.kind is ReplyKind.ERROR:
            assert await store.count_messages(conversation_key=where.key) == before
        pins_after = await store.pins(channel_key=where.channel_key)
        if name.lower() not in ("pin", "unpin", "reset") or reply.kind is ReplyKind.ERROR:
            assert pins_after == pins_before

    running.run(check())


def test_the_console_takes_bytes_that_are_not_utf8(tmp_path: Path, llm_thread: FakeLLM) -> None:
    """Piped input is not always UTF-8: bad lines are kept (U+FFFD for the bad bytes); a
    channel or user name that is not UTF-8 is refused with one line instead of a traceback."""
    config = write_config(tmp_path, llm_thread.url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def chat(*args: bytes, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable.encode(), b"-m", b"bot", b"chat", b"--config", bytes(config)]
        return subprocess.run([*command, *args], input=stdin, capture_output=True, env=env)

    lines = b"caf\xe9 \xff\x00ok\n/pin \xc3\x28 pinned\n/pins\n"
    result = chat(b"--channel", b"bytes", b"--user", b"ana", stdin=lines)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode().splitlines()
    assert out[:2] == ["echo: [ana] caf\ufffd \ufffdok", "Pinned #1: \ufffd( pinned"]
    assert out[-1] == "#1 (ana): \ufffd( pinned"
    for option in (b"--channel", b"--user"):
        refused = chat(option, b"ab\xff", stdin=b"hello\n")
        assert refused.returncode == 2
        assert refused.stderr.decode().splitlines()[-1].endswith(": not valid UTF-8 text")
        assert b"Traceback" not in refused.stderr
