"""Calibration against a server whose tokenizer counts scripts at different rates: a small
model's (llama.cpp's SmolLM2 spends about twice tiktoken's tokens on Chinese), through the real
openai SDK and the bot's wiring."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.commands import run_command
from bot.core.memory.calibration import WINDOW
from bot.core.memory.scripts import SCRIPTS
from bot.core.models import CommandCall, Conversation, IncomingMessage
from bot.wiring import open_app
from tests.conftest import ConfigFactory, is_summary_request
from tests.support.fake_llm import FakeLLM, by_script

pytestmark = pytest.mark.stores("sqlite", "postgres")

MODEL = "smol"
LIMIT = 700
GENERAL = Conversation.console("general")
SERVER = by_script(cjk=2.0, rest=1.1)
"""CJK text counts 2x our count, everything else 1.1x."""

ENGLISH = (
    "the deploy window moves to Thursday afternoon after the database migration lands",
    "can someone check why the staging cluster keeps restarting the billing workers",
    "I pushed a fix for the flaky login test, it was a race in the session cache",
    "reminder that the quarterly review slides are due before the Friday standup",
)
CHINESE = (
    "明天下午三点在七楼会议室讨论新版本的发布计划，请大家提前准备好材料",
    "数据库迁移已经完成了，但是账单服务的工作进程还在不断重启，需要有人看一下",
    "我修复了登录测试不稳定的问题，原因是会话缓存里有一个竞争条件",
    "提醒一下，季度总结的幻灯片要在周五的站会之前交给项目经理审核",
)


def said(text: str) -> IncomingMessage:
    return IncomingMessage(GENERAL, "ana", "Ana", text, addressed=True)


def message(texts: tuple[str, ...], i: int) -> str:
    """The i-th message of a phase: one sentence, but every fifth is a paste of four (so
    that the share of each script in the prompt jumps as pastes come and go)."""
    if i % 5 == 4:
        return " ".join(texts) + f" ({i})"
    return f"{texts[i % len(texts)]} ({i})"


def server_count(body: dict[str, Any]) -> int:
    return SERVER(MODEL, body["messages"])


async def test_the_servers_count_stays_within_the_limit_when_the_script_changes(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """English, then Chinese, then English again, in one channel, the prompt always as full as
    the history allows. No prompt goes over, as the server counts it: not the very first (an
    unseen model's Latin is budgeted at about 1.3x, above the server's 1.1x), not the first
    with Chinese in it (an unseen script at about 3x, above its 2x), nor any after."""
    llm.models.append(MODEL)
    llm.prompt_counter[MODEL] = SERVER
    config = make_config(
        llm={"chat_model": MODEL, "summary_model": MODEL},
        memory={"strategy": "full", "max_context_tokens": LIMIT},
    )
    phases = [("english", ENGLISH, 24), ("chinese", CHINESE, 24), ("back", ENGLISH, 16)]
    sent: dict[str, list[int]] = {}
    async with open_app(config) as app:
        for name, texts, turns in phases:
            before = len(llm.chat_requests)
            for i in range(turns):
                await app.engine.handle_message(said(message(texts, i)))
            bodies = llm.chat_requests[before:]
            assert not [body for body in bodies if is_summary_request(body)]
            sent[name] = [server_count(body) for body in bodies]
        fitted = app.engine.calibrator.get(MODEL)
        stats = await run_command(app.engine, CommandCall(GENERAL, "stats", "", "ana", "Ana"))
    assert max(max(counts) for counts in sent.values()) <= LIMIT, sent
    # Not wasteful: once the history is longer than the limit allows, prompts fill it but for
    # the turn that would not fit (60 to 120 server tokens here) and the calibration's margins.
    for name, counts in sent.items():
        last = counts[-8:]
        assert min(last) >= 0.8 * LIMIT and sum(last) / len(last) >= 0.88 * LIMIT, (name, last)
    assert fitted is not None
    rates = dict(zip(SCRIPTS, fitted.rates, strict=True))
    assert 1.05 < rates["latin"] < 1.2 and 1.8 < rates["cjk"] < 2.2, rates
    assert fitted.assumed(SCRIPTS.index("other"))  # no Cyrillic, Arabic... was seen
    # /stats shows each script's rate, and that the budget is not the configured one.
    assert f"fitted from the last {WINDOW} replies: Latin {rates['latin']:.3f}x" in stats.text
    assert f"CJK {rates['cjk']:.3f}x" in stats.text
    assert "Budget calibrated from 700 tokens." in stats.text.splitlines()


async def test_the_fit_per_script_survives_a_restart(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.models.append(MODEL)
    llm.prompt_counter[MODEL] = SERVER
    config = make_config(llm={"chat_model": MODEL, "summary_model": MODEL})
    async with open_app(config) as app:
        for i in range(6):
            await app.engine.handle_message(said(f"{ENGLISH[i % 4]} {CHINESE[i % 4]}"))
        before = app.engine.calibrator.get(MODEL)
    async with open_app(config) as app:
        after = app.engine.calibrator.get(MODEL)
    assert before is not None and after == before
    assert after.samples == 6
