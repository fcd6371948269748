"""What every platform shares, between its adapter and the engine.

Adapters translate platform events into :mod:`bot.core.models` values and hand them here;
answers go out through the :class:`~bot.core.ports.platform.Outbox` an adapter gives with
each message. The rules kept here, the same on every platform:

- Arrival and answer order: a conversation's messages are stored one at a time in the order
  they came, and answered in that order, each stored at once even while an earlier one is
  being answered. The order holds across the processes sharing a store: a message awaits its
  answer in the store's queue, and is answered once no earlier one of its conversation awaits
  one (waiting at most :data:`ORDER_WAIT_SECONDS`).
- Taking over: the messages a process that stopped or died left unanswered are answered by
  another (or by the same one, restarted) once its lease runs out (:meth:`Handler.take_over`).
- Threads: a thread's conversation starts with a copy of the message it hangs from (when its
  channel's conversation has it; its pins are the channel's anyway), and an edit or deletion
  of that message reaches the copy too. A thread the bot has answered in (or that hangs from
  one of its answers) is followed: its later messages are answered without a mention, also
  after a restart (memory says so).
- De-duplication: a message delivered twice is stored (and answered) once, by the store; a
  reaction event or a platform request delivered again acts once.
- Linking: an answer, once sent, takes the platform id of its message.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from bot.core.commands import run_command
from bot.core.engine import Engine, Pending
from bot.core.models import (
    CommandCall,
    Conversation,
    Deletion,
    Edit,
    IncomingMessage,
    Reaction,
    Reply,
    ReplyKind,
)
from bot.core.ports.leases import Awaiting
from bot.core.ports.platform import Outbox, ShowsProgress
from bot.core.ports.store import Duplicate, StorageError
from bot.core.settings import Answering, Recording
from bot.core.wording import counted

log = logging.getLogger(__name__)

REMEMBERED = 4096
"""Threads (followed, seeded) and event ids kept in memory; what falls out is asked of the
store again."""
GRACE_SECONDS = 10.0
"""How long shutdown waits for work in flight (answers being made and sent)."""
STORAGE_NOTICE = (
    "I couldn't save that message: the bot's storage is failing; an operator has been told"
)
_REQUESTS_KEPT = 86_400.0  # seconds; Slack replays a signed request for at most five minutes
ORDER_WAIT_SECONDS = 120.0
"""The longest an answer waits for an earlier message of its conversation, answered by
another process (or one that died, until it is taken over)."""
SWEEP_SECONDS = 5.0
"""How often a process looks for messages left unanswered by one that is gone."""
TAKE_OVER_WITHIN = 3600.0
"""Messages left unanswered longer ago than this are given up, not answered so late."""
_TAKEN_AT_ONCE = 100


@dataclass(frozen=True)
class Turn:
    """A stored message that still needs an answer (or the answer it already has), with its
    place in its conversation's answer order."""

    incoming: IncomingMessage
    accepted: Pending | Reply
    previous: asyncio.Future[None] | None
    """Done when the message before it in the conversation has been answered."""
    done: asyncio.Future[None]


Prepare = Callable[[Turn], Awaitable[Turn]]
"""What an adapter does to a turn once its place in the order comes, before it is answered
(Slack: give the stored message its author's name, looked up meanwhile)."""
OutboxFor = Callable[[Conversation, Awaiting], Outbox | None]
"""Where the answer to a stored message goes, for a message this process did not receive
(taken over from one that is gone; replacing what it showed meanwhile, ``shown_as``); None
when it cannot be answered from here."""


def with_own_thread(conversation: Conversation, message_id: str) -> list[Conversation]:
    """A channel message is in its channel's conversation and, copied, in the conversation of
    the thread that hangs from it (a thread's key is its root message's id)."""
    if conversation.thread is None:
        return [conversation, replace(conversation, thread=message_id)]
    return [conversation]


class _Keys:
    """The most recent keys, at most :data:`REMEMBERED`."""

    def __init__(self) -> None:
        self._keys: OrderedDict[str, None] = OrderedDict()

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def add(self, key: str) -> None:
        self._keys[key] = None
        self._keys.move_to_end(key)
        if len(self._keys) > REMEMBERED:
            self._keys.popitem(last=False)


