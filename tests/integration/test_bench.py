"""The engine benchmark's set-up: a history pre-filled and folded as the bot would leave it.

The figures themselves are the benchmark's to print (``bench/engine_speed.py``), not a test's;
what is tested is that the state it measures is the one it claims to measure.
"""

from __future__ import annotations

import importlib.util
import sys
from contextlib import AsyncExitStack
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from bot.core.models import Person
from bot.core.prompt.assembler import Speaker
from tests.support.paths import ROOT

BENCH = ROOT / "bench" / "engine_speed.py"


@pytest.fixture(scope="module")
def engine_speed() -> ModuleType:
    spec = importlib.util.spec_from_file_location("engine_speed", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("engine_speed", module)
    spec.loader.exec_module(module)
    return module


async def opened(
    engine_speed: ModuleType, size: int, options: list[str], folder: Path, stack: AsyncExitStack
) -> tuple[Any, Any]:
    """The bench's arguments with ``options``, and its history of ``size`` messages, open
    until ``stack`` ends."""
    args = engine_speed.parse_args(["--sizes", str(size), *options])
    return args, (await engine_speed.open_size(size, args=args, folder=folder, stack=stack))[0]


async def test_a_history_past_the_threshold_is_folded_as_the_bot_folds_it(
    engine_speed: ModuleType, tmp_path: Path, tiktoken_cache: Path
) -> None:
    async with AsyncExitStack() as stack:
        _, small = await opened(engine_speed, 100, ["--recall-tokens", "1000"], tmp_path, stack)
        args, large = await opened(engine_speed, 600, ["--recall-tokens", "1000"], tmp_path, stack)
        # 100 messages fit under the threshold: nothing is folded.
        assert small.summarized == 0
        key = engine_speed.CHANNEL.key
        assert await small.engine.store.latest_summary(conversation_key=key) is None
        # 600 do not: the summary covers all but the newest turns, and the prompt the bot would
        # build next needs no further compaction (the steady state of a conversation it answers).
        summary = await large.engine.store.latest_summary(conversation_key=key)
        assert summary is not None
        assert large.summarized == summary.message_count
        assert 0 < summary.message_count < 600
        assert summary.content.startswith(engine_speed.STAND_IN_SUMMARY[:40])
        assert "PROFILE" not in summary.content
        # The speaker has the same profile at both sizes: folding (whose summaries name the
        # same facts) added none, so the prompts differ only by the history.
        alice = Speaker(Person.of(engine_speed.CHANNEL, "u1001"), "alice")
        for result in (small, large):
            preview = await result.engine.preview(engine_speed.CHANNEL, speaker=alice)
            assert [fact.text for fact in preview.prompt.profile] == [
                "reviews the billing migration scripts",
                "prefers written status updates over meetings",
            ]
            facts = await result.engine.store.profile_facts(person=alice.person)
            assert len(facts) == 2
        sample = await engine_speed.one_turn(large.engine, large.gen, grow=False)
        assert sample.prompt_tokens <= args.budget
        # At most: the system message, recall's, the unsummarized messages, the one answered.
        assert sample.prompt_messages <= 2 + (600 - summary.message_count) + 1
        prompt = (await large.engine.preview(engine_speed.CHANNEL)).prompt
        assert prompt.summary is not None and prompt.summary.id == summary.id
        settings = await large.engine.settings_for(engine_speed.CHANNEL)
        assert not large.engine.needs_summary(prompt, settings)


async def test_folding_to_the_threshold_leaves_the_most_turns_a_cycle_holds(
    engine_speed: ModuleType, tmp_path: Path, tiktoken_cache: Path
) -> None:
    covered = {}
    for end in ("target", "threshold"):
        async with AsyncExitStack() as stack:
            folder = tmp_path / end
            folder.mkdir()
            options = ["--recall-tokens", "0", "--fold-to", end]
            args, result = await opened(engine_speed, 600, options, folder, stack)
            covered[end] = result.summarized
            sample = await engine_speed.one_turn(result.engine, result.gen, grow=False)
            # Just under the threshold, and far above what a compaction leaves.
            fill = sample.prompt_tokens / args.budget
            if end == "threshold":
                assert 0.7 < fill <= 0.8 + 0.05  # + the measured message
            else:
                assert fill < 0.7
    assert 0 < covered["threshold"] < covered["target"]


async def test_without_profiles_nobody_has_one_at_any_size(
    engine_speed: ModuleType, tmp_path: Path, tiktoken_cache: Path
) -> None:
    async with AsyncExitStack() as stack:
        options = ["--recall-tokens", "0", "--no-profiles"]
        for size in (100, 600):
            _, result = await opened(engine_speed, size, options, tmp_path, stack)
            for author_id, name, _ in engine_speed.USERS:
                speaker = Speaker(Person.of(engine_speed.CHANNEL, author_id), name)
                preview = await result.engine.preview(engine_speed.CHANNEL, speaker=speaker)
                assert preview.prompt.profile == ()
                assert not await result.engine.store.profile_facts(person=speaker.person)


async def test_raw_history_is_never_summarized(
    engine_speed: ModuleType, tmp_path: Path, tiktoken_cache: Path
) -> None:
    async with AsyncExitStack() as stack:
        options = ["--recall-tokens", "0", "--raw-history"]
        args, result = await opened(engine_speed, 600, options, tmp_path, stack)
        assert result.summarized == 0
        key = engine_speed.CHANNEL.key
        assert await result.engine.store.latest_summary(conversation_key=key) is None
        sample = await engine_speed.one_turn(result.engine, result.gen, grow=False)
        assert sample.prompt_tokens <= args.budget
