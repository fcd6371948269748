"""The core's turn: record the message, assemble the prompt, ask the model, store the answer.

The platform handler (:mod:`bot.core.handler`) hands it
:class:`~bot.core.models.IncomingMessage` and :class:`~bot.core.models.CommandCall` values and
gets :class:`~bot.core.models.Reply` values back. Each turn and command asks
:class:`~bot.core.settings.SettingsSource` for the settings of its conversation first and passes
them down; summaries and embeddings follow in the background (:mod:`.background`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.config import Config
from bot.core.answering import Asker, Progress, Show
from bot.core.background import Background, needs_summary
from bot.core.caps import Caps
from bot.core.cost import Meter
from bot.core.edits import MessageEdits
from bot.core.leases import Leases
from bot.core.locks import Locks
from bot.core.memory.calibration import Calibrator, Gauge
from bot.core.memory.importance import score
from bot.core.memory.recall import Recaller
from bot.core.memory.scripts import ScriptTokens
from bot.core.memory.summarizer import Summarizer
from bot.core.memory.tokens import ChatTokenizer
from bot.core.models import (
    Conversation,
    IncomingMessage,
    Person,
    Reply,
    ReplyKind,
    Role,
    StoredMessage,
    Summary,
    prompt_speakers,
    render_content,
)
from bot.core.observe import NoObserver, Observer
from bot.core.ports.charts import Charts
from bot.core.ports.llm import ChatModels, Embedder, LLMError, clean_text
from bot.core.ports.store import Duplicate, StorageError, Store
from bot.core.prompt.assembler import Assembler, Prompt, PromptTooLarge, Speaker
from bot.core.prompt.budget import build_within
from bot.core.prompt_log import PromptRecorder
from bot.core.settings import Settings, SettingsSource
from bot.core.wording import counted

log = logging.getLogger(__name__)

_COUNT_IN_THREAD = 20_000  # characters; longer texts are tokenized off the event loop


@dataclass(frozen=True)
class Pending:
    """An addressed message, stored, not yet answered (:meth:`Engine.accept`)."""

    message: IncomingMessage
    stored: StoredMessage


@dataclass(frozen=True)
class Preview:
    """The prompt the next message would get, for ``/stats``."""

    prompt: Prompt
    stored_messages: int
    settings: Settings
    """What the prompt was built with."""


class Engine(MessageEdits):
    def __init__(
        self,
        *,
        config: Config,
        settings: SettingsSource,
        store: Store,
        chat: ChatModels,
        summarizer: Summarizer,
        tokenizer: ChatTokenizer,
        calibrator: Calibrator,
        charts: Charts,
        observer: Observer | None = None,
        embedder: Embedder | None = None,
        leases: Leases | None = None,
        meter: Meter | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``meter``: records each model call with its cost (the summarizer's too: one
        shared, so that both follow :attr:`clock`)."""
        self.config = config
        """The platform options adapters read (catch-up, reply length); what a turn uses
        comes from ``settings``."""
        self.settings = settings
        self.store = store
        self.summarizer = summarizer
        self.tokenizer = tokenizer
        self.calibrator = calibrator
        self.charts = charts
        self.asker = Asker(models=chat, gauge=self.gauge)
        """Asks the conversation's chat model (``bot eval`` replaces its models to record
        the calls)."""
        self.observer: Observer = observer or NoObserver()
        self.meter = meter or Meter(ledger=store)
        self.caps = Caps(meter=self.meter, config=config.budgets, settings=settings)
        self.clock = clock
        self.leases = leases or Leases(store)
        """This process's leases: the messages it awaits the answer of are held under its
        name, and work one process does at a time under its leases."""
        self.recaller = Recaller(
            store=store, count=tokenizer.count, embedder=embedder, meter=self.meter
        )
        self.assembler = Assembler(store=store, tokenizer=tokenizer, recaller=self.recaller)
        self.prompts = PromptRecorder(log=store, page=config.http.page, clock=lambda: self.clock())
        self._reply_locks = Locks()
        # Messages of one conversation are stored in the order they arrived, even when one
        # is counted off the event loop or opens the conversation.
        self._record_locks = Locks()
        # Messages answered whose leaving the store's queue failed (storage failing): retried.
        self._unfinished: set[int] = set()
        # Tasks answering a message right now, so that shutdown can finish or abandon them.
        self._replying: set[asyncio.Task[object]] = set()
        self.background = Background(
            summarizer=summarizer,
            recaller=self.recaller,
            observer=self.observer,
            budget=self.budget,
            leases=self.leases,
            caps=self.caps,
        )

    @property
    def clock(self) -> Callable[[], float]:
        """When an answer or a model call is made, in seconds since the epoch (a replay's
        own time; tests set it)."""
        return self.meter.clock

    @clock.setter
    def clock(self, clock: Callable[[], float]) -> None:
        self.meter.clock = clock

    # -- messages -------------------------------------------------------------------------

    def gauge(self, model: str) -> Gauge:
        """The calibration of ``model``'s count against ours (stored messages are counted
        once, with the default chat model's tokenizer)."""
        return self.calibrator.gauge(model, self.tokenizer.count)

    async def count(self, text: str) -> int:
        if len(text) > _COUNT_IN_THREAD:
            return await asyncio.to_thread(self.tokenizer.count, text)
        return self.tokenizer.count(text)

    async def settings_for(self, conversation: Conversation) -> Settings:
        """The settings the conversation's turns and commands use now."""
        return await self.settings.for_conversation(conversation)

    def budget(self, settings: Settings, mix: ScriptTokens | None = None) -> int:
        """The prompt budget under ``settings``, calibrated for their chat model, for a prompt
        whose tokens split by script as ``mix`` (None: as the model's latest prompt did)."""
        return self.gauge(settings.chat_model).budget(settings.max_context_tokens, mix)

    async def record(
        self, message: IncomingMessage, *, embed: bool = True, awaited: bool = False
    ) -> StoredMessage:
        """Store a message without answering it (``embed``: and embed it in the background,
        when recall by meaning is on; a message about to be answered is embedded as recall's
        query instead; ``awaited``: it awaits this process's answer, in the store's queue)."""
        text = clean_text(message.text)
        name = clean_text(message.author_name) or message.author_id
        async with self._record_locks(message.conversation.key):
            stored = await self.store.add_message(
                conversation=message.conversation,
                role=Role.USER,
                author_id=message.author_id,
                author_name=name,
                content=text,
                tokens=await self.count(render_content(Role.USER, name, text)),
                message_id=message.message_id,
                created_at=message.sent_at.timestamp(),
                importance=score(text),
                awaited_by=self.leases.holder if awaited else None,
            )
        self.observer.message_in(platform=message.conversation.platform)
        if embed:
            await self._embed(message.conversation, stored)
        return stored

    async def backfill_embeddings(self) -> None:
        """Embed the messages already stored without a vector, in the background (recall by
        meaning on a history kept before it was turned on); messages stored from now on are
        embedded as they come."""
        embedder = self.recaller.embedder
        if embedder is None:
            return
        newest = await self.store.unembedded(before_id=None, model=embedder.model, limit=1)
        if newest:
            self.background.backfill_embeddings(before_id=newest[0][0] + 1)

    async def _embed(self, conversation: Conversation, stored: StoredMessage) -> None:
        """Embed a stored message in the background, for recall by meaning."""
        self.background.embed(conversation, stored, await self.settings_for(conversation))

    async def handle_message(self, message: IncomingMessage) -> Reply | None:
        """Store the message; answer it when it is addressed to the bot."""
        accepted = await self.accept(message)
        if isinstance(accepted, Pending):
            try:
                return await self.answer(accepted)
            finally:
                await self.finish(accepted)
        return accepted

    async def accept(self, message: IncomingMessage) -> Pending | Reply | None:
        """Store the message now; an addressed one comes back :class:`Pending`, to be given
        to :meth:`answer` later, then :meth:`finish`. For adapters that must keep a message
        the moment they acknowledge it but answer it in its turn."""
        if not clean_text(message.text).strip():
            if message.addressed:
                return Reply("Your message was empty.", kind=ReplyKind.INFO, ephemeral=True)
            return None
        try:
            stored = await self.record(
                message, embed=not message.addressed, awaited=message.addressed
            )
        except Duplicate:
            log.info("ignoring %s: already stored", message.message_id)
            return None  # stored (and answered, if it was for the bot) by its first delivery
        if not message.addressed:
            return None
        return Pending(message=message, stored=stored)

    async def answer(
        self, pending: Pending, *, show: Show | None = None, progress: Progress | None = None
    ) -> Reply:
        """Answer an accepted message, streamed to ``show`` as it is written when given, its
        phases told to ``progress`` (the
        handler links the stored answer to the platform message it is sent as,
        :meth:`attach_message_id`, then calls :meth:`finish`)."""
        task = asyncio.current_task()
        if task is not None:
            self._replying.add(task)
        try:
            conversation = pending.message.conversation
            return await self._reply(conversation, pending.stored, show, progress)
        finally:
            if task is not None:
                self._replying.discard(task)

    async def finish(self, pending: Pending) -> None:
        """The accepted message no longer awaits an answer (it was answered, or given up):
        the next of its conversation may be answered, and summaries may fold it."""
        await self.finish_stored(pending.stored.id)

    async def finish_stored(self, stored_id: int) -> None:
        """:meth:`finish`, by the message's stored id; when the store fails, tried again by
        :meth:`retry_finished`."""
        try:
            await self.store.answered(stored_id=stored_id)
        except StorageError:
            self._unfinished.add(stored_id)
        else:
            self._unfinished.discard(stored_id)

    async def retry_finished(self) -> None:
        """Take out of the store's queue the answered messages it failed to take out."""
        for stored_id in sorted(self._unfinished):
            await self.finish_stored(stored_id)

    async def _reply(
        self,
        conversation: Conversation,
        stored: StoredMessage,
        show: Show | None,
        progress: Progress | None,
    ) -> Reply:
        settings = await self.settings_for(conversation)
        speaker = Speaker(Person.of(conversation, stored.author_id), stored.author_name)

        async def build(limit: int) -> Prompt:
            return await self._build(
                conversation, settings, limit, stored.id, current=stored, speaker=speaker
            )

        def speakers(prompt: Prompt) -> set[str]:
            return {stored.author_name, *prompt_speakers(prompt.messages)}

        async with self._reply_locks(conversation.key):
            check = await self.caps.check(conversation, stored.author_id, settings)
            if refusal := self.caps.refuse(check):
                return refusal
            try:
                streamed = show if settings.stream else None
                answered = await self.asker.ask(
                    build, settings, speakers, show=streamed, progress=progress
                )
            except PromptTooLarge as exc:
                self.observer.error(kind="prompt_too_large")
                return Reply(str(exc), kind=ReplyKind.ERROR)
            except LLMError as exc:
                log.warning("chat model failed for %s: %s", conversation.key, exc)
                return Reply(exc.user_message, kind=ReplyKind.ERROR)
            prompt, text = answered.prompt, answered.text
            answer = await self.store.add_message(
                conversation=conversation,
                role=Role.ASSISTANT,
                author_id="assistant",
                author_name="assistant",
                content=text,
                tokens=await self.count(text),
                message_id=None,
                created_at=self.clock(),
                reply_to=stored.id,
            )
            self.background.embed(conversation, answer, settings)
            await self.meter.record(
                conversation=conversation,
                person=stored.author_id,
                purpose="chat",
                model=answered.model,
                prompt_tokens=answered.prompt_tokens,
                cached_tokens=answered.cached_tokens,
                completion_tokens=answered.completion_tokens,
                counted=(prompt.tokens, answer.tokens),
            )
            gauge = self.gauge(answered.model)
            await gauge.observe(prompt.messages, prompt.tokens, answered.prompt_tokens)
        await self.prompts.record(conversation, stored, answered)
        self.observer.reply_out(platform=conversation.platform)
        self.observer.context_fill(ratio=prompt.fill)
        shown = await check.noted(text)  # before a summary's call can be summed with it
        if needs_summary(prompt, settings):
            self.background.schedule_summary(conversation, settings)
        return Reply(shown, stored_id=answer.id)

    # -- background work ---------------------------------------------------------------

    def needs_summary(self, prompt: Prompt, settings: Settings) -> bool:
        """Whether a compaction should follow this prompt (scheduled after the reply)."""
        return needs_summary(prompt, settings)

    async def schedule_summary(self, conversation: Conversation) -> None:
        """Compact in the background: replies never wait for a summary."""
        self.background.schedule_summary(conversation, await self.settings_for(conversation))

    async def summarize(self, conversation: Conversation) -> Summary | None:
        """Compact now (one compaction per conversation at a time)."""
        return await self.background.summarize(conversation, await self.settings_for(conversation))

    async def drain(self, *, within: float | None = None) -> None:
        """Wait up to ``within`` seconds for background summaries and embeddings (``bot
        chat`` at end of input)."""
        await self.background.drain(within=within)

    async def aclose(self, *, grace: float = 10.0) -> None:
        """Give replies in flight, then background summaries, ``grace`` seconds each, then
        cancel them: an abandoned reply's question is already stored, no answer is invented."""
        replying = self._replying - {asyncio.current_task()}
        if replying:
            in_flight = counted(len(replying), "reply", "replies")
            log.info("waiting up to %.0f s for %s in flight", grace, in_flight)
            _, pending = await asyncio.wait(replying, timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                log.warning("abandoned %s at shutdown", counted(len(pending), "reply", "replies"))
                await asyncio.wait(pending)
        await self.background.aclose(grace=grace)

    # -- views ----------------------------------------------------------------------------

    async def preview(
        self, conversation: Conversation, *, speaker: Speaker | None = None
    ) -> Preview:
        """The next prompt, as it would be if ``speaker`` wrote the next message."""
        settings = await self.settings_for(conversation)
        through = await self.store.last_message_id(conversation_key=conversation.key)
        limit = settings.max_context_tokens
        prompt = await self._build(conversation, settings, limit, through, speaker=speaker)
        stored = await self.store.count_messages(conversation_key=conversation.key)
        return Preview(prompt=prompt, stored_messages=stored, settings=settings)

    async def _build(
        self,
        conversation: Conversation,
        settings: Settings,
        limit: int,
        through_id: int | None,
        *,
        current: StoredMessage | None = None,
        speaker: Speaker | None = None,
    ) -> Prompt:
        """The conversation's prompt through ``through_id`` answering ``current``, the
        server's count of it within ``limit``."""
        return await build_within(
            lambda budget: self.assembler.build(
                settings=settings,
                conversation_key=conversation.key,
                channel_key=conversation.channel_key,
                through_id=through_id,
                current_id=current.id if current else None,
                budget=budget,
                query=current,
                speaker=speaker,
            ),
            limit=limit,
            gauge=self.gauge(settings.chat_model),
        )

    async def reset(self, conversation: Conversation, *, include_pins: bool) -> int:
        """Forget the conversation (and its channel's pins). Profiles are left alone: they
        belong to the people, who delete them with ``/forget``."""
        # A summary in flight is discarded when it finds the conversation's generation moved.
        async with self._reply_locks(conversation.key):
            return await self.store.reset(conversation=conversation, include_pins=include_pins)
