"""``bot eval``: a forgetting probe. Replays a conversation with planted facts through each
memory strategy and reports which facts are still in the prompt, and whether the model can
still answer questions about them.

A transcript is JSON Lines (docs/evaluation.md); each line is one object:

- ``{"user": "ana", "text": "...", "addressed": false}``: a message; the bot answers it when
  ``addressed`` (default false);
- ``{"pin": "...", "user": "ana"}``: someone pins a fact (``/pin``);
- ``{"fact": "f1", "user": "ana", "text": "...", "key": "...", "answer": "...",
  "pinned": false, "addressed": false}``: a planted fact, said as a message (and pinned too
  when ``pinned``). It counts as *present* when ``key`` (default: ``answer``), which must occur
  in ``text``, appears in the prompt: in a pin, a recent turn, the summary, or the earlier
  messages recall found;
- ``{"probe": "f1", "question": "...", "user": "ana"}``: a question about a fact, asked after
  the whole conversation was replayed; it is answered correctly when ``answer`` occurs in the
  model's reply (case-insensitive).

Each strategy replays into a fresh database in a temporary folder (never the configured one),
with the configured chat and summary endpoints. Background summaries are waited for after
every message (:meth:`Engine.drain`), so runs are repeatable and the summary path is used.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.config import Config, Strategy
from bot.core.commands import run_command
from bot.core.engine import Engine
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from bot.core.ports.llm import Completion, LLMError, StreamEnd
from bot.core.prompt.assembler import Prompt, PromptTooLarge
from bot.core.wording import counted
from bot.textfile import NotUtf8, read_text
from bot.wiring import open_app

CHANNEL = Conversation(platform="eval", workspace="local", channel="transcript")
_START = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
_STEP = timedelta(seconds=45)


class TranscriptError(Exception):
    """The transcript is unusable; the message names the line."""


class ModelFailed(Exception):
    """The chat model failed during a replay: the figures would mean nothing."""


@dataclass(frozen=True)
class Say:
    user: str
    text: str
    addressed: bool


@dataclass(frozen=True)
class PinLine:
    user: str
    text: str


@dataclass(frozen=True)
class Fact:
    id: str
    user: str
    text: str
    key: str
    answer: str
    pinned: bool
    addressed: bool


@dataclass(frozen=True)
class Probe:
    fact: str
    user: str
    question: str


Step = Say | PinLine | Fact


@dataclass(frozen=True)
class Transcript:
    steps: list[Step]
    facts: dict[str, Fact]
    probes: list[Probe]
    lines: list[int] = field(default_factory=list)
    """The line number of each step in the file."""

    @property
    def messages(self) -> int:
        return sum(1 for step in self.steps if not isinstance(step, PinLine))


def _str(obj: dict[str, Any], name: str, where: str, default: str | None = None) -> str:
    value = obj.get(name, default)
    if not isinstance(value, str) or not value.strip():
        raise TranscriptError(f"{where}: '{name}' must be a non-empty string")
    return value


def _bool(obj: dict[str, Any], name: str, where: str) -> bool:
    value = obj.get(name, False)
    if not isinstance(value, bool):
        raise TranscriptError(f"{where}: '{name}' must be true or false")
    return value


_KEYS = {
    "text": {"user", "text", "addressed"},
    "pin": {"pin", "user"},
    "fact": {"fact", "user", "text", "key", "answer", "pinned", "addressed"},
    "probe": {"probe", "user", "question"},
}


def parse_transcript(text: str, *, name: str = "transcript") -> Transcript:
    steps: list[Step] = []
    facts: dict[str, Fact] = {}
    probes: list[Probe] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{name}:{number}"
        try:
            obj = json.loads(line)
        except ValueError:
            raise TranscriptError(f"{where}: not valid JSON") from None
        if not isinstance(obj, dict):
            raise TranscriptError(f"{where}: each line must be a JSON object")
        kind = next((k for k in ("fact", "probe", "pin", "text") if k in obj), None)
        if kind != "probe":
            lines.append(number)
        if kind is None:
            raise TranscriptError(f"{where}: a line needs 'text', 'pin', 'fact' or 'probe'")
        unknown = sorted(set(obj) - _KEYS[kind])
        if unknown:
            keys = "unknown key" if len(unknown) == 1 else "unknown keys"
            raise TranscriptError(f"{where}: {keys} for a {kind} line: {unknown}")
        if kind == "text":
            steps.append(
                Say(
                    _str(obj, "user", where),
                    _str(obj, "text", where),
                    _bool(obj, "addressed", where),
                )
            )
        elif kind == "pin":
            steps.append(PinLine(_str(obj, "user", where, "eval"), _str(obj, "pin", where)))
        elif kind == "fact":
            fact_id = _str(obj, "fact", where)
            if fact_id in facts:
                raise TranscriptError(f"{where}: fact {fact_id!r} is planted twice")
            answer = _str(obj, "answer", where)
            key = _str(obj, "key", where, answer)
            said = _str(obj, "text", where)
            if key not in said:
                raise TranscriptError(f"{where}: the key {key!r} does not occur in the text")
            fact = Fact(
                id=fact_id,
                user=_str(obj, "user", where),
                text=said,
                key=key,
                answer=answer,
                pinned=_bool(obj, "pinned", where),
                addressed=_bool(obj, "addressed", where),
            )
            facts[fact_id] = fact
            steps.append(fact)
        else:
            fact_id = _str(obj, "probe", where)
            if fact_id not in facts:
                raise TranscriptError(f"{where}: probe of unknown fact {fact_id!r}")
            probes.append(
                Probe(fact_id, _str(obj, "user", where, "eval"), _str(obj, "question", where))
            )
    if not facts:
        raise TranscriptError(f"{name}: no facts planted")
    return Transcript(steps=steps, facts=facts, probes=probes, lines=lines)


def load_transcript(path: Path) -> Transcript:
    try:
        text = read_text(path)
    except OSError as exc:
        raise TranscriptError(f"{path}: {exc.strerror or exc}") from None
    except NotUtf8 as exc:
        raise TranscriptError(str(exc)) from None
    return parse_transcript(text, name=str(path))


# -- replaying ------------------------------------------------------------------------------


class _Recording:
    """The chat model, noting the largest prompt the endpoint reported."""

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


@dataclass
class FactResult:
    id: str
    pinned: bool
    where: str | None
    """``pin``, ``turn``, ``summary`` or ``recall``: where the key was found in the final
    prompt."""
    answered: bool | None = None
    """Whether an answer to a probe of the fact contained the answer (None: not probed)."""
    asked_where: str | None = None
    """Where the key was in the prompt built to answer a probe of the fact (None: nowhere,
    or not probed). Recall searches with the message being answered, so this is where recall
    shows."""


@dataclass
class StrategyResult:
    strategy: str
    budget: int
    recall_tokens: int
    prompt_tokens: int
    max_reported_tokens: int
    summaries: int
    facts: list[FactResult] = field(default_factory=list)
    answers: list[tuple[str, bool]] = field(default_factory=list)
    """(fact id, answered correctly) per probe, in order."""
    errors: list[str] = field(default_factory=list)

    @property
    def present(self) -> int:
        return sum(1 for f in self.facts if f.where is not None)

    def present_where(self, *, pinned: bool) -> int:
        return sum(1 for f in self.facts if f.where is not None and f.pinned is pinned)

    @property
    def present_when_asked(self) -> int:
        return sum(1 for f in self.facts if f.asked_where is not None)

    @property
    def probed(self) -> int:
        return sum(1 for f in self.facts if f.answered is not None)

    @property
    def probes(self) -> int:
        return len(self.answers)

    @property
    def answered(self) -> int:
        return sum(1 for _, correct in self.answers if correct)

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "recall_tokens": self.recall_tokens,
            "prompt_tokens": self.prompt_tokens,
            "max_reported_prompt_tokens": self.max_reported_tokens,
            "summaries": self.summaries,
            "facts_present": self.present,
            "pinned_present": self.present_where(pinned=True),
            "unpinned_present": self.present_where(pinned=False),
            "probes": self.probes,
            "answered": self.answered,
            "present_when_asked": self.present_when_asked,
            "facts": [
                {
                    "id": f.id,
                    "pinned": f.pinned,
                    "where": f.where,
                    "answered": f.answered,
                    "asked_where": f.asked_where,
                }
                for f in self.facts
            ],
            "errors": self.errors,
        }


def locate(prompt: Prompt, key: str) -> str | None:
    if any(key in pin.text for pin in prompt.pins):
        return "pin"
    if any(key in row.content for row in prompt.window):
        return "turn"
    if prompt.summary is not None and key in prompt.summary.content:
        return "summary"
    if any(key in row.content for row in prompt.recalled):
        return "recall"
    return None


async def _replay(
    engine: Engine,
    recording: _Recording,
    transcript: Transcript,
    errors: list[str],
    advance: Callable[[], None],
) -> None:
    at = _START
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
    so every probe sees the same history."""
    stored = await engine.record(
        IncomingMessage(
            conversation=CHANNEL,
            author_id=probe.user,
            author_name=probe.user,
            text=probe.question,
            addressed=True,
            message_id=f"probe{number}",
        )
    )
    try:
        prompt = await engine.assembler.build(
            conversation_key=CHANNEL.key,
            channel_key=CHANNEL.channel_key,
            through_id=stored.id,
            current_id=stored.id,
            budget=engine.budget(),
        )
        completion = await engine.chat.complete(
            prompt.messages, max_tokens=engine.config.llm.max_reply_tokens
        )
    finally:
        await engine.delete_message(CHANNEL, f"probe{number}")
    return fact.answer.casefold() in completion.text.casefold(), locate(prompt, fact.key)


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
    storage = config.storage.model_copy(update={"path": str(folder / f"{strategy}.sqlite3")})
    run_config = config.model_copy(update={"memory": memory, "storage": storage})
    async with open_app(run_config) as app:
        engine = app.engine
        recording = _Recording(engine.chat)
        engine.chat = recording
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


