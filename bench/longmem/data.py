"""The long-memory benchmark's data: conversations, their messages and the questions about them.

Three files in a folder (``bench/longmem/corpus/`` is the one ``make.py`` writes):

- ``conversations.json``: one object per conversation: id, language, title, Slack channel id,
  the people (id, display name, Slack user id);
- ``messages.jsonl``: one message a line, in the order they were said: id, conversation,
  session (numbered from 1), speaker (a person's id), ts (UTC, ISO 8601), text; ``addressed``
  (true: it mentions the bot, which answers it) and ``kind`` (``pin``: the speaker runs
  ``/pin TEXT``; ``remember``: ``/remember TEXT``) only when they apply;
- ``questions.jsonl``: one question a line: id, conversation, asker, asked_at (after the whole
  conversation), question, category (``single``, ``changed``, ``multi``, ``when``), evidence
  (message ids), superseded (``changed``: the messages holding earlier values), answer.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

CATEGORIES = ("single", "changed", "multi", "when")


@dataclass(frozen=True)
class Person:
    id: str
    name: str
    slack_id: str


@dataclass(frozen=True)
class ConversationInfo:
    id: str
    language: str
    title: str
    channel: str
    people: tuple[Person, ...]

    def person(self, person_id: str) -> Person:
        return next(p for p in self.people if p.id == person_id)


@dataclass(frozen=True)
class Message:
    id: str
    conversation: str
    session: int
    speaker: str
    ts: str
    text: str
    addressed: bool = False
    kind: str = "message"

    @property
    def at(self) -> datetime:
        return parse_time(self.ts)


@dataclass(frozen=True)
class Question:
    id: str
    conversation: str
    asker: str
    asked_at: str
    question: str
    category: str
    evidence: tuple[str, ...]
    answer: str
    superseded: tuple[str, ...] = field(default=())

    @property
    def at(self) -> datetime:
        return parse_time(self.asked_at)


@dataclass(frozen=True)
class Dataset:
    conversations: tuple[ConversationInfo, ...]
    messages: tuple[Message, ...]
    questions: tuple[Question, ...]

    def only(self, conversation_ids: set[str], questions_each: int | None = None) -> Dataset:
        """The named conversations, with at most ``questions_each`` questions each."""
        kept = tuple(c for c in self.conversations if c.id in conversation_ids)
        questions: list[Question] = []
        for conversation in kept:
            mine = [q for q in self.questions if q.conversation == conversation.id]
            questions.extend(mine[:questions_each] if questions_each is not None else mine)
        return Dataset(
            kept,
            tuple(m for m in self.messages if m.conversation in conversation_ids),
            tuple(questions),
        )


def normalized(text: str) -> str:
    """Text as the benchmark compares it: NFKC, case-folded, white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def format_time(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def _message_json(message: Message) -> dict[str, object]:
    data = asdict(message)
    if not message.addressed:
        del data["addressed"]
    if message.kind == "message":
        del data["kind"]
    return data


def _question_json(question: Question) -> dict[str, object]:
    data = asdict(question)
    data["evidence"] = list(question.evidence)
    if question.superseded:
        data["superseded"] = list(question.superseded)
    else:
        del data["superseded"]
    return data


def save(dataset: Dataset, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    infos = [{**asdict(c), "people": [asdict(p) for p in c.people]} for c in dataset.conversations]
    text = json.dumps(infos, ensure_ascii=False, indent=1)
    (folder / "conversations.json").write_text(text + "\n", encoding="utf-8")
    for name, rows in (
        ("messages.jsonl", [_message_json(m) for m in dataset.messages]),
        ("questions.jsonl", [_question_json(q) for q in dataset.questions]),
    ):
        lines = (json.dumps(row, ensure_ascii=False) for row in rows)
        (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def _rows(path: Path) -> list[dict[str, object]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def load(folder: Path) -> Dataset:
    infos = json.loads((folder / "conversations.json").read_text(encoding="utf-8"))
    conversations = tuple(
        ConversationInfo(
            id=c["id"],
            language=c["language"],
            title=c["title"],
            channel=c["channel"],
            people=tuple(Person(**p) for p in c["people"]),
        )
        for c in infos
    )
    messages = tuple(Message(**row) for row in _rows(folder / "messages.jsonl"))  # type: ignore[arg-type]
    questions = tuple(
        Question(
            **{  # type: ignore[arg-type]
                **row,
                "evidence": tuple(row["evidence"]),  # type: ignore[arg-type]
                "superseded": tuple(row.get("superseded", ())),  # type: ignore[arg-type]
            }
        )
        for row in _rows(folder / "questions.jsonl")
    )
    return Dataset(conversations, messages, questions)