class Handler:
    """One platform's events on the engine."""

    def __init__(self, *, engine: Engine) -> None:
        self.engine = engine
        self._followed = _Keys()
        self._seeded = _Keys()
        self._delivered = _Keys()
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._answering: dict[str, asyncio.Future[None]] = {}
        """Per conversation: done when its latest accepted message has been answered."""
        self._work: set[asyncio.Task[Any]] = set()
        self._told: dict[str, int] = {}
        """The storage incident each conversation was last told about."""
        self._sweeper: asyncio.Task[None] | None = None

    # -- order -----------------------------------------------------------------------------

    def in_order(self, conversation: Conversation) -> asyncio.Lock:
        """The lock a conversation's messages are stored under, one at a time (``asyncio.Lock``
        wakes waiters first come, first served)."""
        lock = self._locks.get(conversation.key)
        if lock is None:
            lock = self._locks[conversation.key] = asyncio.Lock()
        return lock

    # -- messages --------------------------------------------------------------------------

    async def handle(self, incoming: IncomingMessage, outbox: Outbox) -> None:
        """Store the message and, when it is for the bot, answer it in its turn."""
        with self._tracked():
            turn = await self.take(incoming)
            if turn is not None:
                await self.answer(turn, outbox)

    async def take(self, incoming: IncomingMessage) -> Turn | None:
        """Store the message now, in its conversation's order; what still needs an answer
        (given to :meth:`answer`, which must follow), if anything. For adapters that must keep
        a message the moment they acknowledge it and answer it later."""
        conversation = incoming.conversation
        async with self.in_order(conversation):
            await self._seed(conversation)  # first: a thread on the bot's answer is followed
            kept = await self._addressed(incoming)
            if kept is None:
                return None
            incoming = kept
            accepted = await self.engine.accept(incoming)
            if accepted is None:
                return None
            if conversation.thread is not None and isinstance(accepted, Pending):
                # Followed from now on: a reply sent while this one is answered is for it.
                self._followed.add(conversation.key)
            previous = self._answering.get(conversation.key)
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._answering[conversation.key] = done
        return Turn(incoming, accepted, previous, done)

    async def answer(self, turn: Turn, outbox: Outbox, *, prepare: Prepare | None = None) -> None:
        """Answer a taken message once the one before it is answered (by this process or
        another), through ``outbox``. An answer abandoned at shutdown leaves its message
        awaiting one: the next process to start answers it."""
        key = turn.incoming.conversation.key
        abandoned = False
        try:
            if turn.previous is not None:
                await asyncio.wait([turn.previous])
            if isinstance(turn.accepted, Pending):
                await self._earlier_answered(key, turn.accepted.stored.id)
            if prepare is not None:
                turn = await prepare(turn)
            await self._reply(turn, outbox)
        except asyncio.CancelledError:
            abandoned = True
            raise
        finally:
            if isinstance(turn.accepted, Pending) and not abandoned:
                await self.engine.finish(turn.accepted)
            turn.done.set_result(None)
            if self._answering.get(key) is turn.done:
                del self._answering[key]

    async def _earlier_answered(self, key: str, stored_id: int) -> None:
        """Wait until no earlier message of the conversation awaits an answer, from any
        process (at most :data:`ORDER_WAIT_SECONDS`)."""
        loop = asyncio.get_running_loop()
        deadline, pause = loop.time() + ORDER_WAIT_SECONDS, 0.02
        while True:
            try:
                first = await self.engine.store.first_awaiting(conversation_key=key)
            except StorageError:
                return  # the store logged it; answering beats waiting on a failing store
            if first is None or first >= stored_id:
                return
            if loop.time() >= deadline:
                log.warning(
                    "answering in %s without waiting longer for message %d, still unanswered",
                    key,
                    first,
                )
                return
            await self.engine.store.wait_answered(conversation_key=key, within=pause)
            pause = min(pause * 2, 0.25)

    async def _reply(self, turn: Turn, outbox: Outbox) -> None:
        if isinstance(turn.accepted, Reply):  # nothing for the model (an empty message)
            await outbox.send(turn.accepted)
            return
        if await self.engine.caps.quiet(turn.incoming):
            return  # at a cap the channel was told of: kept, not refused again
        async with outbox.working() as shown:
            if shown is not None:  # what a process taking this answer over would replace
                with suppress(StorageError):
                    await self.engine.store.showing(
                        stored_id=turn.accepted.stored.id, message_id=shown
                    )
            progress = outbox.progress if isinstance(outbox, ShowsProgress) else None
            reply = await self.engine.answer(turn.accepted, show=outbox.show, progress=progress)
        sent = await outbox.send(reply)
        if sent is not None and reply.stored_id is not None:
            await self.engine.attach_message_id(turn.incoming.conversation, reply.stored_id, sent)

    async def record(self, incoming: IncomingMessage) -> bool:
        """Store a message without answering it (caught up after a restart), as :meth:`take`
        would keep it; False when it is not kept or already stored."""
        addressed = await self._addressed(incoming)
        if addressed is None:
            return False
        try:
            await self.engine.record(addressed)
        except Duplicate:  # it arrived live meanwhile, or another process stored it
            return False
        return True

    async def _addressed(self, incoming: IncomingMessage) -> IncomingMessage | None:
        """The message as the conversation's settings take it: addressed when it is to the
        bot (or in a thread it follows) and the bot answers such messages there, or when it
        answers every message there; None when it is not to be kept."""
        settings = await self.engine.settings_for(incoming.conversation)
        if settings.answer is Answering.NONE:
            addressed, asked = False, incoming.addressed
        else:
            asked = incoming.addressed or await self._follows(incoming.conversation)
            addressed = settings.answer is Answering.ALL or asked
        if not addressed and settings.record is not Recording.ALL:
            return None
        if (addressed, asked) == (incoming.addressed, incoming.asked):
            return incoming
        return replace(incoming, addressed=addressed, asked=asked)

    async def _follows(self, conversation: Conversation) -> bool:
        """Whether the bot follows the thread: it answered there (or the thread's copy of its
        root is the bot's answer), as this process remembers or, when it does not (since it
        started, say), as memory has it."""
        if conversation.thread is None:
            return False
        if conversation.key in self._followed:
            return True
        if await self.engine.store.has_answered(conversation_key=conversation.key):
            self._followed.add(conversation.key)
            return True
        return False

    async def _seed(self, conversation: Conversation) -> None:
        """A thread's conversation starts with a copy of its root message, when the channel's
        conversation has it: a question asked in a thread sees the message it hangs from."""
        if conversation.thread is None or conversation.key in self._seeded:
            return
        self._seeded.add(conversation.key)
        if await self.engine.store.count_messages(conversation_key=conversation.key):
            return
        channel = replace(conversation, thread=None)
        await self.engine.copy_message(conversation.thread, source=channel, into=conversation)

    def storage_notice(self, conversation: Conversation, error: StorageError) -> Reply | None:
        """What to tell a conversation whose message could not be stored, for platforms that
        do not deliver it again: once per conversation per spell of failing writes."""
        if self._told.get(conversation.key) == error.incident:
            return None
        self._told[conversation.key] = error.incident
        return Reply(STORAGE_NOTICE, kind=ReplyKind.ERROR)

    # -- taking over -----------------------------------------------------------------------

    def take_over(self, platform: str, outbox_for: OutboxFor | None) -> None:
        """From now until :meth:`aclose`, answer the platform's messages left unanswered by
        a process that is gone (``outbox_for`` None: give them up), every
        :data:`SWEEP_SECONDS`."""
        if self._sweeper is None:
            self._sweeper = asyncio.create_task(
                self._sweep(platform, outbox_for), name=f"{platform} take over"
            )

    async def _sweep(self, platform: str, outbox_for: OutboxFor | None) -> None:
        holder = self.engine.leases.holder
        while True:
            adopted: list[Awaiting] = []
            try:
                await self.engine.retry_finished()
                adopted = list(
                    await self.engine.store.adopt_awaiting(
                        platform=platform, holder=holder, limit=_TAKEN_AT_ONCE
                    )
                )
            except StorageError:
                pass  # the store logged it; the next sweep tries again
            except Exception:
                log.exception("looking for messages left unanswered failed")
            if adopted:
                log.info("taking over %s left unanswered", counted(len(adopted), "message"))
            for item in adopted:
                self.spawn(self._answer_adopted(item, outbox_for), "answer taken over")
            if len(adopted) < _TAKEN_AT_ONCE:
                await asyncio.sleep(SWEEP_SECONDS)

    async def _answer_adopted(self, item: Awaiting, outbox_for: OutboxFor | None) -> None:
        conversation = Conversation.from_key(item.conversation_key)
        question = item.question
        outbox = None
        if time.time() - item.queued_at <= TAKE_OVER_WITHIN and outbox_for is not None:
            outbox = outbox_for(conversation, item)
        if outbox is None or (item.answer is not None and item.answer.message_id is not None):
            if outbox is None:
                log.warning("gave up answering message %d in %s", question.id, conversation.key)
            await self.engine.finish_stored(question.id)  # or: answered, and shown
            return
        if item.answer is not None:  # stored before its process went, perhaps not shown
            await self._earlier_answered(conversation.key, question.id)
            try:
                reply = Reply(item.answer.content, stored_id=item.answer.id)
                sent = await outbox.send(reply)
                if sent is not None:
                    await self.engine.attach_message_id(conversation, item.answer.id, sent)
            finally:
                await self.engine.finish_stored(question.id)
            return
        incoming = IncomingMessage(
            conversation=conversation,
            author_id=question.author_id,
            author_name=question.author_name,
            text=question.content,
            addressed=True,
            message_id=question.message_id,
            sent_at=datetime.fromtimestamp(question.created_at, UTC),
        )
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pending = Pending(message=incoming, stored=question)
        await self.answer(Turn(incoming, pending, None, done), outbox)

    # -- changes ---------------------------------------------------------------------------

    async def edit(self, edit: Edit) -> None:
        """The stored text follows the platform's, in the thread's copy too."""
        async with self.in_order(edit.conversation):
            for conversation in with_own_thread(edit.conversation, edit.message_id):
                await self.engine.edit_message(conversation, edit.message_id, edit.text)

    async def delete(self, deletion: Deletion) -> None:
        """Memory forgets the message, and the thread's copy of it."""
        async with self.in_order(deletion.conversation):
            for conversation in with_own_thread(deletion.conversation, deletion.message_id):
                await self.engine.delete_message(conversation, deletion.message_id)

    async def react(self, reaction: Reaction, *, delivery: str | None = None) -> None:
        """📌 on a message marks it important (``delivery``: the platform's event id, so that
        a redelivered event does not count twice); messages memory lacks are ignored. Queued
        behind the storing of the channel's messages: a reaction to a message just sent finds
        it stored."""
        if delivery is not None and delivery in self._delivered:
            log.info("ignoring redelivered event %s", delivery)
            return
        channel = replace(reaction.conversation, thread=None)
        async with self.in_order(channel):
            found = await self.engine.mark_important(
                reaction.conversation, reaction.message_id, reaction.on
            )
        if not found:
            log.debug("ignoring a pushpin on a message not in memory")
        if delivery is not None:
            self._delivered.add(delivery)

    # -- commands --------------------------------------------------------------------------

    async def first_request(self, request_id: str) -> bool:
        """Whether a platform request (a slash command) is seen for the first time, by any
        process on this database, before or since a restart: a replayed one must not act
        twice."""
        first = await self.engine.store.claim_request(
            request_id=request_id, keep_seconds=_REQUESTS_KEPT
        )
        if not first:
            log.info("ignoring a replayed request (%s)", request_id)
        return first

    async def command(self, call: CommandCall) -> Reply:
        return await run_command(self.engine, call)

    # -- work in flight --------------------------------------------------------------------

    def spawn(self, work: Awaitable[None], name: str) -> None:
        """Run ``work`` as a task that :meth:`settle` waits for and :meth:`aclose` ends."""

        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("%s failed", name)

        self.track(asyncio.create_task(guarded(), name=name))

    def track(self, task: asyncio.Task[Any]) -> None:
        """Count ``task`` as work in flight until it ends."""
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    @contextmanager
    def _tracked(self) -> Iterator[None]:
        task = asyncio.current_task()
        if task is None:
            yield
            return
        self._work.add(task)
        try:
            yield
        finally:
            self._work.discard(task)

    def _in_flight(self) -> set[asyncio.Task[Any]]:
        current = asyncio.current_task()
        return {task for task in self._work if task is not current}

    async def settle(self) -> None:
        """Wait until the work started so far (and any it started) is done."""
        while work := self._in_flight():
            await asyncio.wait(work)

    async def aclose(self, *, grace: float = GRACE_SECONDS) -> None:
        """Wait up to ``grace`` seconds for the work in flight (answers finish and are sent;
        the platform's client must still be open), then cancel what is left."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with suppress(asyncio.CancelledError):
                await self._sweeper
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while (work := self._in_flight()) and (left := deadline - loop.time()) > 0:
            await asyncio.wait(work, timeout=left)
        if work := self._in_flight():
            log.warning("abandoned %s at shutdown", counted(len(work), "task"))
            for task in work:
                task.cancel()
            await asyncio.wait(work)
