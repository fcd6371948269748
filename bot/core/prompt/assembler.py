"""Building each prompt under the token budget, from what the store returns now.

The layout (:mod:`.layout`): the system message with the system prompt, pins (the channel's
and its workspace's), the speaker's profile and the summary; then, when recall is on and finds
something, a second system message with earlier messages that may be relevant
(:mod:`..memory.recall`; its memory group's other channels' after its own); then as many recent
turns as fit, oldest first (:mod:`.fit`), dated when they span days (:mod:`.dates`); the current
message last. Stored messages are never deleted here: the prompt is a view.

Recall searches first, with the message being answered as the query, and holds back what its
best matches would take (at most the recall allowance) while the recent turns are fitted; then
it shows the matches older than the turns that fitted, so nothing appears twice. When matches
fell inside the window and what recall held back would now fit the turn it kept out, the turns
are fitted again with only what recall used (stopping before a recalled turn). Important turns
are given their place last, in the room recall left, and only those newer than every recalled
message: what recall shows stays older than the whole window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.core.memory.reasons import notes
from bot.core.memory.recall import NOTHING, Found, Recalled, Recaller
from bot.core.memory.tokens import REPLY_PRIMING, ChatTokenizer
from bot.core.models import Conversation, Person, Pin, ProfileFact, Role, StoredMessage
from bot.core.ports.store import Store, TurnCost
from bot.core.prompt.dates import Dates
from bot.core.prompt.fit import Fit, PromptTooLarge, fit_turns, promote
from bot.core.prompt.layout import Breakdown, Head, Prompt, fit_profile, profile_cap
from bot.core.settings import Settings
from bot.core.wording import counted

__all__ = ["Assembler", "Prompt", "PromptTooLarge", "Speaker"]

_FIRST_PAGE, _MAX_PAGE = 128, 512  # turns asked for at a time: one read fits most prompts
_QUERY_LOOKBACK = 50  # /stats: the newest user message among this many is recall's query
IMPORTANT_LOOKBACK = 32
"""How many important turns older than the window are considered for a place in it."""


@dataclass(frozen=True)
class Speaker:
    """Who wrote the message being answered: whose profile the prompt shows."""

    person: Person
    name: str


@dataclass(frozen=True)
class _Span:
    """Where a prompt's recent turns come from."""

    conversation_key: str
    through_id: int
    current_id: int | None
    after_turn: int
    """Turns through this one are in the summary."""
    available: int
    """The tokens left for recall and the recent turns."""


def _head_too_large(pins: int, head: Head, fixed: int, budget: int) -> PromptTooLarge:
    return PromptTooLarge(
        f"The system prompt and the {counted(pins, 'pinned fact')} take {fixed:,} tokens "
        f"(pins: {head.pins:,}), more than the {budget:,}-token budget. "
        "Nothing was sent to the model; unpin something with /unpin ID (see /pins)."
    )


