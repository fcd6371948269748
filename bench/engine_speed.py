"""Per-turn cost of storing a message and building its prompt, by history size.

What it shows: how one turn (``Engine.record`` + ``Assembler.build``, as
``Engine.handle_message`` does them, without the model call) costs at histories of 100, 10,000
and 100,000 messages with an 8,000-token budget, i.e. whether the cost stays flat as the
history grows. The targets and the latest figures are in ``bench/RESULTS.md``.

For each size: a fresh SQLite file in a temporary folder, wired by :func:`bot.wiring.open_app`
(the endpoint is a dummy; nothing is sent), pre-filled through the engine's own API
(``Engine.record`` for user messages; the assistant's replies stored as ``handle_message``
stores them, ``reply_to`` the question, so they form whole turns) with a multi-user
conversation in English and Chinese. The newest 1,000 messages are the same at every size, so
prompts differ only where the history's length makes them differ.

With the ``summary`` and ``hybrid`` strategies (hybrid is the default) the pre-filled history is
then folded into the rolling summary as the bot folds it: while the prompt it would build
passes ``memory.summary_threshold`` (``Engine.needs_summary``), one compaction by the bot's own
``Summarizer``, whose model here is a stand-in that answers with a fixed summary of about 700
tokens and a few facts about the people who talk (the summary model is never contacted). That
is the state a conversation of N messages is in when the bot has been answering it: at 100
messages nothing is folded (the prompt is under the threshold); at 10,000 and 100,000 the
summary covers all but the newest turns, and recall still searches the whole history. By
default the history is folded as a compaction folds it, down to ``memory.summary_target``: the
state right after one, with the fewest recent turns of the cycle; ``--fold-to threshold`` stops
just under the threshold, the state just before the next compaction, with the most.
``--raw-history`` skips the folding: every message stays unsummarized, the state of the ``full`` and
``window`` strategies (which never fold), or of a bot whose summary model has been failing all
along; the window is then full and important turns are given places in it.

Profiles belong to people, not to a channel's history: the people who talk have the same
profile at every size, the facts the stand-in's summaries name (as if the bot had noted them in
other channels of the workspace), set before pre-filling; the summaries' own facts then add
nothing, as the summarizer keeps a fact once. So the speaker's profile is in every prompt and
the sizes differ only by their history. ``--no-profiles``: nobody has a profile, and the
stand-in proposes none.

Each measured turn is an addressed user message: ``engine.record`` then
``engine.assembler.build`` timed together, exactly as ``handle_message`` calls them. Afterwards,
untimed, the message is deleted again so that every turn sees exactly N stored messages
(``--grow`` keeps it and stores a reply instead). The sizes are measured round-robin, one turn
each per round, so that a slow spell of a shared machine lands on every size alike.

Run from the repository root::

    .venv/bin/python bench/engine_speed.py
    .venv/bin/python bench/engine_speed.py --sizes 100 100000 --turns 500 --profile
    .venv/bin/python bench/engine_speed.py --fold-to threshold
    .venv/bin/python bench/engine_speed.py --raw-history
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import itertools
import os
import platform
import pstats
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

# Measure the checkout this file is in, not whatever ``bot`` happens to be installed.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import aiosqlite

from bot.config import Config, Strategy, parse_config
from bot.core.engine import Engine
from bot.core.memory.summarizer import Summarizer, split_profiles
from bot.core.memory.tokens import install_encodings
from bot.core.models import (
    Conversation,
    FactSource,
    IncomingMessage,
    Person,
    Role,
    StoredMessage,
)
from bot.core.ports.llm import ChatModels, Completion
from bot.core.prompt.assembler import Speaker
from bot.wiring import open_app

TARGET_MS = 5.0  # the guard: prompt building stays invisible next to the model, without caches
TARGET_RATIO = 1.5
DUMMY_BASE_URL = "http://127.0.0.1:9/v1"  # never contacted: no model call is made
SYSTEM_PROMPT = (
    "You are a helpful assistant in a team chat. Several people talk here; each of their\n"
    "messages starts with the writer's name in brackets. Answer the person who addressed you,\n"
    "concisely. Facts the team pinned and the summary of earlier conversation come first.\n"
)
TAIL = 1000  # the newest messages, identical at every size (far more than a prompt holds)
MEASURED_FIRST_ID = 1_300_000_000_000_000_000  # platform ids of measured messages start here
CHANNEL = Conversation(platform="discord", workspace="guild-4815", channel="engineering")

# -- a realistic conversation -------------------------------------------------------------

USERS: tuple[tuple[str, str, str], ...] = (
    # (author id, display name, language)
    ("u1001", "alice", "en"),
    ("u1002", "bob", "en"),
    ("u1003", "carol", "en"),
    ("u1004", "李明", "zh"),
    ("u1005", "王芳", "zh"),
    ("u1006", "张伟", "mixed"),
    ("u1007", "dmitri", "en"),
    ("u1008", "陈静", "mixed"),
)
TOPICS_EN = (
    "the billing migration",
    "the staging cluster",
    "the login page",
    "the Q3 roadmap",
    "the flaky integration tests",
    "the Postgres upgrade",
    "the onboarding docs",
    "the rate limiter",
    "the mobile release",
    "the search index",
)
TOPICS_ZH = (
    "计费系统迁移",
    "测试环境集群",
    "登录页面",
    "第三季度路线图",
    "不稳定的集成测试",
    "数据库升级",
    "新人文档",
    "限流器",
    "移动端发布",
    "搜索索引",
)
CHATTER_EN = (
    "I pushed the fix for {topic}, CI is green now.",
    "anyone else seeing 502s on {topic} since this morning?",
    "lunch at 12:30?",
    "+1",
    "thanks!",
    "I'll take a look after standup.",
    "can we move the sync about {topic} to Thursday?",
    "the numbers for {topic} look off by about {n}%, checking the dashboard now",
    "PR #{n} is up for review, it's mostly renames plus one real change in {topic}",
    "heads up: I'm rolling back {topic}, the error rate doubled after the deploy",
    "ok that makes sense. let's keep the old behaviour behind a flag for a week",
    "does anyone remember why {topic} retries three times? seems excessive",
)
CHATTER_ZH = (
    "{topic}今天下午能上线吗？",
    "我觉得这个方案可以，但是需要再确认一下{topic}的数据迁移问题。",
    "收到，谢谢！",
    "我这边复现不了，能发一下日志吗？",
    "明天上午十点开会讨论{topic}，大家有空吗？",
    "{topic}的监控告警又响了，我先看看。",
    "好的，我来跟进{topic}，预计周五之前完成。",
    "这个问题和上次{topic}出的问题很像，可能是配置没同步。",
    "已经合并了，第{n}号 PR。",
    "辛苦了 👍",
)
CHATTER_MIXED = (
    "这个 {topic_en} 的 bug 在 production 上还能复现吗？",
    "我刚 deploy 了 hotfix，{topic} 应该好了，please double check",
    "PR #{n} 我 review 过了，LGTM，就是 unit test 少了一点",
    "{topic_en} 的 latency 涨了 {n}ms，是不是 cache 没命中？",
    "ok 我明天 sync 一下 {topic_en} 的 timeline",
)
QUESTIONS_EN = (
    "@bot can you summarize what we decided about {topic}?",
    "@bot what was the root cause of the outage in {topic} last week?",
    "@bot draft a short status update on {topic} for the leadership channel",
    "@bot who said they would own {topic}?",
    "@bot is there a safer way to roll out {topic} than a big-bang deploy?",
)
QUESTIONS_ZH = (
    "@bot 帮我总结一下关于{topic}的讨论。",
    "@bot {topic}上周出了什么问题？根本原因是什么？",
    "@bot 请帮我写一段{topic}的进度汇报。",
    "@bot 谁负责{topic}？",
)
QUESTIONS_MIXED = (
    "@bot {topic_en} 的 rollback plan 是什么？",
    "@bot 帮我 summarize 一下 {topic_en} 的 open issues",
)
REPLY_EN = (
    "Here is what I found in the conversation about {topic}.",
    "The team agreed to ship it behind a feature flag and watch the error rate for a week.",
    "Bob owns the rollout; Alice offered to review the migration scripts.",
    "The root cause was a connection pool that was too small after the config change.",
    "A safer option is a canary: route {n}% of traffic first, then widen it in steps.",
    "Open questions: the data backfill, the dashboard alerts, and who is on call.",
    "I would keep the old path for one release so a rollback stays a config change.",
    "- decision: staged rollout\n- owner: bob\n- next check: Thursday standup",
)
REPLY_ZH = (
    "关于{topic}，大家的结论如下。",
    "团队同意先在功能开关后面上线，观察一周的错误率。",
    "李明负责发布，王芳会帮忙检查迁移脚本。",
    "根本原因是配置修改后连接池太小，高峰期请求排队超时。",
    "更稳妥的做法是灰度发布：先放{n}%的流量，再逐步扩大。",
    "待解决的问题：数据回填、监控告警，以及值班安排。",
    "- 结论：分阶段发布\n- 负责人：李明\n- 下次检查：周四站会",
)
LOG_LINES = (
    "2024-06-0{d} 10:{m:02d}:17 ERROR worker-{n} upstream timed out after 30000 ms",
    "2024-06-0{d} 10:{m:02d}:18 WARN  pool exhausted (size=20, waiting={n})",
    'Traceback (most recent call last):\n  File "app/billing.py", line {n}, in charge',
    "    raise TimeoutError('connection pool exhausted')",
    "2024-06-0{d} 10:{m:02d}:21 INFO  retrying request id=req_{n:06d}",
)


class ChatGenerator:
    """Deterministic multi-user chatter: short lines, questions to the bot, pasted logs."""

    def __init__(self, seed: int, *, first_id: int = 1_200_000_000_000_000_000) -> None:
        self.rng = random.Random(seed)
        self._snowflake = first_id

    def _fill(self, template: str) -> str:
        rng = self.rng
        i = rng.randrange(len(TOPICS_EN))
        return template.format(
            topic=TOPICS_EN[i] if template.isascii() else TOPICS_ZH[i],
            topic_en=TOPICS_EN[i],
            n=rng.randrange(2, 400),
            d=rng.randrange(1, 10),
            m=rng.randrange(60),
        )

    def message_id(self) -> str:
        self._snowflake += self.rng.randrange(1 << 22, 1 << 30)
        return str(self._snowflake)

    def user(self) -> tuple[str, str, str]:
        return self.rng.choice(USERS)

    def chatter(self, language: str) -> str:
        rng = self.rng
        if rng.random() < 0.04:  # a pasted log excerpt
            lines = [self._fill(rng.choice(LOG_LINES)) for _ in range(rng.randrange(3, 12))]
            lead = "看一下这个日志：" if language == "zh" else "seeing this again:"
            return lead + "\n```\n" + "\n".join(lines) + "\n```"
        pool = {"en": CHATTER_EN, "zh": CHATTER_ZH, "mixed": CHATTER_MIXED + CHATTER_ZH}
        text = self._fill(rng.choice(pool[language]))
        if rng.random() < 0.2:
            text += " " + self._fill(rng.choice(pool[language]))
        return text

    def question(self, language: str) -> str:
        pool = {"en": QUESTIONS_EN, "zh": QUESTIONS_ZH, "mixed": QUESTIONS_MIXED}
        return self._fill(self.rng.choice(pool[language]))

    def reply(self, language: str) -> str:
        pool = REPLY_EN if language == "en" else REPLY_ZH
        parts = [self._fill(self.rng.choice(pool)) for _ in range(self.rng.randrange(2, 7))]
        return " ".join(parts)


@dataclass(frozen=True)
class PlannedTurn:
    author_id: str
    author_name: str
    text: str
    reply: str | None
    """The assistant's answer when the message is addressed to the bot."""


