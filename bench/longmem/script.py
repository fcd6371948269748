"""The small language the benchmark's conversations are written in (``stories_en.py``,
``stories_zh.py``), and its parsing.

A **scene** is a few lines of chat, one message a line::

    +2-5
    B: anyone around this weekend? | who's free saturday?
    A*vet: can't, {pet} has the vet at ten
    ?: ha

- an optional first line ``+N-M``: the scene comes N to M sessions after the story's previous
  scene (a story's first scene is placed anywhere in the conversation's first 85%);
- ``A``..``D`` are a story's roles, cast from the conversation's people (distinct), ``?`` is
  anyone other than the previous speaker;
- ``*label`` marks a message that questions cite as evidence; ``@`` a message that mentions
  the bot (it answers); ``/pin`` and ``/remember`` a slash command run with that text;
- ``|`` separates alternative wordings: each time a scene is told one index is chosen, and
  every line takes its wording of that index (a line with fewer takes it modulo their
  number), so the first wordings of a scene's lines go together, and the second;
- ``{A}`` is role A's display name; ``{A.he}``, ``{A.his}``, ``{A.him}`` (English) and
  ``{A.ta}`` (Chinese: 他/她) their pronouns; other ``{slots}`` are the story's values.

A **story** is scenes plus the questions they answer (its category, wordings, the answer, and
the evidence labels; ``changed`` questions also name the labels of the superseded values). A
**filler** scene is chatter with no evidence in it, cast at random.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LINE = re.compile(
    r"^(?P<role>[A-D?])(?:\*(?P<label>\w+))?(?P<at>@)?(?:/(?P<command>pin|remember))?:\s*(?P<text>.+)$"
)
_GAP = re.compile(r"^\+(\d+)-(\d+)$")


@dataclass(frozen=True)
class Line:
    role: str
    wordings: tuple[str, ...]
    label: str | None = None
    addressed: bool = False
    kind: str = "message"


@dataclass(frozen=True)
class Scene:
    lines: tuple[Line, ...]
    gap: tuple[int, int] | None = None
    """Sessions after the story's previous scene (None: the first scene)."""

    @property
    def roles(self) -> set[str]:
        return {line.role for line in self.lines if line.role != "?"}


def scene(text: str) -> Scene:
    lines: list[Line] = []
    gap: tuple[int, int] | None = None
    for raw in text.strip().splitlines():
        raw = raw.strip()
        if not raw:
            continue
        found_gap = _GAP.match(raw)
        if found_gap and not lines:
            gap = (int(found_gap[1]), int(found_gap[2]))
            continue
        found = _LINE.match(raw)
        if found is None:
            raise ValueError(f"not a scene line: {raw!r}")
        wordings = tuple(w.strip() for w in found["text"].split(" | "))
        lines.append(
            Line(
                role=found["role"],
                wordings=wordings,
                label=found["label"],
                addressed=bool(found["at"]),
                kind=found["command"] or "message",
            )
        )
    return Scene(tuple(lines), gap)


@dataclass(frozen=True)
class Ask:
    """A question a story answers."""

    category: str
    wordings: tuple[str, ...]
    answer: str
    """A template; ``@date`` is the first evidence message's date."""
    evidence: tuple[str, ...]
    superseded: tuple[str, ...] = ()
    asker: str | None = None
    """A role (the owner asking about themselves); None: someone other than role A."""


def ask(
    category: str,
    wordings: str,
    answer: str,
    evidence: str,
    superseded: str = "",
    asker: str | None = None,
) -> Ask:
    return Ask(
        category=category,
        wordings=tuple(w.strip() for w in wordings.split(" | ")),
        answer=answer,
        evidence=tuple(evidence.split()),
        superseded=tuple(superseded.split()),
        asker=asker,
    )


@dataclass(frozen=True)
class Story:
    key: str
    scenes: tuple[Scene, ...]
    asks: tuple[Ask, ...]
    slots: dict[str, list[object]] = field(default_factory=dict)

    @property
    def roles(self) -> list[str]:
        return sorted(set().union(*(s.roles for s in self.scenes)))


def story(
    key: str, scenes: list[str], asks: list[Ask], slots: dict[str, list[object]] | None = None
) -> Story:
    return Story(key, tuple(scene(s) for s in scenes), tuple(asks), slots or {})
