"""Recall: the conversation's earlier messages that match the message being answered.

Messages that have left the recent window (and those folded into the lossy summary) are still
stored. For each prompt, the message being answered is the query: a full-text search (its
terms, and which are too common in the conversation to search: :mod:`.terms`) ranks the
conversation's messages older than the window by bm25 and, when embeddings are on, a cosine
search over their stored vectors ranks them by meaning; the two rankings are fused by
reciprocal rank (each list contributes ``1 / (60 + rank)``). The best few single messages,
with their date and author, go into the prompt as one system message after the summary and
before the recent turns, within ``memory.recall_tokens``.

A conversation whose channel is in a memory group (``/settings memory-group NAME``) also
searches the group's other channels (those of its workspace whose own settings name the group),
after its own: its own matches fill recall first, the group's what is left, under a heading
of their own, each line saying which channel it was said in.

Never recalled: another conversation's messages but those of its memory group (a thread and
its channel are separate), the message being answered, anything in the recent window of the
same prompt, and messages whose text is already in a pin. The vector search is brute force
(:mod:`.vectors`) over the newest ``memory.recall_vector_limit`` embedded messages of each
conversation searched older than the window (the Python here cannot load SQLite extensions
such as sqlite-vec).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bot.core.cost import Meter
from bot.core.memory.group import GROUP_HEADING, NO_SHARED, Shared, channel_label, members
from bot.core.memory.reasons import reasons
from bot.core.memory.terms import document_terms, query_terms, too_common, weight
from bot.core.memory.tokens import MESSAGE_OVERHEAD
from bot.core.memory.vectors import nearest, vector_bytes
from bot.core.models import (
    Conversation,
    Pin,
    Role,
    StoredMessage,
    clean_name,
    quote_lines,
    utc_date,
)
from bot.core.ports.llm import Embedder, Embeddings, LLMError
from bot.core.ports.prompts import RecallNote
from bot.core.ports.store import Store
from bot.core.progress import logged
from bot.core.settings import RecallSettings
from bot.core.wording import counted

log = logging.getLogger(__name__)

RECALL_HEADING = (
    "Earlier messages in this conversation that may be relevant (found by search, oldest "
    "first; the recent messages follow):"
)
MAX_TERMS = 8
"""The rarest terms of a query that are searched for."""
SCORED_DOCS = 400
"""About how many stored messages one search may score: the rarest terms are searched for
first, and a term is left out once the messages holding it would pass this (the rarest is
always searched). Scoring costs grow with the matching messages, and the terms left out are
the commonest, which weigh least in bm25."""
MIN_KEYWORD_SCORE = 0.5
"""The least score of a keyword match: matching only words that a good share of the
conversation's messages hold ("the", "是什") is no match."""
_HITS = 160  # candidates read from each search
_ESTIMATE_SLACK = 8  # lines estimated one by one may come to a few tokens more than together
_RRF_K = 60
QUERY_EMBEDDING_SECONDS = 0.5
"""How long an answer waits for its question's embedding before recalling by keywords only."""


def render_line(message: StoredMessage, where: str = "") -> str:
    """A recalled message's line; ``where``: the channel a memory group's was said in."""
    when = utc_date(message.created_at) + (f" {where}" if where else "")
    if message.role is Role.USER:
        return f"- {when} [{clean_name(message.author_name)}] {quote_lines(message.content)}"
    return f"- {when} [assistant] {quote_lines(message.content)}"


@dataclass(frozen=True)
class Found:
    """Recall's candidates: the conversation's own, best first, and its memory group's."""

    own: Sequence[StoredMessage]
    shared: Shared = NO_SHARED
    why: Mapping[int, str] = field(default_factory=dict)
    """Why each was found, by message id (:func:`.reasons.why`)."""


@dataclass(frozen=True)
class Recalled:
    messages: Sequence[StoredMessage]
    """The conversation's own, oldest first, as shown."""
    text: str
    tokens: int
    """What the recall message costs in the prompt (0 when nothing was recalled)."""
    shared: Sequence[StoredMessage] = ()
    """Its memory group's other channels', oldest first, shown after its own."""
    notes: Sequence[RecallNote] = ()
    """Where each shown was said and why it was chosen, its own first (the prompt log's)."""

    def prompt_message(self) -> dict[str, str]:
        return {"role": "system", "content": self.text}


NOTHING = Recalled(messages=(), text="", tokens=0)