def plan_turns(
    gen: ChatGenerator, messages: int, *, question_share: float
) -> Iterator[PlannedTurn]:
    """Whole turns totalling exactly ``messages`` messages."""
    left = messages
    while left > 0:
        author_id, name, language = gen.user()
        if left >= 2 and gen.rng.random() < question_share:
            yield PlannedTurn(author_id, name, gen.question(language), gen.reply(language))
            left -= 2
        else:
            yield PlannedTurn(author_id, name, gen.chatter(language), None)
            left -= 1


async def store_reply(engine: Engine, stored: StoredMessage, text: str, at: float) -> None:
    """What ``Engine.handle_message`` stores for the model's answer."""
    await engine.store.add_message(
        conversation=CHANNEL,
        role=Role.ASSISTANT,
        author_id="assistant",
        author_name="assistant",
        content=text,
        tokens=await engine.count(text),
        message_id=None,
        created_at=at,
        reply_to=stored.id,
    )


async def prefill(engine: Engine, messages: int, *, seed: int) -> None:
    """Fill the history through the engine's own API, oldest first, timestamps in the past.

    The newest ``TAIL`` messages are the same at every size (the older ones differ), so the
    prompts built at different sizes see the same recent turns and only the history's length
    differs.
    """
    older = ChatGenerator(seed + 1)
    recent = ChatGenerator(seed)
    tail = min(TAIL, messages)
    turns = itertools.chain(
        plan_turns(older, messages - tail, question_share=0.3),
        plan_turns(recent, tail, question_share=0.3),
    )
    at = datetime.now(UTC) - timedelta(seconds=45 * messages)
    for turn in turns:
        at += timedelta(seconds=older.rng.randrange(5, 80))
        stored = await engine.record(
            IncomingMessage(
                conversation=CHANNEL,
                author_id=turn.author_id,
                author_name=turn.author_name,
                text=turn.text,
                addressed=turn.reply is not None,
                message_id=older.message_id(),
                sent_at=at,
            )
        )
        if turn.reply is not None:
            await store_reply(engine, stored, turn.reply, (at + timedelta(seconds=3)).timestamp())


