"""``bot eval``'s replays: each strategy replays the transcript into a fresh database, then
asks its probes."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncGenerator, Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.config import Config, Strategy
from bot.core.commands import run_command
from bot.core.engine import Engine
from bot.core.models import (
    CommandCall,
    Conversation,
    IncomingMessage,
    ReplyKind,
    prompt_speakers,
    strip_speaker_tags,
)
from bot.core.ports.llm import ChatModels, Completion, Failure, LLMError, StreamEnd
from bot.core.prompt.assembler import PromptTooLarge
from bot.core.prompt.budget import build_within
from bot.ops.evaluate.report import FactResult, StrategyResult, locate
from bot.ops.evaluate.transcript import Fact, PinLine, Probe, Transcript
from bot.wiring import open_app

CHANNEL = Conversation(platform="eval", workspace="local", channel="transcript")
_START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
_STEP = timedelta(seconds=45)
_ANSWER_AFTER = timedelta(seconds=5)


class ModelFailed(Exception):
    """The chat model failed during a replay: the figures would mean nothing."""


class _Recording:
    """The chat model, noting the largest prompt the endpoint reported, and the failure of
    its last call (None once a later call succeeded: the engine retried past it)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.max_reported = 0
        self.calls = 0
        self.failure: LLMError | None = None

    @property
    def model(self) -> str:
        return str(self._inner.model)

    async def complete(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> Completion:
        try:
            completion: Completion = await self._inner.complete(
                messages, max_tokens=max_tokens, deadline=deadline
            )
        except LLMError as exc:
            self.failure = exc
            raise
        self.failure = None
        self.calls += 1
        self.max_reported = max(self.max_reported, completion.prompt_tokens or 0)
        return completion

    def stream(
        self,
        messages: Sequence[dict[str, str]],
        *,
        max_tokens: int,
        deadline: float | None = None,
    ) -> AsyncGenerator[str | StreamEnd, None]:
        """Unrecorded: the evaluation asks for whole completions."""
        inner: AsyncGenerator[str | StreamEnd, None] = self._inner.stream(
            messages, max_tokens=max_tokens, deadline=deadline
        )
        return inner


async def _replay(
    engine: Engine,
    recording: _Recording,
    transcript: Transcript,
    errors: list[str],
    advance: Callable[[], None],
) -> None:
    at = _START
    # The bot's answers are dated just after the line they answer, not at today's date.
    engine.clock = lambda: (at + _ANSWER_AFTER).timestamp()
    for number, step in enumerate(transcript.steps):
        at += _STEP
        if isinstance(step, PinLine):
            await _pin(engine, step.user, step.text, errors)
            advance()
            continue
        reply = await engine.handle_message(
            IncomingMessage(
                conversation=CHANNEL,
                author_id=step.user,
                author_name=step.user,
                text=step.text,
                addressed=step.addressed,
                message_id=f"m{number}",
                sent_at=at,
            )
        )
        if recording.failure is not None:
            raise ModelFailed(
                f"the chat model failed on line {transcript.lines[number]} of the transcript: "
                f"{recording.failure}"
            )
        if reply is not None and reply.kind is ReplyKind.ERROR:
            errors.append(f"line {transcript.lines[number]}: {reply.text}")
        if isinstance(step, Fact) and step.pinned:
            await _pin(engine, step.user, step.text, errors)
        await engine.drain()
        advance()


async def _pin(engine: Engine, user: str, text: str, errors: list[str]) -> None:
    call = CommandCall(
        conversation=CHANNEL, name="pin", argument=text, user_id=user, user_name=user
    )
    reply = await run_command(engine, call)
    if reply.kind is ReplyKind.ERROR:
        errors.append(f"pin {text[:40]!r}: {reply.text}")


async def _ask(engine: Engine, probe: Probe, fact: Fact, number: int) -> tuple[bool, str | None]:
    """Ask one probe against the replayed conversation; the question is removed afterwards,
    so every probe sees the same history. It is asked just after the last line (the engine's
    clock, :func:`_replay`'s), not today: the replayed day is the probe's."""
    stored = await engine.record(
        IncomingMessage(
            conversation=CHANNEL,
            author_id=probe.user,
            author_name=probe.user,
            text=probe.question,
            addressed=True,
            message_id=f"probe{number}",
            sent_at=datetime.fromtimestamp(engine.clock(), UTC),
        )
    )
    settings = await engine.settings_for(CHANNEL)
    limit = settings.max_context_tokens
    try:
        for attempt in range(2):  # as the engine answers: once more after an overflow
            prompt = await build_within(
                lambda budget: engine.assembler.build(
                    settings=settings,
                    conversation_key=CHANNEL.key,
                    channel_key=CHANNEL.channel_key,
                    through_id=stored.id,
                    current_id=stored.id,
                    budget=budget,
                ),
                limit=limit,
                gauge=engine.gauge(settings.chat_model),
            )
            try:
                completion = await engine.asker.models.get(settings.chat_model).complete(
                    prompt.messages, max_tokens=settings.max_reply_tokens
                )
                break
            except LLMError as exc:
                if exc.failure is not Failure.CONTEXT_LENGTH or attempt:
                    raise
                limit = await engine.asker.limit_after_overflow(settings, prompt, exc, limit)
    finally:
        await engine.delete_message(CHANNEL, f"probe{number}")
    # A speaker tag the model copied ("[王芳] …") names someone; it does not answer.
    speakers = {probe.user, *prompt_speakers(prompt.messages)}
    answer = strip_speaker_tags(completion.text, speakers)
    return fact.answer.casefold() in answer.casefold(), locate(prompt, fact.key)


async def evaluate_strategy(
    config: Config,
    transcript: Transcript,
    strategy: Strategy,
    folder: Path,
    advance: Callable[[], None] = lambda: None,
) -> StrategyResult:
    """Replay the transcript and ask its probes with one strategy; ``advance`` is called
    after each line replayed and each probe asked."""
    memory = config.memory.model_copy(update={"strategy": strategy})
    storage = config.storage.model_copy(
        update={"path": str(folder / f"{strategy}.sqlite3"), "url": None, "database_url": None}
    )
    run_config = config.model_copy(update={"memory": memory, "storage": storage})
    async with open_app(run_config) as app:
        engine = app.engine
        recording = _Recording(engine.asker.models.default)
        engine.asker.models = ChatModels(recording)
        errors: list[str] = []
        await _replay(engine, recording, transcript, errors, advance)
        preview = await engine.preview(CHANNEL)
        prompt = preview.prompt
        result = StrategyResult(
            strategy=strategy.value,
            budget=prompt.budget,
            recall_tokens=run_config.memory.recall_tokens,
            prompt_tokens=prompt.tokens,
            max_reported_tokens=0,
            summaries=prompt.summary.compactions if prompt.summary else 0,
            errors=errors,
        )
        for fact in transcript.facts.values():
            result.facts.append(FactResult(fact.id, fact.pinned, locate(prompt, fact.key)))
        for number, probe in enumerate(transcript.probes):
            fact = transcript.facts[probe.fact]
            where: str | None = None
            try:
                correct, where = await _ask(engine, probe, fact, number)
            except LLMError as exc:
                raise ModelFailed(f"the chat model failed on probe {probe.fact!r}: {exc}") from None
            except PromptTooLarge as exc:
                errors.append(f"probe {probe.fact}: {exc}")
                correct = False
            result.answers.append((probe.fact, correct))
            advance()
            for item in result.facts:
                if item.id == fact.id:
                    item.answered = bool(item.answered) or correct
                    item.asked_where = item.asked_where or where
        result.max_reported_tokens = recording.max_reported
        return result


async def evaluate(
    config: Config,
    transcript: Transcript,
    strategies: Sequence[Strategy],
    advance: Callable[[], None] = lambda: None,
) -> list[StrategyResult]:
    with tempfile.TemporaryDirectory(prefix="bot-eval-") as folder:
        return [
            await evaluate_strategy(config, transcript, strategy, Path(folder), advance)
            for strategy in strategies
        ]
