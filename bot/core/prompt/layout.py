"""What a prompt is made of and how its parts are written.

One system message holds the system prompt, the pinned facts (the channel's, then those kept in
every channel of its workspace), the profile of the person speaking
and the rolling summary (durable facts first, against "lost in the middle"); recall's message
and the recent turns follow (:mod:`.assembler`). Every part is counted when it is built.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from bot.core.memory.group import GROUP_HEADING
from bot.core.memory.recall import RECALL_HEADING
from bot.core.memory.tokens import MESSAGE_OVERHEAD
from bot.core.models import (
    FactSource,
    Pin,
    ProfileFact,
    StoredMessage,
    Summary,
    clean_name,
    indent_headings,
    quote_lines,
)
from bot.core.ports.prompts import RecallNote
from bot.core.settings import Settings

Count = Callable[[str], int]
"""Counts a text's tokens as the chat model does."""

PINS_HEADING = "Facts the people in this channel asked you to keep (pinned; numbered by pin id):"
WORKSPACE_PINS_HEADING = (
    "Facts kept in every channel of this workspace (pinned by its admins; numbered by pin id):"
)
SUMMARY_HEADING = "Summary of the earlier conversation in this channel:"
PROFILE_SHARE = 0.1
"""A speaker's profile may take at most this share of the budget (and memory.profile_tokens)."""
_OWN_HEADING = "What {name} (who is speaking now) asked you to remember about them:"
_INFERRED_HEADING = "Noted about {name} from earlier conversations (may be out of date):"
_SECTIONS = (
    PINS_HEADING,
    WORKSPACE_PINS_HEADING,
    SUMMARY_HEADING,
    RECALL_HEADING,
    GROUP_HEADING,
    _OWN_HEADING,
    _INFERRED_HEADING,
)
_HEADINGS = re.compile("|".join(re.escape(h).replace(re.escape("{name}"), ".*") for h in _SECTIONS))
"""The lines that open a section of the prompt's first message."""

LAYERS: tuple[str, ...] = ("system", "pins", "profile", "summary", "recall", "recent")
"""The layers a prompt is made of, in prompt order."""


@dataclass(frozen=True)
class Breakdown:
    """Tokens per layer; they add up to the prompt's tokens but for the reply priming. The
    head's parts are counted only when asked (``/stats`` asks; a turn does not)."""

    head: Head
    recall: int
    recent: int

    def __getitem__(self, layer: str) -> int:
        if layer not in LAYERS:
            raise KeyError(layer)
        source: object = self if layer in ("recall", "recent") else self.head
        value: int = getattr(source, layer)
        return value

    def as_dict(self) -> dict[str, int]:
        return {layer: self[layer] for layer in LAYERS}


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    tokens: int
    """The whole prompt, counted the way the API counts it."""
    budget: int
    """The budget the prompt was fitted to (after calibration)."""
    breakdown: Breakdown
    window: Sequence[StoredMessage]
    summary: Summary | None
    pins: Sequence[Pin]
    turns_left_out: bool
    """Unsummarized turns were left out for lack of room."""
    recalled: Sequence[StoredMessage] = field(default=())
    """Earlier messages found by search, as shown (oldest first)."""
    profile: Sequence[ProfileFact] = ()
    """The speaker's facts shown in the prompt."""
    recall_notes: Sequence[RecallNote] = ()
    """What recall showed: where each message was said and why it was chosen."""

    @property
    def fill(self) -> float:
        return self.tokens / self.budget if self.budget else 1.0

    @property
    def fill_without_recall(self) -> float:
        """The fill that decides on summaries: recall only takes room that is left."""
        return (self.tokens - self.breakdown["recall"]) / self.budget if self.budget else 1.0


def render_pins(pins: Sequence[Pin]) -> str:
    """The pins layer: the channel's pins, then those kept in every channel of its workspace
    under a heading of their own (each part only when it has pins; the first always)."""
    own = [pin for pin in pins if not pin.everywhere]
    everywhere = [pin for pin in pins if pin.everywhere]
    lines = [PINS_HEADING] if own or not everywhere else []
    lines.extend(_pin_line(pin) for pin in own)
    if everywhere:
        lines.append(WORKSPACE_PINS_HEADING)
        lines.extend(_pin_line(pin) for pin in everywhere)
    return "\n".join(lines)


def _pin_line(pin: Pin) -> str:
    return f"#{pin.id} ({clean_name(pin.author_name)}): {quote_lines(pin.text)}"