STAND_IN_SUMMARY = "\n".join(
    [
        "- The team ships the billing migration behind a feature flag and watches the error "
        "rate for a week; bob owns the rollout, alice reviews the migration scripts.",
        "- 计费系统迁移：分阶段发布，李明负责，王芳检查迁移脚本，周四站会复查。",
        "- The staging cluster outage: a connection pool too small after a config change; "
        "the pool was raised to 50 and an alert added on waiting requests.",
        "- 测试环境集群的告警阈值已调整；不稳定的集成测试由张伟跟进，预计周五之前完成。",
        "- The Q3 roadmap: search index rebuild first, then the mobile release; carol drafts "
        "the status update for the leadership channel every Friday.",
        "- 数据库升级推迟到下个迭代，先做回滚演练；陈静负责新人文档的更新。",
        "- The rate limiter retries three times by design (upstream flakiness); dmitri will "
        "revisit after the Postgres upgrade.",
        "- 登录页面的 bug 在 production 上已修复，hotfix 已部署，需要再观察一天。",
        "- Open tasks: the data backfill, dashboard alerts for the billing service, the on-call "
        "rota for the holidays, and the onboarding checklist.",
        "- 待解决：数据回填、监控告警、值班安排；搜索索引的 latency 问题还在排查。",
    ]
    * 3
)
"""About 700 tokens: what a rolling summary of a long conversation grows to under
``llm.summary_max_tokens`` (800 by default)."""
STAND_IN_PROFILES = "\n".join(
    [
        "Profiles:",
        "PROFILE alice: reviews the billing migration scripts",
        "PROFILE alice: prefers written status updates over meetings",
        "PROFILE bob: owns the rollouts; on call in the first week of each month",
        "PROFILE carol: writes the Friday status update for the leadership channel",
        "PROFILE dmitri: maintains the rate limiter",
        "PROFILE 李明: 负责发布和灰度方案",
        "PROFILE 王芳: 负责检查迁移脚本",
        "PROFILE 张伟: 跟进不稳定的集成测试",
        "PROFILE 陈静: 维护新人文档",
    ]
)
"""What the people's profiles hold at every size, and what the stand-in summary model proposes
for them (the summarizer stores each fact once, in the profile of the person it names)."""


