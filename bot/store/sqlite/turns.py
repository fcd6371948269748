"""Turns as choosing a prompt's turns sees them: ids, token counts, importance, when the
turn's opening message was written; no text.

Each read is one statement over the index ``messages_by_turn`` (conversation, turn, id, tokens,
importance, marks): the newest turns wanted, then their messages (with their role and time,
from the table), grouped here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bot.core.models import Role
from bot.core.ports.store import TurnCost
from bot.store.sqlite.connection import Connection

_TURN = "COALESCE(reply_to, id)"
TURN_COSTS = (
    f"SELECT id, {_TURN}, tokens, importance > 0 OR marks > 0, role, created_at"  # noqa: S608
    " FROM messages INDEXED BY messages_by_turn"
    f" WHERE conversation = :conversation AND id <= :through AND {_TURN} IN ("
    f"  SELECT DISTINCT {_TURN} AS turn FROM messages INDEXED BY messages_by_turn"
    "  WHERE conversation = :conversation AND turn > :after AND turn < :before"
    "  AND turn <= :through AND id <= :through"
    "  ORDER BY turn DESC LIMIT :limit)"
)
# The newest important turns through the partial index that holds only important messages;
# their messages' costs from the covering turn index.
IMPORTANT_TURNS = (
    f"SELECT id, {_TURN}, tokens, importance > 0 OR marks > 0, role, created_at"  # noqa: S608
    " FROM messages INDEXED BY messages_by_turn"
    f" WHERE conversation = :conversation AND id <= :through AND {_TURN} IN ("
    f"  SELECT DISTINCT {_TURN} AS turn FROM messages"
    "  INDEXED BY messages_important_by_turn"
    "  WHERE conversation = :conversation AND (importance > 0 OR marks > 0)"
    "  AND turn > :after AND turn <= :through_turn AND id <= :through"
    "  ORDER BY turn DESC LIMIT :turns)"
)


def grouped_turns(rows: Sequence[Any]) -> list[TurnCost]:
    """Rows ``(id, turn, tokens, important, role, created_at)``, as turns, newest first."""
    by_turn: dict[int, tuple[list[int], int, bool, float | None]] = {}
    for message_id, turn, tokens, important, role, created_at in rows:
        ids, total, marked, opened_at = by_turn.get(turn, ([], 0, False, None))
        ids.append(int(message_id))
        if message_id == turn and role == Role.USER.value:
            opened_at = float(created_at)
        by_turn[turn] = (ids, total + int(tokens), marked or bool(important), opened_at)
    return [
        TurnCost(turn, tuple(sorted(ids)), tokens, important, opened_at)
        for turn, (ids, tokens, important, opened_at) in sorted(by_turn.items(), reverse=True)
    ]


class Turns(Connection):
    async def turn_costs(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        before_turn: int | None,
        limit: int,
    ) -> Sequence[TurnCost]:
        rows = await self._rows(
            TURN_COSTS,
            {
                "conversation": conversation_key,
                "through": through_id,
                "after": after_turn,
                "before": before_turn if before_turn is not None else 2**63 - 1,
                "limit": max(limit, 1),
            },
        )
        return grouped_turns(rows)

    async def important_turns(
        self,
        *,
        conversation_key: str,
        through_id: int,
        after_turn: int,
        through_turn: int,
        turns: int,
    ) -> Sequence[TurnCost]:
        if turns <= 0:
            return []
        rows = await self._rows(
            IMPORTANT_TURNS,
            {
                "conversation": conversation_key,
                "through": through_id,
                "after": after_turn,
                "through_turn": through_turn,
                "turns": turns,
            },
        )
        return grouped_turns(rows)