def format_report(
    transcript: Transcript, results: Sequence[StrategyResult], *, model: str, name: str
) -> str:
    facts = list(transcript.facts.values())
    pinned = sum(1 for f in facts if f.pinned)
    lines = [
        f"{name}: {counted(transcript.messages, 'message')}, "
        f"{counted(len(facts), 'planted fact')} ({pinned} pinned, {len(facts) - pinned} not), "
        f"{counted(len(transcript.probes), 'probe')}; "
        f"model {model}",
        "",
        f"{'strategy':<8}  {'prompt/budget':>13}  {'max sent':>8}  {'summaries':>9}  "
        f"{'facts in prompt':>15}  {'pinned':>6}  {'unpinned':>8}  {'in summary':>10}  "
        f"{'answered':>8}  {'recall':>6}  {'when asked':>10}  {'via recall':>10}",
    ]
    for r in results:
        in_summary = sum(1 for f in r.facts if f.where == "summary")
        lines.append(
            f"{r.strategy:<8}  {f'{r.prompt_tokens}/{r.budget}':>13}  "
            f"{r.max_reported_tokens:>8}  {r.summaries:>9}  "
            f"{f'{r.present}/{len(facts)}':>15}  "
            f"{f'{r.present_where(pinned=True)}/{pinned}':>6}  "
            f"{f'{r.present_where(pinned=False)}/{len(facts) - pinned}':>8}  "
            f"{in_summary:>10}  {f'{r.answered}/{r.probes}':>8}  {r.recall_tokens:>6}  "
            f"{f'{r.present_when_asked}/{r.probed}':>10}  "
            f"{sum(1 for f in r.facts if f.asked_where == 'recall'):>10}"
        )
    for r in results:
        missing = [f.id for f in r.facts if f.where is None]
        if missing:
            lines.append(f"{r.strategy}: not in the prompt: {', '.join(missing)}")
        for error in r.errors:
            lines.append(f"{r.strategy}: {error}")
    return "\n".join(lines)