async def give_profiles(engine: Engine) -> None:
    """The facts ``STAND_IN_PROFILES`` names, in the profiles of the people they name, as the
    summarizer stores them (inferred)."""
    _, proposals = split_profiles(STAND_IN_PROFILES)
    ids = {name: author_id for author_id, name, _ in USERS}
    for name, fact in proposals:
        await engine.store.add_profile_fact(
            person=Person.of(CHANNEL, ids[name]),
            text=fact,
            tokens=engine.tokenizer.count(fact),
            source=FactSource.SUMMARY,
        )


class StandInSummaryModel:
    """The summary model while the bench folds the history: always the same summary, and
    (unless ``profiles`` is false) the same few facts about the people who talk."""

    model = "gpt-4o-mini"

    def __init__(self, *, profiles: bool) -> None:
        self._text = f"{STAND_IN_SUMMARY}\n\n{STAND_IN_PROFILES}" if profiles else STAND_IN_SUMMARY

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion:
        return Completion(
            text=self._text,
            model=self.model,
            prompt_tokens=None,
            completion_tokens=None,
            seconds=0.0,
        )


async def fold_history(engine: Engine, *, to: str, profiles: bool = True) -> tuple[int, int]:
    """Compact as the bot does after answering, until the prompt it would build no longer
    needs it; returns the compactions made and the messages the summary covers.

    The bot's own ``Summarizer`` chooses what to fold. With ``to="target"`` it folds as it
    would, so the last compaction leaves the recent turns at ``memory.summary_target`` of the
    budget: the state right after a compaction, the fewest recent turns of the cycle. With
    ``to="threshold"`` each compaction folds only as far as the threshold: the state just
    before the next compaction, the most recent turns of the cycle. Either way, as the
    stand-in writes the same summary whatever it reads, the summary is never rebuilt from the
    raw messages (that would read the whole history every few compactions)."""
    settings = await engine.settings_for(CHANNEL)
    options = replace(settings.summary, rebuild_every=0)
    if to == "threshold":
        options = replace(options, target=settings.summary.threshold)
    folding = replace(settings, summary=options)
    summarizer = Summarizer(
        store=engine.store,
        models=ChatModels(StandInSummaryModel(profiles=profiles)),
        tokenizer=engine.tokenizer,  # as the bot wires its summarizer
    )
    compactions = 0
    while engine.needs_summary((await engine.preview(CHANNEL)).prompt, settings):
        if (
            await summarizer.compact(CHANNEL, settings=folding, budget=engine.budget(settings))
            is None
        ):
            break
        compactions += 1
    summary = await engine.store.latest_summary(conversation_key=CHANNEL.key)
    return compactions, summary.message_count if summary else 0


