"""Turns as choosing a prompt's turns sees them: ids, token counts, importance, when the
turn's opening message was written; no text.

Each read is one statement over the covering index ``messages_by_turn``: the newest turns
wanted, then their messages, grouped here as SQLite's store groups them.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.ports.store import TurnCost
from bot.store.postgres.connection import Connection
from bot.store.sqlite.turns import grouped_turns as turns_of

_TURN = "COALESCE(reply_to, id)"
TURN_COSTS = (
    f"SELECT id, {_TURN}, tokens, importance > 0 OR marks > 0, role, created_at"  # noqa: S608
    f" FROM messages WHERE conversation = $1 AND id <= $2 AND {_TURN} IN ("
    f"  SELECT DISTINCT {_TURN} FROM messages"
    f"  WHERE conversation = $1 AND {_TURN} > $3 AND {_TURN} < $4"
    f"  AND {_TURN} <= $2 AND id <= $2 ORDER BY 1 DESC LIMIT $5)"
)
IMPORTANT_TURNS = (
    f"SELECT id, {_TURN}, tokens, importance > 0 OR marks > 0, role, created_at"  # noqa: S608
    f" FROM messages WHERE conversation = $1 AND id <= $2 AND {_TURN} IN ("
    f"  SELECT DISTINCT {_TURN} FROM messages"
    "  WHERE conversation = $1 AND (importance > 0 OR marks > 0)"
    f"  AND {_TURN} > $3 AND {_TURN} <= $4 AND id <= $2 ORDER BY 1 DESC LIMIT $5)"
)


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
            conversation_key,
            through_id,
            after_turn,
            before_turn if before_turn is not None else 2**63 - 1,
            max(limit, 1),
        )
        return turns_of(rows)

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
            IMPORTANT_TURNS, conversation_key, through_id, after_turn, through_turn, turns
        )
        return turns_of(rows)
