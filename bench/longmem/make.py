"""Writes the long-memory benchmark's data, ``bench/longmem/corpus/`` (deterministic: seeded).

Each conversation is a group of three to five people talking in one channel over months, in
sessions hours, days or weeks apart. Its **stories** (``stories_en.py``, ``stories_zh.py``,
written in the small language of ``script.py``) are the things people tell in passing and come
back to: a dog's name, a move that changed city, who brings what to a potluck, the day someone
passed a test. Each is told in one or more scenes placed in the conversation's sessions (later
scenes some sessions after the first), with questions whose evidence is the story's marked
messages. Between them, each session is filled with **chatter** (scenes about food, weather,
work, plans, jokes: no evidence), and now and then someone asks the bot something in passing
(a mention, which the bot answers during the replay).

Questions are asked after the whole conversation, one day after its last message, by someone
other than the person the story is about (unless the story says the owner asks).

Run from the repository root::

    .venv/bin/python bench/longmem/make.py            # writes bench/longmem/corpus/
    .venv/bin/python bench/longmem/make.py --out DIR
"""

from __future__ import annotations

import argparse
import random
import string
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from bench.longmem.data import (
    ConversationInfo,
    Dataset,
    Message,
    Person,
    Question,
    format_time,
    normalized,
    save,
)
from bench.longmem.script import Line, Scene, Story

OUT = Path(__file__).resolve().parent / "corpus"
SEED = 20261204


@dataclass(frozen=True)
class Member:
    id: str
    name: str
    gender: str
    """``m`` or ``f``: the pronouns templates use."""


class Speaker:
    """A person as a template sees them: ``{A}`` is the name, ``{A.his}`` a pronoun."""

    def __init__(self, member: Member) -> None:
        self.member = member
        male = member.gender == "m"
        self.he = "he" if male else "she"
        self.his = "his" if male else "her"
        self.him = "him" if male else "her"
        self.ta = "他" if male else "她"

    def __format__(self, spec: str) -> str:
        return format(self.member.name, spec)


@dataclass(frozen=True)
class Plan:
    """One conversation to write."""

    id: str
    language: str
    title: str
    people: tuple[Member, ...]
    start: datetime
    sessions: int
    messages: int
    """About how many messages in all."""
    gap_days: float
    """The mean time between sessions, in days."""
    hours: tuple[int, int]
    """Sessions start between these hours (UTC)."""
    stories: tuple[str, ...]
    """Story keys, in any order; a key twice tells the story twice (other people, values);
    ``key@A=ana,B=bo`` casts roles A and B as the people with these ids."""
    library: Library


@dataclass(frozen=True)
class Library:
    """What a language's conversations are written from."""

    stories: dict[str, Story]
    chatter: Sequence[Scene]
    greetings: Sequence[Scene]
    farewells: Sequence[Scene]
    asides: Sequence[Scene]
    pools: dict[str, list[object]]
    """Values for the slots chatter uses (``{food}``, ``{show}``...)."""
    themed: dict[str, Sequence[Scene]] = field(default_factory=dict)
    """Chatter that suits one conversation only, by conversation id."""


@dataclass
class _Told:
    """A story as told in one conversation: its cast, values and sessions."""

    story: Story
    roles: dict[str, Member]
    values: dict[str, object]
    sessions: list[int]
    ids: dict[str, str] = field(default_factory=dict)
    """Evidence label → message id."""


@dataclass
class _Said:
    speaker: str
    text: str
    addressed: bool
    kind: str
    told: _Told | None = None
    label: str | None = None


def _fields(text: str) -> set[str]:
    return {
        name.split(".")[0].split("[")[0] for _, name, _, _ in string.Formatter().parse(text) if name
    }


def _render(
    scene: Scene,
    roles: dict[str, Member],
    values: dict[str, object],
    people: Sequence[Member],
    rng: random.Random,
) -> list[tuple[Line, Member, str]]:
    out: list[tuple[Line, Member, str]] = []
    previous: Member | None = None
    context: dict[str, object] = {r: Speaker(m) for r, m in roles.items()}
    context.update(values)
    # One wording index for the whole scene: the n-th wordings of its lines go together.
    index = rng.randrange(max(len(line.wordings) for line in scene.lines))
    for line in scene.lines:
        if line.role == "?":
            others = [p for p in people if p != previous]
            speaker = rng.choice(others)
        else:
            speaker = roles[line.role]
        text = line.wordings[index % len(line.wordings)].format(**context)
        out.append((line, speaker, text))
        previous = speaker
    return out


