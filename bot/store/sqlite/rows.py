"""Rows as the core's values: the columns each read selects and how they are read back."""

from __future__ import annotations

from typing import Any

from bot.core.models import FactSource, Person, ProfileFact, Role, StoredMessage, Summary

MESSAGE_COLUMNS = (
    "id, COALESCE(reply_to, id), role, author_id, author_name, content, tokens, created_at, "
    "platform_message_id, importance > 0 OR marks > 0"
)
MESSAGE_COLUMNS_M = (  # the same, from ``messages m`` in a join
    "m.id, COALESCE(m.reply_to, m.id), m.role, m.author_id, m.author_name, m.content, m.tokens,"
    " m.created_at, m.platform_message_id, m.importance > 0 OR m.marks > 0"
)
FACT_COLUMNS = "id, platform, workspace, user_id, text, tokens, source, created_at"
SUMMARY_COLUMNS = (
    "id, conversation, content, tokens, covers_through_turn, message_count, first_message_id, "
    "last_message_id, compactions, rebuilt, model, created_at"
)

_ROLES = {role.value: role for role in Role}


def message(row: Any) -> StoredMessage:
    return StoredMessage(
        row[0], row[1], _ROLES[row[2]], row[3], row[4], row[5], row[6], row[7], row[8], bool(row[9])
    )


def fact(row: Any) -> ProfileFact:
    return ProfileFact(
        id=row[0],
        person=Person(row[1], row[2], row[3]),
        text=row[4],
        tokens=row[5],
        source=FactSource(row[6]),
        created_at=row[7],
    )


def summary(row: Any) -> Summary:
    return Summary(
        id=row[0],
        conversation_key=row[1],
        content=row[2],
        tokens=row[3],
        covers_through_turn=row[4],
        message_count=row[5],
        first_message_id=row[6],
        last_message_id=row[7],
        compactions=row[8],
        rebuilt=bool(row[9]),
        model=row[10],
        created_at=row[11],
    )
