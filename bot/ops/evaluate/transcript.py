"""``bot eval``'s transcripts: JSON Lines of messages, pins, planted facts and probes
(the format is in :mod:`bot.ops.evaluate`), read into values with the line at fault named."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config.textfile import NotUtf8, read_text


class TranscriptError(Exception):
    """The transcript is unusable; the message names the line."""


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