# -- measuring ----------------------------------------------------------------------------


@dataclass
class Sample:
    total: float
    record: float
    build: float
    prompt_tokens: int
    prompt_messages: int
    recalled: int
    # Not the Prompt itself: keeping hundreds of built prompts alive would make the garbage
    # collector's full passes, and so the measured turns they land on, far slower.


async def one_turn(
    engine: Engine, gen: ChatGenerator, *, grow: bool, profiler: cProfile.Profile | None = None
) -> Sample:
    """One addressed message: ``record`` + ``build`` timed, as in ``handle_message``.

    Afterwards, untimed: by default the message is deleted again (``Engine.delete_message``),
    so every measured turn sees exactly the pre-filled history; with ``grow`` the assistant's
    reply is stored instead and the history keeps growing by two messages a turn.
    ``profiler``, when given, runs during the timed part only.
    """
    author_id, name, language = gen.user()
    message = IncomingMessage(
        conversation=CHANNEL,
        author_id=author_id,
        author_name=name,
        text=gen.question(language) if gen.rng.random() < 0.5 else gen.chatter(language),
        addressed=True,
        message_id=gen.message_id(),
    )
    reply = gen.reply(language)
    if profiler is not None:
        profiler.enable()
    t0 = time.perf_counter()
    stored = await engine.record(message)
    t1 = time.perf_counter()
    settings = await engine.settings_for(CHANNEL)
    prompt = await engine.assembler.build(
        settings=settings,
        conversation_key=CHANNEL.key,
        channel_key=CHANNEL.channel_key,
        through_id=stored.id,
        current_id=stored.id,
        budget=engine.budget(settings),
        query=stored,
        speaker=Speaker(Person.of(CHANNEL, author_id), name),
    )
    t2 = time.perf_counter()
    if profiler is not None:
        profiler.disable()
    if grow:
        await store_reply(engine, stored, reply, time.time())
    else:
        assert message.message_id is not None
        deleted = await engine.delete_message(CHANNEL, message.message_id)
        assert deleted, "the measured message was not found again"
    return Sample(
        total=t2 - t0,
        record=t1 - t0,
        build=t2 - t1,
        prompt_tokens=prompt.tokens,
        prompt_messages=len(prompt.messages),
        recalled=len(prompt.recalled),
    )