class Writer:
    def __init__(self, plan: Plan, seed: int) -> None:
        self.plan = plan
        self.rng = random.Random(f"{seed}:{plan.id}")
        self.used: dict[str, set[object]] = {}
        self.owners: Counter[str] = Counter()
        self.chatter_used: Counter[int] = Counter()

    def _pick(self, pool: str, values: Sequence[object]) -> object:
        used = self.used.setdefault(pool, set())
        fresh = [v for v in values if v not in used] or list(values)
        value = self.rng.choice(fresh)
        used.add(value)
        return value

    def _cast(self, story: Story, fixed: dict[str, str]) -> dict[str, Member]:
        """The story's roles: those ``fixed`` by person id, role A otherwise whoever owns the
        fewest stories so far, the others at random (all distinct)."""
        people = list(self.plan.people)
        roles = story.roles
        if len(roles) > len(people):
            raise ValueError(f"{self.plan.id}: story {story.key} needs {len(roles)} people")
        cast = {role: next(p for p in people if p.id == pid) for role, pid in fixed.items()}
        free = [p for p in people if p not in cast.values()]
        if "A" not in cast:
            fewest = min(self.owners[p.id] for p in free)
            cast["A"] = self.rng.choice([p for p in free if self.owners[p.id] == fewest])
            free.remove(cast["A"])
        self.owners[cast["A"].id] += 1
        self.rng.shuffle(free)
        for role in roles:
            if role not in cast:
                cast[role] = free.pop()
        return cast

    def _place(self, story: Story) -> list[int]:
        total = self.plan.sessions
        gaps = [s.gap or (0, 0) for s in story.scenes[1:]]
        latest = min(int(total * 0.85), total - 1 - sum(g[0] for g in gaps))
        first = self.rng.randint(0, max(0, latest))
        sessions = [first]
        for low, high in gaps:
            sessions.append(min(total - 1, sessions[-1] + self.rng.randint(low, high)))
        return sessions

    def _session_times(self) -> list[datetime]:
        plan, rng = self.plan, self.rng
        times: list[datetime] = []
        day = plan.start
        for n in range(plan.sessions):
            if n:
                kind = rng.random()
                if kind < 0.2:
                    gap = timedelta(hours=rng.uniform(3, 8))
                elif kind < 0.85:
                    gap = timedelta(days=rng.expovariate(1 / plan.gap_days) + 0.5)
                else:
                    gap = timedelta(days=rng.uniform(2.0, 3.5) * plan.gap_days)
                day = times[-1] + gap
            low, high = plan.hours
            if not n or day.hour < low or day.hour >= high:
                day = day.replace(hour=rng.randint(low, high - 1), minute=rng.randint(0, 59))
                if times and day <= times[-1]:
                    day += timedelta(days=1)
            times.append(day.replace(second=rng.randint(0, 59), microsecond=0))
        return times

    def _chatter(self, pool: Sequence[Scene]) -> Scene:
        """One of the scenes of ``pool`` told least often so far in this conversation."""
        counts = [self.chatter_used[id(s)] for s in pool]
        fewest = min(counts)
        index = self.rng.choice([i for i, c in enumerate(counts) if c == fewest])
        self.chatter_used[id(pool[index])] += 1
        return pool[index]

    def _filled(self, scene: Scene) -> list[_Said]:
        people = list(self.plan.people)
        roles = [r for r in "ABCD" if r in scene.roles]
        cast = self.rng.sample(people, min(len(roles), len(people)))
        role_map = dict(zip(roles, cast, strict=False))
        pools = self.plan.library.pools
        names = set().union(*(_fields(w) for line in scene.lines for w in line.wordings))
        values = {n: self.rng.choice(pools[n]) for n in sorted(names) if n in pools}
        return [
            _Said(speaker.id, text, line.addressed, line.kind)
            for line, speaker, text in _render(scene, role_map, values, people, self.rng)
        ]

    def write(self) -> tuple[ConversationInfo, list[Message], list[Question]]:
        plan, rng, library = self.plan, self.rng, self.plan.library
        told: list[_Told] = []
        for entry in plan.stories:
            key, _, casting = entry.partition("@")
            fixed = dict(pair.split("=") for pair in casting.split(",") if pair)
            story = library.stories[key]
            roles = self._cast(story, fixed)
            values = {name: self._pick(name, pool) for name, pool in story.slots.items()}
            told.append(_Told(story, roles, values, self._place(story)))
        by_session: dict[int, list[list[_Said]]] = {}
        for item in told:
            for scene, session in zip(item.story.scenes, item.sessions, strict=True):
                said = [
                    _Said(speaker.id, text, line.addressed, line.kind, item, line.label)
                    for line, speaker, text in _render(
                        scene, item.roles, item.values, plan.people, rng
                    )
                ]
                by_session.setdefault(session, []).append(said)
        sizes = [rng.uniform(0.5, 1.5) for _ in range(plan.sessions)]
        scale = plan.messages / sum(sizes)
        chatter = [*library.chatter, *library.themed.get(plan.id, ())]
        times = self._session_times()
        messages: list[Message] = []
        for session in range(plan.sessions):
            parts = by_session.get(session, [])
            count = sum(len(p) for p in parts)
            extra: list[list[_Said]] = []
            if rng.random() < 0.6:
                extra.append(self._filled(self._chatter(library.asides)))
            while count + sum(len(p) for p in extra) < sizes[session] * scale:
                extra.append(self._filled(self._chatter(chatter)))
            # Stories keep their order in a session; chatter goes anywhere between them.
            order = parts + extra
            rng.shuffle(order)
            stories_in_order = iter(parts)
            order = [next(stories_in_order) if any(p is q for q in parts) else p for p in order]
            if rng.random() < 0.5:
                order.insert(0, self._filled(self._chatter(library.greetings)))
            if rng.random() < 0.3:
                order.append(self._filled(self._chatter(library.farewells)))
            at = times[session]
            for part in order:
                for said in part:
                    message_id = f"{plan.id}-{len(messages) + 1:04d}"
                    if said.told is not None and said.label is not None:
                        said.told.ids[said.label] = message_id
                    messages.append(
                        Message(
                            id=message_id,
                            conversation=plan.id,
                            session=session + 1,
                            speaker=said.speaker,
                            ts=format_time(at),
                            text=said.text,
                            addressed=said.addressed,
                            kind=said.kind,
                        )
                    )
                    at += timedelta(seconds=rng.randint(8, 150))
                at += timedelta(seconds=rng.randint(60, 900))
        questions = self._questions(told, messages)
        _check(plan, messages, questions)
        info = ConversationInfo(
            id=plan.id,
            language=plan.language,
            title=plan.title,
            channel=f"C{plan.id.upper()}LM",
            people=tuple(
                Person(m.id, m.name, f"U{plan.id.upper()}{n}") for n, m in enumerate(plan.people)
            ),
        )
        return info, messages, questions

    def _questions(self, told: list[_Told], messages: list[Message]) -> list[Question]:
        """Every story's questions, in a shuffled order, asked from 10:00 the day after the
        conversation's last message, three minutes apart."""
        by_id = {m.id: m for m in messages}
        drafts: list[dict[str, Any]] = []
        for item in told:
            context: dict[str, object] = {r: Speaker(m) for r, m in item.roles.items()}
            context.update(item.values)
            for spec in item.story.asks:
                evidence = tuple(item.ids[label] for label in spec.evidence)
                if spec.asker is not None:
                    asker = item.roles[spec.asker]
                else:
                    owner = item.roles["A"]
                    asker = self.rng.choice([p for p in self.plan.people if p != owner])
                drafts.append(
                    {
                        "asker": asker.id,
                        "question": self.rng.choice(spec.wordings).format(**context),
                        "category": spec.category,
                        "evidence": evidence,
                        "answer": by_id[evidence[0]].ts[:10]
                        if spec.answer == "@date"
                        else spec.answer.format(**context),
                        "superseded": tuple(item.ids[label] for label in spec.superseded),
                    }
                )
        self.rng.shuffle(drafts)
        start = by_id[messages[-1].id].at + timedelta(days=1)
        start = start.replace(hour=10, minute=0, second=0)
        return [
            Question(
                id=f"{self.plan.id}-q{n:02d}",
                conversation=self.plan.id,
                asked_at=format_time(start + timedelta(minutes=3 * n)),
                **draft,
            )
            for n, draft in enumerate(drafts, 1)
        ]


