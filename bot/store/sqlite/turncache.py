"""Each conversation's newest turns, by cost, kept in memory between prompts.

Choosing a prompt's turns needs, for the newest turns of a conversation, which messages each
holds, what they cost and whether one is important: about two hundred index entries for a full
8,000-token prompt. Handing those rows to Python costs more than the choice itself, and
consecutive prompts share nearly all of them. So the store keeps them here, grouped into turns,
and brings them up to date before each prompt with one statement (one snapshot): the messages
stored since (ids only grow) and those edited or deleted since, which the database journals in
``message_changes`` by trigger, so that a change made by another process is seen like one made
here. A reset, an import or a recount journals one entry for the whole conversation, which is
then read again from scratch.

Per conversation, every message from some id (``low``) to the newest is held, so the turns
that begin at or after ``low`` are complete (a turn's messages never come before its first).
A prompt that needs older turns extends the range downwards; a range that reaches far below
what the last prompts looked at is cut back, and the conversations used least recently are
forgotten first once too many rows are held.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left, bisect_right, insort
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from bot.core.ports.store import TurnCost

Read = Callable[[str, dict[str, Any]], Awaitable[list[Any]]]

MAX_ROWS = 200_000
"""Index entries held in all; past it, the conversations used least recently go."""
SLACK_TURNS = 64
"""Complete turns kept below the oldest one the last prompt looked at."""
BATCH = 256
"""Messages read at a time when a prompt needs turns older than those held."""
SCAN_ROWS = 4096
"""How deep the search for important turns may extend what is held before it asks SQL."""

_START = (
    "SELECT (SELECT MAX(id) FROM messages WHERE conversation = :conversation),"
    " (SELECT MAX(seq) FROM message_changes WHERE conversation = :conversation)"
)
# New messages, then the journal (negative seq first; message_id NULL: the whole conversation).
_SINCE = (
    "SELECT id, COALESCE(reply_to, id), tokens, importance > 0 OR marks > 0 FROM messages"
    " WHERE conversation = :conversation AND id > :high"
    " UNION ALL"
    " SELECT -seq, message_id, deleted, NULL FROM message_changes"
    " WHERE conversation = :conversation AND seq > :seq"
)
_OLDER = (
    "SELECT id, COALESCE(reply_to, id), tokens, importance > 0 OR marks > 0 FROM messages"
    " WHERE conversation = :conversation AND id < :low AND id > :floor"
    " ORDER BY id DESC LIMIT :limit"
)
_BY_ID = (
    "SELECT id, COALESCE(reply_to, id), tokens, importance > 0 OR marks > 0 FROM messages"
    " WHERE conversation = :conversation AND id IN (SELECT value FROM json_each(:ids))"
)
# The newest important turns older than what is held, through the partial index that holds
# only important messages; their messages' costs from the covering turn index.
_IMPORTANT = (
    "SELECT id, COALESCE(reply_to, id), tokens FROM messages INDEXED BY messages_by_turn"
    " WHERE conversation = :conversation AND id <= :through"
    " AND COALESCE(reply_to, id) IN ("
    "  SELECT DISTINCT COALESCE(reply_to, id) AS turn FROM messages"
    "  INDEXED BY messages_important_by_turn"
    "  WHERE conversation = :conversation AND (importance > 0 OR marks > 0)"
    "  AND turn > :after AND turn <= :through_turn AND id <= :through"
    "  ORDER BY turn DESC LIMIT :turns)"
    " ORDER BY id"
)


def _turn_of(cost: TurnCost) -> int:
    return cost.turn


class _Entry:
    """What is held of one conversation."""

    __slots__ = (
        "by_turn",
        "high",
        "important",
        "low",
        "order",
        "partial",
        "rows",
        "seq",
        "wanted",
        "wanted_before",
    )

    def __init__(self, high: int, seq: int) -> None:
        self.high = high
        """The newest message id seen."""
        self.low = high + 1
        """Every message with an id from ``low`` through ``high`` is held."""
        self.seq = seq
        """The journal entries through this one are applied."""
        self.rows: dict[int, tuple[int, int, bool]] = {}
        """id -> (turn, tokens, important) of every message held."""
        self.order: list[TurnCost] = []
        """The complete turns (from ``low``), oldest first."""
        self.by_turn: dict[int, TurnCost] = {}
        """The same, by turn id."""
        self.important: list[int] = []
        """The ids of the complete turns that hold an important message, ascending."""
        self.partial: dict[int, list[int]] = {}
        """Turns begun before ``low``: the ids held of their messages."""
        self.wanted = high + 1
        """The oldest turn looked at since the last update (and, below, the one before)."""
        self.wanted_before = high + 1

    def put(self, message_id: int, turn: int, tokens: int, important: bool) -> None:
        """Hold a message (read from the database; replaces what was held of it)."""
        if message_id in self.rows:
            self.take(message_id)
        self.rows[message_id] = (turn, tokens, bool(important))
        self.high = max(self.high, message_id)
        if turn < self.low:
            self.partial.setdefault(turn, []).append(message_id)
            return
        index = bisect_left(self.order, turn, key=_turn_of)
        old = self.by_turn.get(turn)
        if old is None:
            self._set(index, None, TurnCost(turn, (message_id,), tokens, bool(important)))
            return
        ids = (*old.ids, message_id) if message_id > old.ids[-1] else _with(old.ids, message_id)
        self._set(
            index, old, TurnCost(turn, ids, old.tokens + tokens, old.important or bool(important))
        )

    def take(self, message_id: int) -> None:
        """Forget a message (deleted, or about to be put again)."""
        held = self.rows.pop(message_id, None)
        if held is None:
            return
        turn, tokens, _ = held
        if turn < self.low:
            ids = self.partial.get(turn, [])
            if message_id in ids:
                ids.remove(message_id)
            if not ids:
                self.partial.pop(turn, None)
            return
        index = bisect_left(self.order, turn, key=_turn_of)
        old = self.order[index]
        rest = tuple(i for i in old.ids if i != message_id)
        if not rest:
            self._set(index, old, None)
            return
        important = any(self.rows[i][2] for i in rest)
        self._set(index, old, TurnCost(turn, rest, old.tokens - tokens, important))

    def _set(self, index: int, old: TurnCost | None, new: TurnCost | None) -> None:
        """Put ``new`` in place of ``old`` at ``index`` of ``order`` (None: nothing)."""
        was, now = old is not None and old.important, new is not None and new.important
        if old is not None and was and not now:
            del self.important[bisect_left(self.important, old.turn)]
        if new is not None and now and not was:
            insort(self.important, new.turn)
        if new is None:
            assert old is not None
            del self.order[index]
            del self.by_turn[old.turn]
            return
        if old is None:
            self.order.insert(index, new)
        else:
            self.order[index] = new
        self.by_turn[new.turn] = new

    def extend(self, rows: Sequence[Any], new_low: int) -> int:
        """Hold ``rows`` (older than ``low``, read newest first) and every message from
        ``new_low``; returns how many turns became complete."""
        for message_id, turn, tokens, important in rows:
            if message_id not in self.rows:
                self.rows[message_id] = (turn, tokens, bool(important))
                self.partial.setdefault(turn, []).append(message_id)
        complete = sorted(turn for turn in self.partial if turn >= new_low)
        added = []
        for turn in complete:
            ids = tuple(sorted(self.partial.pop(turn)))
            held = [self.rows[i] for i in ids]
            added.append(
                TurnCost(turn, ids, sum(row[1] for row in held), any(row[2] for row in held))
            )
        self.order[:0] = added
        self.by_turn.update((cost.turn, cost) for cost in added)
        self.important[:0] = [cost.turn for cost in added if cost.important]
        self.low = new_low
        return len(added)

    def trim(self) -> None:
        """Let go of complete turns far below the oldest one looked at since the fit before
        last (a prompt may fit twice, then look for important turns)."""
        index = bisect_left(self.order, min(self.wanted, self.wanted_before), key=_turn_of)
        if index > 2 * SLACK_TURNS:
            cut = index - SLACK_TURNS
            new_low = self.order[cut].turn
            for cost in self.order[:cut]:
                self.partial[cost.turn] = [i for i in cost.ids if i >= new_low]
                del self.by_turn[cost.turn]
            del self.order[:cut]
            del self.important[: bisect_left(self.important, new_low)]
            for turn in list(self.partial):
                kept = [i for i in self.partial[turn] if i >= new_low]
                if kept:
                    self.partial[turn] = kept
                else:
                    del self.partial[turn]
            self.rows = {i: row for i, row in self.rows.items() if i >= new_low}  # compact
            self.low = new_low
        self.wanted_before, self.wanted = self.wanted, self.high + 1


def _with(ids: tuple[int, ...], message_id: int) -> tuple[int, ...]:
    return tuple(sorted((*ids, message_id)))


def _through(cost: TurnCost, through_id: int, rows: dict[int, tuple[int, int, bool]]) -> TurnCost:
    """The turn as it stood at message ``through_id``."""
    ids = tuple(i for i in cost.ids if i <= through_id)
    return TurnCost(cost.turn, ids, sum(rows[i][1] for i in ids), any(rows[i][2] for i in ids))


class TurnCache:
    def __init__(self, read: Read, *, max_rows: int = MAX_ROWS) -> None:
        self._read = read
        self._max_rows = max_rows
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._sizes: dict[str, int] = {}  # rows held per conversation, as last counted
        self._total = 0
        self._lock = asyncio.Lock()  # reads through aiosqlite (no read connection) may yield

    @property
    def rows(self) -> int:
        return self._total

    def clear(self) -> None:
        self._entries.clear()
        self._sizes.clear()
        self._total = 0

    async def turns(
        self,
        conversation_key: str,
        *,
        through_id: int,
        after_turn: int,
        before_turn: int | None,
        limit: int,
    ) -> list[TurnCost]:
        """See :meth:`bot.core.ports.store.Store.turn_costs`; brought up to date when
        ``before_turn`` is None (a prompt's first request)."""
        async with self._lock:
            if before_turn is None:
                entry = await self._update(conversation_key, trim=True)
            else:
                entry = await self._entry(conversation_key)
            order = entry.order
            index = (
                len(order) if before_turn is None else bisect_left(order, before_turn, key=_turn_of)
            )
            start = bisect_right(order, after_turn, key=_turn_of)
            if through_id >= entry.high and index > start:
                # The usual case: turns held as they are (as many as asked for, or all held
                # below ``before_turn``; the next request extends what is held).
                found = order[max(start, index - limit) : index]
                found.reverse()
            else:
                found = await self._walk(
                    conversation_key,
                    entry,
                    index,
                    through_id=through_id,
                    after_turn=after_turn,
                    limit=limit,
                )
            if found:
                entry.wanted = min(entry.wanted, found[-1].turn)
            self._bound(conversation_key)
            return found

    async def _walk(
        self,
        conversation_key: str,
        entry: _Entry,
        index: int,
        *,
        through_id: int,
        after_turn: int,
        limit: int,
    ) -> list[TurnCost]:
        """Up to ``limit`` turns older than ``order[index]``, newest first, as they stood at
        ``through_id``: those held, or when none is, those held once what is held is extended."""
        found: list[TurnCost] = []
        while len(found) < limit:
            if index == 0:
                if found or entry.low <= after_turn + 1:
                    break
                index = await self._extend(conversation_key, entry, after_turn)
                continue
            index -= 1
            cost = entry.order[index]
            if cost.turn <= after_turn:
                break
            if cost.turn > through_id:
                continue
            if cost.ids[-1] > through_id:
                cost = _through(cost, through_id, entry.rows)
                if not cost.ids:  # a reply to a turn whose first message is gone
                    continue
            found.append(cost)
        return found

    async def important(
        self,
        conversation_key: str,
        *,
        through_id: int,
        after_turn: int,
        through_turn: int,
        turns: int,
    ) -> list[TurnCost]:
        """See :meth:`bot.core.ports.store.Store.important_turns`: from what is held, extended
        downwards up to ``SCAN_ROWS`` messages, the rest from SQL."""
        async with self._lock:
            # Brought up to date by the fit just before (the prompt's), unless it asks about
            # messages not seen yet.
            entry = await self._entry(conversation_key)
            if through_id > entry.high:
                entry = await self._update(conversation_key, trim=False)
            if through_id >= entry.high:
                marked = entry.important
                top = bisect_right(marked, through_turn)
                bottom = bisect_right(marked, after_turn)
                if top - bottom >= turns or entry.low <= after_turn + 1:
                    # The usual case: as many as asked for are held, or all there are.
                    chosen = marked[max(bottom, top - turns) : top]
                    entry.wanted = min(entry.wanted, chosen[0] if chosen else through_turn)
                    self._bound(conversation_key)
                    return [entry.by_turn[turn] for turn in reversed(chosen)]
            found: list[TurnCost] = []
            index = bisect_right(entry.order, through_turn, key=_turn_of)
            oldest = through_turn
            while len(found) < turns:
                if index == 0:
                    if entry.low <= after_turn + 1:
                        break
                    if len(entry.rows) >= SCAN_ROWS:
                        found += await self._important_in_sql(
                            conversation_key,
                            through_id=through_id,
                            after_turn=after_turn,
                            through_turn=min(through_turn, entry.low - 1),
                            turns=turns - len(found),
                        )
                        break
                    index = await self._extend(conversation_key, entry, after_turn)
                    continue
                index -= 1
                cost = entry.order[index]
                if cost.turn <= after_turn:
                    break
                oldest = cost.turn
                if cost.turn > through_id:
                    continue
                if cost.ids[-1] > through_id:
                    cost = _through(cost, through_id, entry.rows)
                if cost.important:
                    found.append(cost)
            entry.wanted = min(entry.wanted, oldest)
            self._bound(conversation_key)
            return found

    async def _important_in_sql(
        self,
        conversation_key: str,
        *,
        through_id: int,
        after_turn: int,
        through_turn: int,
        turns: int,
    ) -> list[TurnCost]:
        rows = await self._read(
            _IMPORTANT,
            {
                "conversation": conversation_key,
                "through": through_id,
                "after": after_turn,
                "through_turn": through_turn,
                "turns": turns,
            },
        )
        by_turn: dict[int, tuple[list[int], list[int]]] = {}
        for message_id, turn, tokens in rows:
            ids, counts = by_turn.setdefault(turn, ([], []))
            ids.append(message_id)
            counts.append(tokens)
        return [
            TurnCost(turn, tuple(ids), sum(counts), True)
            for turn, (ids, counts) in sorted(by_turn.items(), reverse=True)
        ]

    async def _entry(self, conversation_key: str) -> _Entry:
        entry = self._entries.get(conversation_key)
        if entry is None:
            return await self._start(conversation_key)
        self._entries.move_to_end(conversation_key)
        return entry

    async def _start(self, conversation_key: str) -> _Entry:
        rows = await self._read(_START, {"conversation": conversation_key})
        high, seq = rows[0]
        entry = self._entries[conversation_key] = _Entry(high or 0, seq or 0)
        return entry

    async def _update(self, conversation_key: str, *, trim: bool) -> _Entry:
        """The entry, with what changed since it was last brought up to date (``trim``: and
        what is held cut back, as a prompt's first fit does)."""
        entry = self._entries.get(conversation_key)
        if entry is None:
            return await self._start(conversation_key)
        self._entries.move_to_end(conversation_key)
        if trim:
            entry.trim()
        rows = await self._read(
            _SINCE, {"conversation": conversation_key, "high": entry.high, "seq": entry.seq}
        )
        if not rows:
            return entry
        changed: list[int] = []
        for first, second, third, fourth in rows:
            if first > 0:
                entry.put(first, second, third, fourth)
                continue
            entry.seq = max(entry.seq, -first)
            if second is None:  # reset, import or recount: read it again
                del self._entries[conversation_key]
                return await self._start(conversation_key)
            if third:
                entry.take(second)
            elif second in entry.rows:
                changed.append(second)
        if changed:
            for message_id in changed:
                entry.take(message_id)
            for row in await self._read(
                _BY_ID, {"conversation": conversation_key, "ids": str(sorted(changed))}
            ):
                entry.put(*row)
        return entry

    async def _extend(self, conversation_key: str, entry: _Entry, after_turn: int) -> int:
        """Hold older messages (down to just after ``after_turn`` at most); returns how many
        turns became complete."""
        rows = await self._read(
            _OLDER,
            {
                "conversation": conversation_key,
                "low": entry.low,
                "floor": after_turn,
                "limit": BATCH,
            },
        )
        new_low = rows[-1][0] if len(rows) == BATCH else after_turn + 1
        return entry.extend(rows, min(new_low, entry.low))

    def _bound(self, current: str) -> None:
        """Count what the current conversation holds now; forget the conversations used
        least recently while too much is held (never the current one)."""
        size = len(self._entries[current].rows)
        self._total += size - self._sizes.get(current, 0)
        self._sizes[current] = size
        while self._total > self._max_rows and len(self._entries) > 1:
            key = next(iter(self._entries))
            if key == current:
                self._entries.move_to_end(key)
                continue
            del self._entries[key]
            self._total -= self._sizes.pop(key, 0)
