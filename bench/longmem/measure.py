"""Where each question's evidence is in the prompt the model received, and the figures.

The prompt is split into the layers the bot lays it out in (``bot/core/prompt/layout.py``,
``assembler.py``): the first system message is the system prompt, then the pinned facts, the
speaker's profile and the summary, each opening with its heading on a line of its own (text
people wrote can never start such a line: its further lines are indented); a system message
opening with recall's heading is **recall**; the user and assistant messages before the last
are the **recent** turns; the last is the question itself and is not searched.

An evidence message is **present** when its text (NFKC, case-folded, white space collapsed)
is in a layer's text, found in prompt order (system, pins, profile, summary, recall, recent:
the first layer holding it counts). Nothing partial counts as present. What is reported
apart:

- **gist only**: not present, but a line of the summary holds the message by the bot's own
  test (:func:`bot.core.memory.importance.covered`: all its numbers and dates, or half its
  distinctive words): a summary's fact line, or a "Kept verbatim:" line shortened to its
  numbers and dates;
- **dated** (``when`` questions): present on a line that also holds the message's date
  (recall's lines and the summary's kept lines carry one), or, in the recent turns, under a
  day line of the message's date (turns that span days show one before each day's first);
- **stale only** (``changed`` questions): an earlier value's message is present and the
  current one is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.longmem.data import CATEGORIES, Dataset, Message, Question, normalized
from bot.core.memory.importance import covered
from bot.core.memory.recall import RECALL_HEADING

# The profile's headings are the layout's own (private): imported, so that the split follows them.
from bot.core.prompt.layout import (
    _INFERRED_HEADING,
    _OWN_HEADING,
    PINS_HEADING,
    SUMMARY_HEADING,
)
from tests.support.fake_llm import count_prompt_tokens, encoding_for

LAYERS = ("system", "pins", "profile", "summary", "recall", "recent")
_PROFILE = re.compile(
    "|".join(
        "^" + re.escape(h).replace(re.escape("{name}"), ".*") + "$"
        for h in (_OWN_HEADING, _INFERRED_HEADING)
    )
)


def layers(messages: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The prompt's text by layer (the question itself left out)."""
    found = dict.fromkeys(LAYERS, "")
    head = str(messages[0]["content"]) if messages else ""
    current = "system"
    parts: dict[str, list[str]] = {layer: [] for layer in LAYERS}
    for line in head.split("\n"):
        if line == PINS_HEADING:
            current = "pins"
        elif line == SUMMARY_HEADING:
            current = "summary"
        elif _PROFILE.match(line):
            current = "profile"
        parts[current].append(line)
    for message in messages[1:-1]:
        content = str(message.get("content") or "")
        if message.get("role") == "system" and content.startswith(RECALL_HEADING):
            parts["recall"].append(content)
        elif message.get("role") in ("user", "assistant"):
            parts["recent"].append(content)
    for layer in LAYERS:
        found[layer] = "\n".join(parts[layer])
    return found


def layer_tokens(messages: Sequence[dict[str, Any]]) -> dict[str, int]:
    """About what each layer takes (its text's tokens; the chat format's overhead aside)."""
    encoding = encoding_for("gpt-4o-mini")
    return {
        layer: len(encoding.encode_ordinary(text)) if text else 0
        for layer, text in layers(messages).items()
    }


@dataclass(frozen=True)
class Where:
    """Where one evidence message was found."""

    message_id: str
    layer: str | None
    """None: not present."""
    gist: bool = False
    dated: bool = False


@dataclass(frozen=True)
class Outcome:
    """One question's prompt, measured."""

    question: Question
    language: str
    found: tuple[Where, ...]
    stale_only: bool
    tokens: int
    tokens_by_layer: dict[str, int]

    @property
    def complete(self) -> bool:
        return all(w.layer is not None for w in self.found)


def _lines(text: str) -> list[str]:
    return [normalized(line) for line in text.split("\n") if line.strip()]


_DAY_LINE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _dated(wanted: str, date: str, lines: list[str], recent: bool) -> bool:
    """Whether a line holding ``wanted`` holds ``date`` too, or (in the recent turns) comes
    under a day line of ``date``."""
    day = None
    for line in lines:
        if recent and _DAY_LINE.fullmatch(line):
            day = line
        elif wanted in line and (date in line or day == date):
            return True
    return False


def locate(message: Message, prompt_layers: dict[str, str]) -> Where:
    wanted = normalized(message.text)
    date = message.ts[:10]
    for layer in LAYERS:
        text = prompt_layers[layer]
        if text and wanted in normalized(text):
            dated = _dated(wanted, date, _lines(text), recent=layer == "recent")
            return Where(message.id, layer, dated=dated)
    summary_lines = [line for line in prompt_layers["summary"].split("\n") if line.strip()]
    gist = any(covered(message.text, line) for line in summary_lines[1:])
    return Where(message.id, None, gist=gist)


def measure(
    question: Question,
    messages: Sequence[dict[str, Any]],
    by_id: dict[str, Message],
    language: str,
) -> Outcome:
    prompt_layers = layers(messages)
    found = tuple(locate(by_id[m], prompt_layers) for m in question.evidence)
    stale = any(locate(by_id[m], prompt_layers).layer for m in question.superseded)
    return Outcome(
        question=question,
        language=language,
        found=found,
        stale_only=stale and not all(w.layer for w in found),
        tokens=count_prompt_tokens("gpt-4o-mini", list(messages)),
        tokens_by_layer=layer_tokens(messages),
    )


@dataclass
class Tally:
    """Figures over a set of outcomes."""

    questions: int = 0
    complete: int = 0
    evidence: int = 0
    present: int = 0
    by_layer: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LAYERS, 0))
    gist_only: int = 0
    dated: int = 0
    stale_only: int = 0
    tokens: list[int] = field(default_factory=list)
    tokens_by_layer: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LAYERS, 0))

    @classmethod
    def of(cls, outcomes: Iterable[Outcome]) -> Tally:
        tally = cls()
        for outcome in outcomes:
            tally.questions += 1
            tally.complete += outcome.complete
            tally.stale_only += outcome.stale_only
            tally.tokens.append(outcome.tokens)
            for layer, tokens in outcome.tokens_by_layer.items():
                tally.tokens_by_layer[layer] += tokens
            for where in outcome.found:
                tally.evidence += 1
                if where.layer is None:
                    tally.gist_only += where.gist
                    continue
                tally.present += 1
                tally.by_layer[where.layer] += 1
                tally.dated += where.dated
        return tally

    def share(self, count: int, of: int | None = None) -> float:
        whole = self.evidence if of is None else of
        return 100.0 * count / whole if whole else 0.0

    @property
    def mean_tokens(self) -> float:
        return sum(self.tokens) / len(self.tokens) if self.tokens else 0.0


def outcomes(
    dataset: Dataset, asked: Sequence[tuple[Question, list[dict[str, Any]]]]
) -> list[Outcome]:
    by_id = {m.id: m for m in dataset.messages}
    language = {c.id: c.language for c in dataset.conversations}
    return [measure(q, messages, by_id, language[q.conversation]) for q, messages in asked]


def groups(results: Sequence[Outcome]) -> dict[str, Tally]:
    """All, then by category, then by language."""
    out = {"all": Tally.of(results)}
    for category in CATEGORIES:
        out[category] = Tally.of(o for o in results if o.question.category == category)
    for language in sorted({o.language for o in results}):
        out[language] = Tally.of(o for o in results if o.language == language)
    return out