def _check(plan: Plan, messages: list[Message], questions: list[Question]) -> None:
    """Each evidence message must be the only one holding its text, or the benchmark would
    count another message as its presence."""
    texts = [(m.id, normalized(m.text)) for m in messages]
    problems = []
    for question in questions:
        for message_id in (*question.evidence, *question.superseded):
            wanted = next(t for i, t in texts if i == message_id)
            clash = [i for i, t in texts if i != message_id and wanted in t]
            if clash or len(wanted) < 6:
                problems.append(f"{plan.id}: evidence {message_id} {wanted!r} also in {clash}")
    if problems:
        raise ValueError("\n".join(problems))


def dataset(plans: Sequence[Plan], seed: int = SEED) -> Dataset:
    infos, messages, questions = [], [], []
    for plan in plans:
        info, said, asked = Writer(plan, seed).write()
        infos.append(info)
        messages.extend(said)
        questions.extend(asked)
    return Dataset(tuple(infos), tuple(messages), tuple(questions))


def main(argv: list[str] | None = None) -> int:
    from bench.longmem.conversations import PLANS

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    data = dataset(PLANS, args.seed)
    save(data, args.out)
    for info in data.conversations:
        said = [m for m in data.messages if m.conversation == info.id]
        asked = [q for q in data.questions if q.conversation == info.id]
        span = (said[-1].at - said[0].at).days
        sessions = said[-1].session
        kinds = Counter(q.category for q in asked)
        print(
            f"{info.id} ({info.language}, {len(info.people)} people): {len(said)} messages, "
            f"{sessions} sessions over {span} days, {len(asked)} questions "
            + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        )
    print(f"{len(data.messages)} messages, {len(data.questions)} questions -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
