"""What SQLite's and PostgreSQL's prompt logs (``prompt_log``) share: a record's row, its
layers, messages and recall notes as JSON text, the statement that keeps a channel's latest
few, and what finds a recalled message's note in that text."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from bot.core.ports.prompts import PromptRecord, RecallNote

PROMPT_COLUMNS = (
    "at, conversation, channel_key, question_id, question, person, model, tokens, budget,"
    " layers, messages, recall"
)
"""A logged prompt's columns but its id, in :func:`prompt_row`'s order."""


def _json(value: Any) -> str:
    # Control characters (NUL too) come out escaped: PostgreSQL's text takes the result.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def prompt_row(record: PromptRecord) -> tuple[Any, ...]:
    """The values of :data:`PROMPT_COLUMNS`."""
    return (
        float(record.at),
        record.conversation_key,
        record.channel_key,
        record.question_id,
        record.question,
        record.person,
        record.model,
        record.tokens,
        record.budget,
        _json(dict(record.layers)),
        _json([{"role": m["role"], "content": m["content"]} for m in record.messages]),
        _json(
            [
                {
                    "stored_id": note.stored_id,
                    "conversation_key": note.conversation_key,
                    "author_name": note.author_name,
                    "content": note.content,
                    "created_at": note.created_at,
                    "why": note.why,
                }
                for note in record.recall
            ]
        ),
    )


def prompt_record(row: Sequence[Any]) -> PromptRecord:
    """A record from its id and the values of :data:`PROMPT_COLUMNS`, in that order."""
    id_, at, conversation, channel, question_id, question, person, model, tokens = row[:9]
    budget = row[9]
    layers, messages, recall = (json.loads(value) for value in row[10:])
    return PromptRecord(
        at=float(at),
        conversation_key=conversation,
        channel_key=channel,
        question_id=int(question_id),
        question=question,
        person=person,
        model=model,
        tokens=int(tokens),
        budget=int(budget),
        layers=layers,
        messages=tuple(messages),
        recall=tuple(RecallNote(**note) for note in recall),
        id=int(id_),
    )


def trim(mark: Callable[[int], str]) -> str:
    """Deletes what is older than a channel's ``keep`` latest prompts; parameters: the
    channel's key, then ``keep`` (``mark(n)`` spells the n-th: ``?``, ``$n``)."""
    return (
        f"DELETE FROM prompt_log WHERE channel_key = {mark(1)} AND id <= ("  # noqa: S608
        f"SELECT id FROM prompt_log WHERE channel_key = {mark(1)}"
        f" ORDER BY id DESC LIMIT 1 OFFSET {mark(2)})"
    )


def recall_needle(conversation_key: str, stored_id: int) -> str:
    """What the ``recall`` text of a prompt that recalled that message holds: the start of its
    note, as :func:`prompt_row` writes it (the key's closing quote keeps C1 from C10)."""
    return _json({"stored_id": stored_id, "conversation_key": conversation_key})[:-1] + ","