@dataclass
class Result:
    size: int
    engine: Engine
    gen: ChatGenerator
    prefill_s: float
    samples: list[Sample] = field(default_factory=list)
    recall_tokens: int = 0
    summarized: int = 0
    """Pre-filled messages folded into the summary."""

    def ms(self, attribute: str = "total") -> list[float]:
        return sorted(getattr(s, attribute) * 1000 for s in self.samples)

    @property
    def median(self) -> float:
        return statistics.median(self.ms())


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values."""
    index = max(0, min(len(sorted_values) - 1, round(q / 100 * len(sorted_values)) - 1))
    return sorted_values[index]


def make_config(db_path: Path, strategy: Strategy, budget: int, recall_tokens: int = 0) -> Config:
    raw = {
        "system_prompt": SYSTEM_PROMPT,
        "llm": {
            "base_url": DUMMY_BASE_URL,
            "chat_model": "gpt-4o-mini",
            "summary_model": "gpt-4o-mini",
        },
        "memory": {
            "strategy": strategy.value,
            "max_context_tokens": budget,
            "recall_tokens": recall_tokens,
        },
        "storage": {"path": str(db_path)},
        "logging": {"level": "WARNING"},
    }
    return parse_config(raw, env={})


def folds(args: argparse.Namespace) -> bool:
    """Whether the pre-filled history is folded into the summary (see the module's doc)."""
    return not args.raw_history and args.strategy in (Strategy.SUMMARY, Strategy.HYBRID)


async def open_size(
    size: int, *, args: argparse.Namespace, folder: Path, stack: AsyncExitStack
) -> list[Result]:
    """A fresh database of ``size`` messages, wired like the bot, for each ``--recall-tokens``
    value (the first is pre-filled, the others get a copy of it); open until ``stack`` ends."""
    results: list[Result] = []
    prefill_s = 0.0
    summarized = 0
    for recall_tokens in args.recall_tokens:
        path = folder / f"history-{size}-{recall_tokens}.sqlite3"
        if results:
            await results[0].engine.store.backup(path)  # type: ignore[attr-defined]
        config = make_config(path, args.strategy, args.budget, recall_tokens)
        app = await stack.enter_async_context(open_app(config))
        if not results:
            if not args.no_profiles:
                await give_profiles(app.engine)
            started = time.perf_counter()
            await prefill(app.engine, size, seed=args.seed)
            prefill_s = time.perf_counter() - started
            print(f"  {size:>7,} messages pre-filled in {prefill_s:.1f} s", flush=True)
            if folds(args):
                started = time.perf_counter()
                compactions, summarized = await fold_history(
                    app.engine, to=args.fold_to, profiles=not args.no_profiles
                )
                print(
                    f"  {'':>7} then {compactions} compactions folded {summarized:,} of them into "
                    f"the summary in {time.perf_counter() - started:.1f} s",
                    flush=True,
                )
        stored = await app.store.count_messages(conversation_key=CHANNEL.key)
        assert stored == size, f"pre-filled {stored} messages, wanted {size}"
        # The measured messages are the same at every size (their ids come after the history's).
        gen = ChatGenerator(args.seed + 2, first_id=MEASURED_FIRST_ID)
        results.append(
            Result(
                size,
                app.engine,
                gen,
                prefill_s,
                recall_tokens=recall_tokens,
                summarized=summarized,
            )
        )
    return results


async def measure(results: Sequence[Result], args: argparse.Namespace) -> None:
    """Each ``--recall-tokens`` value in turn; within one, round-robin over the sizes
    (alternating direction), one turn each per round, so that a slow spell of a shared
    machine lands on every size alike rather than on one. Values are measured one after the
    other, not interleaved: a bot runs one configuration, and interleaved, each value's turns
    would be slowed by the other's (recall's search fills the processor's caches with its index)."""
    for recall_tokens in args.recall_tokens:
        group = [result for result in results if result.recall_tokens == recall_tokens]
        for number in range(args.warmup + args.turns):
            order = group if number % 2 == 0 else list(reversed(group))
            for result in order:
                sample = await one_turn(result.engine, result.gen, grow=args.grow)
                if number >= args.warmup:
                    result.samples.append(sample)


async def profile_size(result: Result, args: argparse.Namespace) -> str:
    """cProfile of a separate batch of turns (profiling overhead never skews the figures)."""
    profiler = cProfile.Profile()
    for _ in range(args.turns):
        await one_turn(result.engine, result.gen, grow=args.grow, profiler=profiler)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats(pstats.SortKey.CUMULATIVE).print_stats(15)
    return (
        f"cProfile of the timed part (record + build) of {args.turns} more turns at "
        f"{result.size:,} messages.\nSQLite itself runs in aiosqlite's worker thread: its time "
        "shows up as the event loop waiting (select/epoll).\n" + out.getvalue().rstrip()
    )


class CpuSteal:
    """Share of CPU time the hypervisor took away (Linux ``/proc/stat``), over an interval."""

    def __init__(self) -> None:
        self._start = self._read()

    @staticmethod
    def _read() -> list[int] | None:
        try:
            fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        except (OSError, IndexError):
            return None
        return [int(x) for x in fields]

    def percent(self) -> str:
        end = self._read()
        if self._start is None or end is None or len(end) < 8:
            return "n/a"
        delta = [e - s for e, s in zip(end, self._start, strict=False)]
        total = sum(delta[:8])
        return f"{100 * delta[7] / total:.1f}%" if total else "n/a"


# -- reporting ----------------------------------------------------------------------------


def machine_facts() -> list[str]:
    return [
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"sqlite {sqlite3.sqlite_version}, aiosqlite {aiosqlite.__version__}",
        f"{platform.system()} {platform.release()} {platform.machine()}, "
        f"CPUs: {os.cpu_count()} (usable: {len(os.sched_getaffinity(0))})"
        if hasattr(os, "sched_getaffinity")
        else f"{platform.system()} {platform.machine()}, CPUs: {os.cpu_count()}",
        f"processor: {cpu_model()}",
    ]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def report(results: Sequence[Result], args: argparse.Namespace) -> bool:
    ok = True
    for recall_tokens in args.recall_tokens:
        print(
            f"\nmemory.recall_tokens: {recall_tokens}{' (recall off)' if not recall_tokens else ''}"
        )
        group = [r for r in results if r.recall_tokens == recall_tokens]
        ok = report_group(group, args) and ok
    return ok


def report_group(results: Sequence[Result], args: argparse.Namespace) -> bool:
    base = results[0].median
    header = (
        f"{'history':>9} | {'median':>7} | {'p90':>7} | {'p99':>7} | {'mean':>7} | "
        f"{'record':>7} | {'build':>7} | {'msgs':>5} | {'tokens/budget':>13} | "
        f"{'vs ' + format(results[0].size, ','):>9} | {'prefill':>8} | {'recalled':>8} | "
        f"{'summarized':>10}"
    )
    print("per turn, ms (record + build); record/build are medians of each part;")
    print("msgs = messages in the built prompt incl. the system message (median); recalled =")
    print("earlier messages found by search per prompt (mean); summarized = pre-filled messages")
    print("folded into the summary")
    print(header)
    print("-" * len(header))
    for r in results:
        total = r.ms()
        tokens = statistics.median(s.prompt_tokens for s in r.samples)
        msgs = statistics.median(s.prompt_messages for s in r.samples)
        recalled = statistics.fmean(s.recalled for s in r.samples)
        print(
            f"{r.size:>9,} | {statistics.median(total):7.3f} | {percentile(total, 90):7.3f} | "
            f"{percentile(total, 99):7.3f} | {statistics.fmean(total):7.3f} | "
            f"{statistics.median(r.ms('record')):7.3f} | {statistics.median(r.ms('build')):7.3f} | "
            f"{msgs:5.0f} | {tokens:6.0f}/{args.budget:<6} | {r.median / base:8.2f}x | "
            f"{r.prefill_s:7.1f}s | {recalled:8.1f} | {r.summarized:>10,}"
        )
    largest = results[-1]
    ratio = max(r.median for r in results) / base
    if len(results) > 1:
        previous = results[-2]
        print(
            f"\n{previous.size:,} -> {largest.size:,} messages: "
            f"{largest.median / previous.median:.2f}x the median"
        )
    fast = largest.median < TARGET_MS
    flat = ratio <= TARGET_RATIO
    print(
        f"\ntarget 1: median per turn at {largest.size:,} messages < {TARGET_MS} ms: "
        f"{largest.median:.3f} ms -> {'PASS' if fast else 'FAIL'}"
    )
    print(
        f"target 2: every size's median <= {TARGET_RATIO}x the median at {results[0].size:,}: "
        f"worst {ratio:.2f}x -> {'PASS' if flat else 'FAIL'}"
    )
    return fast and flat


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100, 10_000, 100_000],
        help="history sizes in messages (default: 100 10000 100000)",
    )
    parser.add_argument(
        "--turns",
        type=int,
        default=1000,
        help="measured turns per size (a few hundred give a median that moves by 5%% or more)",
    )
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured turns first")
    parser.add_argument(
        "--strategy",
        type=Strategy,
        choices=list(Strategy),
        default=Strategy.HYBRID,
        help="memory strategy (default: hybrid)",
    )
    parser.add_argument("--budget", type=int, default=8000, help="memory.max_context_tokens")
    parser.add_argument(
        "--recall-tokens",
        type=int,
        nargs="+",
        default=[0, 1000],
        help="memory.recall_tokens (default: 0 and 1000, recall off and the shipped default); "
        "several values are measured one after the other, each on a copy of the same history",
    )
    parser.add_argument(
        "--db-dir",
        type=Path,
        default=None,
        help="where the temporary database folder goes (default: the system temp dir)",
    )
    parser.add_argument(
        "--grow",
        action="store_true",
        help="keep each measured message and store a reply (history grows 2 messages a turn); "
        "by default each measured message is deleted again, so every turn sees exactly N",
    )
    parser.add_argument(
        "--raw-history",
        action="store_true",
        help="do not fold the pre-filled history into the summary (summary and hybrid fold it "
        "as the bot does by default; full and window never do)",
    )
    parser.add_argument(
        "--fold-to",
        choices=["target", "threshold"],
        default="target",
        help="fold the history as a compaction does, down to memory.summary_target (the state "
        "right after one; default), or only down to memory.summary_threshold (the state just "
        "before the next)",
    )
    parser.add_argument(
        "--no-profiles",
        action="store_true",
        help="nobody has a profile, and the stand-in summary model proposes no profile facts "
        "(by default those who talk have the same one or two facts at every size)",
    )
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also profile a batch of turns at the largest size; print the top 15 cumulative",
    )
    args = parser.parse_args(argv)
    args.sizes = sorted(set(args.sizes))
    if args.sizes[0] < 1 or args.turns < 1 or args.warmup < 0:
        parser.error("sizes and --turns must be positive, --warmup not negative")
    return args