class Assembler:
    """Reads only the rows a prompt needs, however long the history."""

    def __init__(
        self, *, store: Store, tokenizer: ChatTokenizer, recaller: Recaller | None = None
    ) -> None:
        self._store = store
        self._count = tokenizer.count
        self._dates = Dates(tokenizer.count)
        self._recaller = recaller

    async def build(
        self,
        *,
        settings: Settings,
        conversation_key: str,
        channel_key: str,
        through_id: int | None,
        current_id: int | None,
        budget: int,
        query: StoredMessage | None = None,
        speaker: Speaker | None = None,
    ) -> Prompt:
        """Fit a prompt for the conversation up to message ``through_id`` into ``budget``.

        ``current_id`` names the message being answered: it must be in the prompt, last;
        ``query``, that message when the caller has it at hand (recall searches with it);
        ``speaker``, whose profile is shown. Raises :class:`PromptTooLarge` when the system
        prompt, pins, profile and that message alone exceed the budget.
        """
        pins, profile_text, profile = await self._pins_and_profile(
            settings, channel_key, speaker, budget
        )
        summary = (
            await self._store.latest_summary(conversation_key=conversation_key)
            if settings.uses_summary
            else None
        )
        head = Head.build(self._count, settings.system_prompt, pins, summary, profile_text)
        fixed = head.tokens + REPLY_PRIMING
        if fixed > budget:
            raise _head_too_large(len(pins), head, fixed, budget)
        fit, recalled = Fit((), 0, False), NOTHING
        rows: Sequence[StoredMessage] = []
        if through_id is not None:
            span = _Span(
                conversation_key=conversation_key,
                through_id=through_id,
                current_id=current_id,
                after_turn=summary.covers_through_turn if summary else 0,
                available=budget - fixed,
            )
            fit, recalled = await self._recent(settings, span, query, pins)
            if fit.kept:
                rows = await self._store.window_messages(
                    conversation_key=conversation_key, ids=fit.members
                )
        messages = [{"role": "system", "content": head.text}]
        if recalled.text:
            messages.append(recalled.prompt_message())
        days = self._dates.marks(fit.kept)
        messages.extend(row.prompt_message(days.get(row.id)) for row in rows)
        return Prompt(
            messages=messages,
            tokens=fixed + recalled.tokens + fit.tokens,
            budget=budget,
            breakdown=Breakdown(head=head, recall=recalled.tokens, recent=fit.tokens),
            window=rows,
            summary=summary,
            pins=pins,
            turns_left_out=fit.left_out,
            recalled=(*recalled.messages, *recalled.shared),
            profile=profile,
            recall_notes=recalled.notes,
        )

    async def _pins_and_profile(
        self, settings: Settings, channel_key: str, speaker: Speaker | None, budget: int
    ) -> tuple[Sequence[Pin], str, tuple[ProfileFact, ...]]:
        """The channel's pins and its workspace's, and the speaker's profile block and the
        facts it shows."""
        person = speaker.person if speaker is not None and settings.profile_tokens else None
        pins, facts = await self._store.pins_and_profile(
            channel_keys=Conversation.from_key(channel_key).pin_keys, person=person
        )
        if speaker is None or not facts:
            return pins, "", ()
        cap = profile_cap(settings, budget)
        text, shown = fit_profile(self._count, speaker.name, facts, cap)
        return pins, text, shown

    async def _recent(
        self, settings: Settings, span: _Span, query: StoredMessage | None, pins: Sequence[Pin]
    ) -> tuple[Fit, Recalled]:
        """The recent turns chosen and what recall shows before them."""
        turns = await self._turns(span, settings.max_turns)
        recaller = self._recaller if settings.recall.enabled else None
        if recaller is None:
            fit = fit_turns(
                turns,
                available=span.available,
                current_id=span.current_id,
                max_turns=settings.max_turns,
                dates=self._dates,
            )
            recalled = NOTHING
        else:
            found = await self._search(recaller, settings, span, query, pins)
            fit, recalled = self._fit_with_recall(recaller, settings, span, turns, found)
        if fit.left_out and fit.boundary is not None:
            # Newest first, and all older than every kept turn (the fit kept only newer ones).
            candidates = await self._store.important_turns(
                conversation_key=span.conversation_key,
                through_id=span.through_id,
                after_turn=max([span.after_turn, *(m.turn_id for m in recalled.messages)]),
                through_turn=fit.boundary,
                turns=IMPORTANT_LOOKBACK,
            )
            fit = promote(
                fit,
                candidates,
                available=span.available - recalled.tokens,
                current_id=span.current_id,
                keep_recent=settings.keep_recent_turns,
                max_turns=settings.max_turns,
                dates=self._dates,
            )
        return fit, recalled

    def _fit_with_recall(
        self,
        recaller: Recaller,
        settings: Settings,
        span: _Span,
        turns: Sequence[TurnCost],
        candidates: Found,
    ) -> tuple[Fit, Recalled]:
        """Fit the turns leaving room for recall's best matches, then recall those older than
        the turns kept (and fit again when what recall used leaves room for one more turn);
        its memory group's, said elsewhere, are never in the window."""
        allowance, found, shared = settings.recall.tokens, candidates.own, candidates.shared
        planned = recaller.fit(found, allowance, settings=settings.recall, shared=shared)
        fit = fit_turns(
            turns,
            available=span.available,
            current_id=span.current_id,
            hold=planned.tokens,
            max_turns=settings.max_turns,
            dates=self._dates,
        )
        if not found and not shared.messages:
            return fit, NOTHING
        members = fit.members
        start = members[0] if members else span.through_id + 1
        left = span.available - fit.tokens
        older = [m for m in found if m.id < start]
        recalled = (
            planned
            if len(older) == len(found) and planned.tokens <= min(allowance, left)
            else recaller.fit(older, min(allowance, left), settings=settings.recall, shared=shared)
        )
        if fit.next_cost is not None and fit.next_cost <= left - recalled.tokens:
            fit = fit_turns(
                turns,
                available=span.available,
                current_id=span.current_id,
                hold=recalled.tokens,
                max_turns=settings.max_turns,
                stop_turns=frozenset(m.turn_id for m in recalled.messages),
                dates=self._dates,
            )
        own = notes(recalled.messages, span.conversation_key, candidates.why)
        shared_notes = notes(recalled.shared, shared.where, candidates.why)
        return fit, replace(recalled, notes=(*own, *shared_notes))

    async def _turns(self, span: _Span, max_turns: int | None) -> list[TurnCost]:
        """The newest turns' costs, newest first, as many as the roomiest fit looks at: read a
        page at a time until a fit stops within them or there are no more."""
        turns: list[TurnCost] = []
        limit = _FIRST_PAGE
        while True:
            page = await self._store.turn_costs(
                conversation_key=span.conversation_key,
                through_id=span.through_id,
                after_turn=span.after_turn,
                before_turn=turns[-1].turn if turns else None,
                limit=limit,
            )
            if not page:
                return turns
            turns.extend(page)
            roomiest = fit_turns(
                turns,
                available=span.available,
                current_id=span.current_id,
                max_turns=max_turns,
                dates=self._dates,
            )
            if roomiest.boundary is not None:
                return turns
            limit = min(limit * 2, _MAX_PAGE)

    async def _search(
        self,
        recaller: Recaller,
        settings: Settings,
        span: _Span,
        query: StoredMessage | None,
        pins: Sequence[Pin],
    ) -> Found:
        """Recall's candidates, best first, searched with the message being answered (for
        ``/stats``: the newest user message), in the conversation and its memory group."""
        key, current_id = span.conversation_key, span.current_id
        if query is None or query.id != current_id:
            if current_id is not None:
                found = await self._store.messages_by_id(conversation_key=key, ids=[current_id])
            else:
                found = await self._store.recent_messages(
                    conversation_key=key,
                    through_id=span.through_id,
                    after_turn=0,
                    limit=_QUERY_LOOKBACK,
                )
            query = next((m for m in found if m.role is Role.USER), None)
        if query is None:
            return Found(())
        return await recaller.find(
            conversation_key=key,
            members=await recaller.members(Conversation.from_key(key), settings.memory_group),
            query=query,
            before_id=query.id,
            pins=pins,
            settings=settings.recall,
        )