class Recaller:
    def __init__(
        self,
        *,
        store: Store,
        count: Callable[[str], int],
        embedder: Embedder | None = None,
        meter: Meter | None = None,
    ) -> None:
        """``meter``: records each embeddings request with its cost."""
        self._store = store
        self._count = count
        self.embedder = embedder
        self._meter = meter or Meter(ledger=store)
        self.defer: Callable[[str, StoredMessage], None] = lambda key, message: None
        """Embed a message of a conversation (by key) later, in the background (set by
        whoever runs that)."""
        self._heading_tokens = count(RECALL_HEADING) + MESSAGE_OVERHEAD
        self._group_heading_tokens = count(GROUP_HEADING) + 1
        # What a message's line takes beyond its stored count (date, author, newline): the
        # same for every line, as the date has a fixed width.
        sample = {
            role: StoredMessage(0, 0, role, "", "a", "x", 0, 0.0)
            for role in (Role.USER, Role.ASSISTANT)
        }
        self._line_extra = {
            role: count(render_line(message)) - count(message.rendered) + 1
            for role, message in sample.items()
        }

    def uses_vectors(self, settings: RecallSettings) -> bool:
        """Whether recall under ``settings`` searches by meaning (and so wants vectors)."""
        return self.embedder is not None and settings.enabled and settings.embeddings

    async def search(
        self,
        *,
        conversation_key: str,
        query: StoredMessage,
        before_id: int,
        pins: Sequence[Pin],
        settings: RecallSettings,
    ) -> list[StoredMessage]:
        """Candidates before ``before_id``, best first."""
        found = await self.find(
            conversation_key=conversation_key,
            members=(),
            query=query,
            before_id=before_id,
            pins=pins,
            settings=settings,
        )
        return list(found.own)

    async def members(self, conversation: Conversation, group: str | None) -> list[str]:
        """The other channels of ``conversation``'s memory group (:func:`.group.members`)."""
        return await members(self._store, conversation, group)

    async def find(
        self,
        *,
        conversation_key: str,
        members: Sequence[str],
        query: StoredMessage,
        before_id: int,
        pins: Sequence[Pin],
        settings: RecallSettings,
    ) -> Found:
        """The conversation's candidates before ``before_id``, best first, and those of the
        ``members`` of its memory group (each message's text only once, its own first)."""
        matched: dict[int, list[str]] = {}  # the query's words each keyword hit holds
        keyword = await self._keyword_hits(conversation_key, query.content, before_id, matched)
        wanted = await self._query_vector(conversation_key, query, settings)
        nearest_ids = await self._nearest([conversation_key], wanted, before_id, settings)
        where = dict.fromkeys((m.id for m, _ in keyword), conversation_key)
        where.update(dict.fromkeys(nearest_ids, conversation_key))
        seen: set[str] = set()
        own = await self._fused([m for m, _ in keyword], nearest_ids, where, query, pins, seen)
        why = reasons(own, matched, nearest_ids)
        if not members:
            return Found(own, why=why)
        hits: list[tuple[StoredMessage, float]] = []
        where = {}
        for key in members:
            found = await self._keyword_hits(key, query.content, before_id, matched)
            hits.extend(found)
            where.update(dict.fromkeys((m.id for m, _ in found), key))
        owners: dict[int, str] = {}
        nearest_ids = await self._nearest(members, wanted, before_id, settings, owners)
        where.update(owners)
        ranked = [m for m, _ in sorted(hits, key=lambda hit: -hit[1])]
        shared = await self._fused(ranked, nearest_ids, where, query, pins, seen)
        why.update(reasons(shared, matched, nearest_ids))
        return Found(own, Shared(shared, {m.id: where[m.id] for m in shared}), why)

    async def _fused(
        self,
        keyword: Sequence[StoredMessage],
        vector: Sequence[int],
        where: Mapping[int, str],
        query: StoredMessage,
        pins: Sequence[Pin],
        seen: set[str],
    ) -> list[StoredMessage]:
        """The keyword and vector rankings fused by reciprocal rank, best first, without the
        query, texts already ``seen`` (adding those kept) or held in a pin."""
        scores: dict[int, float] = {}
        for ids in ([m.id for m in keyword], vector):
            for rank, message_id in enumerate(ids, 1):
                scores[message_id] = scores.get(message_id, 0.0) + 1.0 / (_RRF_K + rank)
        if not scores:
            return []
        found = list(keyword)
        have = {m.id for m in found}
        missing: dict[str, list[int]] = {}
        for message_id in vector:
            if message_id not in have:
                missing.setdefault(where[message_id], []).append(message_id)
        for key, ids in missing.items():
            found.extend(await self._store.messages_by_id(conversation_key=key, ids=ids))
        pinned = [pin.text for pin in pins]
        ranked: list[StoredMessage] = []
        for message in sorted(found, key=lambda m: (-scores[m.id], -m.id)):
            text = message.content.strip()
            if message.id == query.id or text in seen or any(text in pin for pin in pinned):
                continue
            seen.add(text)
            ranked.append(message)
        return ranked

    def fit(
        self,
        ranked: Sequence[StoredMessage],
        allowance: int,
        *,
        settings: RecallSettings,
        shared: Shared = NO_SHARED,
    ) -> Recalled:
        """The best of ``ranked`` that fit in ``allowance`` tokens, then the best of
        ``shared`` that fit in what is left, as the prompt shows them."""
        chosen: list[StoredMessage] = []
        used = self._heading_tokens
        if allowance <= used:
            return NOTHING
        for message in ranked:
            if len(chosen) >= settings.messages:
                break
            cost = self._line_cost(message)
            if used + cost <= allowance + _ESTIMATE_SLACK:
                chosen.append(message)
                used += cost
        picked: list[StoredMessage] = []
        used += self._group_heading_tokens if shared.messages else 0
        for message in shared.messages:
            if len(chosen) + len(picked) >= settings.messages:
                break
            label = channel_label(shared.where[message.id])
            cost = self._line_cost(message) + self._count(label) + 1
            if used + cost <= allowance + _ESTIMATE_SLACK:
                picked.append(message)
                used += cost
        while chosen or picked:
            shown = sorted(chosen, key=lambda m: m.id)
            others = sorted(picked, key=lambda m: m.id)
            lines = [RECALL_HEADING, *(render_line(m) for m in shown)] if shown else []
            if others:
                lines.append(GROUP_HEADING)
                lines.extend(render_line(m, channel_label(shared.where[m.id])) for m in others)
            text = "\n".join(lines)
            tokens = self._count(text) + MESSAGE_OVERHEAD
            if tokens <= allowance:
                return Recalled(messages=shown, text=text, tokens=tokens, shared=others)
            # The lowest ranked, the group's first: lines counted apart are a few tokens off.
            (picked or chosen).pop()
        return NOTHING

    def _line_cost(self, message: StoredMessage) -> int:
        """About what the message's line takes, from its count at insert (the recall text is
        counted exactly once the lines are chosen)."""
        return message.tokens + self._line_extra[message.role]

    async def _keyword_hits(
        self,
        conversation_key: str,
        text: str,
        before_id: int,
        matched: dict[int, list[str]] | None = None,
    ) -> list[tuple[StoredMessage, float]]:
        """The conversation's messages that hold the query's rarest terms there (those too
        common in it left out, :func:`.terms.too_common`), best first, with their scores
        (``matched``: told the terms each holds, by id, rarest first)."""
        terms = query_terms(text)
        if not terms:
            return []
        counts = await self._store.term_counts(conversation_key=conversation_key, terms=terms)
        messages = await self._store.count_messages(conversation_key=conversation_key)
        usable = sorted(
            (t for t in terms if counts.get(t, 0) > 0 and not too_common(counts[t], messages)),
            key=lambda t: counts[t],
        )
        if not usable:
            return []
        searched, docs = usable[:1], counts[usable[0]]
        for term in usable[1:MAX_TERMS]:
            docs += counts[term]
            if docs > SCORED_DOCS:
                break
            searched.append(term)
        hits = await self._store.search_messages(
            conversation_key=conversation_key, terms=searched, before_id=before_id, limit=_HITS
        )
        # What the terms a message holds are worth within this conversation, so that another
        # channel's words never lower it (the store's order weighs them over all it holds).
        worth = {term: weight(counts[term], messages) for term in searched}
        rarest = max(searched, key=lambda term: worth[term])
        scored: list[tuple[StoredMessage, float]] = []
        for found in hits:
            # A word the tokenizer folds (diacritics) may match without being spelled alike.
            held = document_terms(found.content).intersection(searched) or {rarest}
            score = sum(worth[term] for term in held)
            if score >= MIN_KEYWORD_SCORE:
                scored.append((found, score))
                if matched is not None:
                    matched[found.id] = [term for term in searched if term in held]
        return sorted(scored, key=lambda hit: -hit[1])

    async def _query_vector(
        self, key: str, query: StoredMessage, settings: RecallSettings
    ) -> bytes | None:
        """The embedding of a query in conversation ``key`` (None: recall by meaning is off,
        or must do without it)."""
        if self.embedder is None or not settings.embeddings:
            return None
        model = self.embedder.model
        asymmetric = self.embedder.asymmetric
        # A question embedded as a question is not the vector later searches compare with:
        # then the message's own (as a stored message) is made in the background.
        kept = query.id > 0 and not asymmetric  # not a search's text, nor marked as a question
        stored = await self._store.vector(message_id=query.id, model=model) if kept else None
        if stored is None:
            try:
                async with asyncio.timeout(QUERY_EMBEDDING_SECONDS):
                    embedded = await self.embedder.embed([query.content], query=asymmetric)
                await self._record(Conversation.from_key(key), embedded, [query.content])
                stored = vector_bytes(embedded.vectors[0])
            except TimeoutError:
                # The embeddings server is busy (a backlog of messages to embed): the answer
                # does not wait; this one is embedded with the rest.
                log.info("recall by meaning skipped for message %d: embeddings busy", query.id)
                if query.id > 0:
                    self.defer(key, query)
                return None
            except LLMError as exc:
                log.warning("recall by meaning skipped: embeddings failed (%s)", exc)
                return None
            if kept:
                await self._store.save_vector(
                    message_id=query.id, content=query.content, model=model, vector=stored
                )
            elif query.id > 0:
                self.defer(key, query)
        return stored

    async def _nearest(
        self,
        keys: Sequence[str],
        wanted: bytes | None,
        before_id: int,
        settings: RecallSettings,
        owners: dict[int, str] | None = None,
    ) -> list[int]:
        """The ids of the messages of the conversations ``keys`` nearest ``wanted`` in
        meaning, nearest first (``owners``: told each one's conversation)."""
        if wanted is None or self.embedder is None:
            return []
        rows: list[tuple[int, bytes]] = []
        for key in keys:
            found = await self._store.vectors(
                conversation_key=key,
                before_id=before_id,
                model=self.embedder.model,
                limit=settings.vector_limit,
            )
            rows.extend(found)
            if owners is not None:
                owners.update(dict.fromkeys((message_id for message_id, _ in found), key))
        return await nearest(wanted, rows, floor=settings.min_similarity, limit=_HITS)

    async def backfill(self, *, before_id: int, batch: int = 64) -> int:
        """Embed the messages before ``before_id`` stored without a vector (before embeddings
        were on, or when embedding failed), newest first, ``batch`` per request; stops at the
        first failure (the next start tries again). Returns how many were embedded."""
        if self.embedder is None:
            return 0
        model = self.embedder.model
        embedded = 0
        before = before_id
        progress = logged(
            "embedding stored messages", total=None, unit="message", logger=log, final=False
        )
        with progress:
            while rows := await self._store.unembedded(before_id=before, model=model, limit=batch):
                try:
                    await self._embed(self.embedder, rows, None)
                except LLMError as exc:
                    log.warning("embedding stored messages stopped after %d (%s)", embedded, exc)
                    break
                embedded += len(rows)
                before = rows[-1][0]
                progress.advance(len(rows))
        if embedded:
            log.info("embedded %d stored messages for recall by meaning", embedded)
        return embedded

    async def embed_messages(
        self, conversation: Conversation, messages: Sequence[StoredMessage]
    ) -> None:
        """Store the vectors of messages of ``conversation``, in one request (called in the
        background; a failure is logged, and those messages are embedded at the next
        start)."""
        if self.embedder is None:
            return
        wanted = [message for message in messages if message.content.strip()]
        if not wanted:
            return
        try:
            rows = [(message.id, message.content) for message in wanted]
            await self._embed(self.embedder, rows, conversation)
        except LLMError as exc:
            log.warning(
                "embedding %s failed (%s); keyword recall only for them until the next start",
                counted(len(wanted), "message"),
                exc,
            )

    async def _embed(
        self,
        embedder: Embedder,
        rows: Sequence[tuple[int, str]],
        conversation: Conversation | None,
    ) -> None:
        """Embed ``(message id, content)`` rows in one request, recorded for
        ``conversation`` (None: a backlog, of any), and store their vectors; raises
        :class:`LLMError` when the request fails."""
        texts = [content for _, content in rows]
        embedded = await embedder.embed(texts)
        await self._record(conversation, embedded, texts)
        for (message_id, content), vector in zip(rows, embedded.vectors, strict=True):
            await self._store.save_vector(
                message_id=message_id,
                content=content,
                model=embedder.model,
                vector=vector_bytes(vector),
            )

    async def _record(
        self, conversation: Conversation | None, embedded: Embeddings, texts: Sequence[str]
    ) -> None:
        """Record an embeddings request (for no one in particular); the bot's own count of
        ``texts`` when the server did not say."""
        await self._meter.record(
            conversation=conversation,
            person="",
            purpose="embedding",
            model=embedded.model,
            prompt_tokens=embedded.prompt_tokens,
            completion_tokens=0,
            counted=(sum(self._count(text) for text in texts), 0),
        )