async def main_async(args: argparse.Namespace) -> bool:
    print("bench/engine_speed.py: Engine.record + Assembler.build per turn")
    for fact in machine_facts():
        print("  " + fact)
    print(
        f"  strategy {args.strategy.value}, budget {args.budget}, "
        f"recall_tokens {' and '.join(map(str, args.recall_tokens))} (0: off), "
        f"{args.turns} measured turns after {args.warmup} warm-up per size (sizes interleaved), "
        f"seed {args.seed}, "
        f"history {'grows' if args.grow else 'held at N'}, "
        + (
            f"folded into the summary as the bot folds it (down to memory.summary_{args.fold_to})"
            if folds(args)
            else "never summarized"
        )
    )
    if args.db_dir is not None:
        args.db_dir.mkdir(parents=True, exist_ok=True)
    results: list[Result] = []
    profile = ""
    with tempfile.TemporaryDirectory(prefix="engine-speed-", dir=args.db_dir) as tmp:
        folder = Path(tmp)
        install_encodings(folder / "tiktoken")  # open_app reuses it via TIKTOKEN_CACHE_DIR
        async with AsyncExitStack() as stack:
            for size in args.sizes:
                results.extend(await open_size(size, args=args, folder=folder, stack=stack))
            steal = CpuSteal()
            started = time.perf_counter()
            await measure(results, args)
            print(
                f"  measured in {time.perf_counter() - started:.1f} s "
                f"(CPU steal meanwhile: {steal.percent()})",
                flush=True,
            )
            if args.profile:
                profile = await profile_size(results[-1], args)
    ok = report(results, args)
    if profile:
        print("\n" + profile)
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    ok = asyncio.run(main_async(args))
    print(f"\ntotal run time {time.perf_counter() - started:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
