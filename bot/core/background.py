"""Work that follows a turn without holding up its reply: summaries and embeddings.

Summaries run one per conversation at a time, after the reply that found the prompt too full;
a failed one is retried after ``summary.retry_seconds``. Stored messages are embedded for
recall by meaning as they come, in batches from one queue (and those stored before embeddings
were on, on request). At shutdown the tasks still running get a grace period, then are
cancelled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable

from bot.core.caps import CapReached, Caps
from bot.core.leases import Leases
from bot.core.locks import Locks
from bot.core.memory.recall import Recaller
from bot.core.memory.summarizer import Summarizer
from bot.core.models import Conversation, StoredMessage, Summary
from bot.core.observe import Observer
from bot.core.ports.llm import LLMError
from bot.core.ports.store import StorageError
from bot.core.prompt.layout import Prompt
from bot.core.settings import Settings
from bot.core.wording import counted

log = logging.getLogger(__name__)

EMBEDDING_BATCH = 64
"""Messages embedded per request in the background."""


class SummaryBusy(Exception):
    """Another process is summarizing the conversation."""


def needs_summary(prompt: Prompt, settings: Settings) -> bool:
    """Whether a compaction should follow this prompt (scheduled after the reply)."""
    if not settings.uses_summary:
        return False
    return prompt.turns_left_out or prompt.fill_without_recall > settings.summary.threshold


class Background:
    """The background tasks of one engine."""

    def __init__(
        self,
        *,
        summarizer: Summarizer,
        recaller: Recaller,
        observer: Observer,
        budget: Callable[[Settings], int],
        leases: Leases,
        caps: Caps | None = None,
    ) -> None:
        """``budget`` gives the calibrated budget under some settings; ``leases``, this
        process's: a conversation is summarized by one process at a time, and the stored
        messages are embedded by one; ``caps``: no summary is made past a cap covering it."""
        self._summarizer = summarizer
        self._recaller = recaller
        self._observer = observer
        self._budget = budget
        self._leases = leases
        self._caps = caps
        self._summary_locks = Locks()
        self._summary_tasks: dict[str, asyncio.Task[None]] = {}
        self._summary_retry_at: dict[str, float] = {}
        self._embedding: set[asyncio.Task[None]] = set()
        self._to_embed: deque[tuple[str, StoredMessage]] = deque()
        self._embedder: asyncio.Task[None] | None = None
        recaller.defer = self._queue_embedding

    def summarizing(self, conversation: Conversation) -> bool:
        """Whether a background summary of the conversation is running."""
        return conversation.key in self._summary_tasks

    # -- summaries -----------------------------------------------------------------------

    def schedule_summary(self, conversation: Conversation, settings: Settings) -> None:
        """Compact in the background: replies never wait for a summary."""
        key = conversation.key
        if key in self._summary_tasks or time.monotonic() < self._summary_retry_at.get(key, 0):
            return
        task = asyncio.create_task(
            self._background_summary(conversation, settings), name=f"summary {key}"
        )
        self._summary_tasks[key] = task
        task.add_done_callback(lambda _: self._summary_tasks.pop(key, None))

    async def _background_summary(self, conversation: Conversation, settings: Settings) -> None:
        try:
            await self.summarize(conversation, settings)
        except LLMError as exc:
            delay = settings.summary.retry_seconds
            self._summary_retry_at[conversation.key] = time.monotonic() + delay
            log.warning(
                "summary of %s failed (%s); history kept, retrying after %.0f s",
                conversation.key,
                exc,
                delay,
            )
        except SummaryBusy:
            log.debug("summary of %s left to the process making one", conversation.key)
        except CapReached as exc:
            log.info("summary of %s skipped: %s", conversation.key, exc)
        except StorageError:
            self._observer.error(kind="summary")  # the store logged the cause
        except Exception:
            self._observer.error(kind="summary")
            log.exception("summary of %s failed", conversation.key)

    async def summarize(self, conversation: Conversation, settings: Settings) -> Summary | None:
        """Compact now (one compaction per conversation at a time, among all the processes
        on the store: :class:`SummaryBusy` when another one is making it). The messages
        still awaiting an answer, and those after them, are never folded: the prompt built
        for them would miss them. :class:`CapReached` when a cap covering it is reached."""
        key = conversation.key
        if self._caps is not None:
            await self._caps.allow_summary(conversation, settings)
        async with self._summary_locks(key), self._leases.held(f"summary:{key}") as ours:
            if not ours:
                raise SummaryBusy(key)
            summary = await self._summarizer.compact(
                conversation,
                settings=settings,
                budget=self._budget(settings),
                before_turn=await self._leases.store.first_awaiting(conversation_key=key),
            )
        if summary is not None:
            self._observer.summary_made()
            self._summary_retry_at.pop(conversation.key, None)
            log.info(
                "summarized %s: %s through turn %d (%s)",
                conversation.key,
                counted(summary.message_count, "message"),
                summary.covers_through_turn,
                "rebuilt" if summary.rebuilt else "incremental",
            )
        return summary

    # -- embeddings ----------------------------------------------------------------------

    def embed(self, conversation: Conversation, stored: StoredMessage, settings: Settings) -> None:
        """Embed a stored message of ``conversation`` in the background, when recall by
        meaning is on."""
        if self._recaller.uses_vectors(settings.recall):
            self._queue_embedding(conversation.key, stored)

    def _queue_embedding(self, conversation_key: str, stored: StoredMessage) -> None:
        """Messages wait in one queue, embedded :data:`EMBEDDING_BATCH` a request, one request
        at a time: a busy channel (or a catch-up) never floods the embeddings server, so a
        question's own embedding waits for one request at most."""
        self._to_embed.append((conversation_key, stored))
        if self._embedder is None or self._embedder.done():
            task = asyncio.create_task(self._embed_queued(), name="embed messages")
            self._embedder = task
            self._embedding.add(task)
            task.add_done_callback(self._embedding.discard)

    async def _embed_queued(self) -> None:
        while self._to_embed:
            batch = [
                self._to_embed.popleft() for _ in range(min(EMBEDDING_BATCH, len(self._to_embed)))
            ]
            # One request per conversation in the batch (usually one): each conversation's
            # spend is then what its own request cost, not a share guessed from a mixed one.
            by_conversation: dict[str, list[StoredMessage]] = {}
            for key, stored in batch:
                by_conversation.setdefault(key, []).append(stored)
            for key, messages in by_conversation.items():
                try:
                    await self._recaller.embed_messages(Conversation.from_key(key), messages)
                except Exception:
                    log.exception("embedding %s failed", counted(len(messages), "message"))

    @property
    def embedding_backlog(self) -> int:
        """Messages waiting to be embedded."""
        return len(self._to_embed)

    def backfill_embeddings(self, *, before_id: int) -> None:
        """Embed the messages stored before ``before_id`` without a vector, in the
        background."""
        task = asyncio.create_task(
            self._embed_stored(before_id=before_id), name="embed stored messages"
        )
        self._embedding.add(task)
        task.add_done_callback(self._embedding.discard)

    async def _embed_stored(self, *, before_id: int) -> None:
        try:
            async with self._leases.held("embeddings:backfill") as ours:
                if not ours:
                    log.info("another process is embedding the stored messages")
                    return
                await self._recaller.backfill(before_id=before_id)
        except Exception:
            log.exception("embedding stored messages failed")

    # -- shutdown ------------------------------------------------------------------------

    def _tasks(self) -> list[asyncio.Task[None]]:
        return [*self._summary_tasks.values(), *self._embedding]

    async def drain(self, *, within: float | None = None) -> None:
        """Wait up to ``within`` seconds for the background tasks."""
        tasks = self._tasks()
        if tasks:
            await asyncio.wait(tasks, timeout=within)

    async def aclose(self, *, grace: float) -> None:
        """Give the background tasks ``grace`` seconds, then cancel them."""
        tasks = self._tasks()
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