def render_profile(name: str, facts: Sequence[ProfileFact]) -> str:
    name = clean_name(name)
    lines = []
    own = [fact for fact in facts if fact.source is FactSource.USER]
    inferred = [fact for fact in facts if fact.source is FactSource.SUMMARY]
    if own:
        lines.append(_OWN_HEADING.format(name=name))
        lines.extend(f"- {quote_lines(fact.text)}" for fact in own)
    if inferred:
        lines.append(_INFERRED_HEADING.format(name=name))
        lines.extend(f"- {quote_lines(fact.text)}" for fact in inferred)
    return "\n".join(lines)


def render_summary(summary: Summary) -> str:
    return f"{SUMMARY_HEADING}\n{indent_headings(summary.content, _HEADINGS)}"


def profile_cap(settings: Settings, budget: int) -> int:
    """The most tokens the speaker's profile may take under ``budget``."""
    return min(settings.profile_tokens, int(budget * PROFILE_SHARE))


def fit_profile(
    count: Count, name: str, facts: Sequence[ProfileFact], cap: int
) -> tuple[str, tuple[ProfileFact, ...]]:
    """The speaker's profile block within ``cap`` and the facts it shows: their own facts in
    the order they set them, then inferred ones newest first, as many as fit."""
    ordered = [f for f in facts if f.source is FactSource.USER]
    ordered += sorted(
        (f for f in facts if f.source is FactSource.SUMMARY), key=lambda f: f.id, reverse=True
    )
    shown: list[ProfileFact] = []
    text = ""
    for fact in ordered:
        candidate = sorted([*shown, fact], key=lambda f: f.id)
        rendered = render_profile(name, candidate)
        if count(rendered) > cap:
            break
        shown, text = candidate, rendered
    return text, tuple(shown)


def head_text(
    system_prompt: str, pins: Sequence[Pin], summary: Summary | None, profile: str = ""
) -> str:
    """The prompt's first message: system prompt, pins, the speaker's profile, summary."""
    return _join(system_prompt, _sections(pins, summary, profile))


def _join(system_prompt: str, sections: Sequence[str]) -> str:
    return "\n\n".join([system_prompt, *(section for section in sections if section)])


def _sections(pins: Sequence[Pin], summary: Summary | None, profile: str) -> tuple[str, str, str]:
    """The pins, profile and summary sections ("" for an absent one), in prompt order."""
    pins_text = render_pins(pins) if pins else ""
    summary_text = render_summary(summary) if summary is not None else ""
    return pins_text, profile, summary_text


@dataclass(frozen=True)
class Head:
    """A prompt's first message and what it and its parts take."""

    text: str
    tokens: int
    """The whole message, with the chat format's overhead."""
    count: Count = field(repr=False, compare=False)
    pins_text: str = ""
    profile_text: str = ""
    summary_text: str = ""

    @classmethod
    def build(
        cls,
        count: Count,
        system_prompt: str,
        pins: Sequence[Pin],
        summary: Summary | None,
        profile: str,
    ) -> Head:
        sections = _sections(pins, summary, profile)
        pins_text, _, summary_text = sections
        text = _join(system_prompt, sections)
        return cls(
            text=text,
            tokens=_head_tokens(count, text, summary, summary_text) + MESSAGE_OVERHEAD,
            count=count,
            pins_text=pins_text,
            profile_text=profile,
            summary_text=summary_text,
        )

    @cached_property
    def pins(self) -> int:
        return self.count(self.pins_text) if self.pins_text else 0

    @cached_property
    def profile(self) -> int:
        return self.count(self.profile_text) if self.profile_text else 0

    @cached_property
    def summary(self) -> int:
        return self.count(self.summary_text) if self.summary_text else 0

    @property
    def system(self) -> int:
        """What the system prompt takes (with the message's overhead)."""
        return self.tokens - self.pins - self.profile - self.summary


def _head_tokens(count: Count, text: str, summary: Summary | None, summary_text: str) -> int:
    """What the head takes. The summary, last and the largest part, comes with its count from
    when it was made: its text is counted only when it is shown otherwise than stored (a line
    indented), or could join the token before it (it starts with white space). A line break
    followed by a letter or a mark always starts a new token, so the parts add up exactly."""
    prefix = SUMMARY_HEADING + "\n"
    if (
        summary is None
        or not summary.content
        or summary.content[0].isspace()
        or summary_text != prefix + summary.content
        or not text.endswith(summary_text)
    ):
        return count(text)
    return count(text[: len(text) - len(summary.content)]) + summary.tokens
