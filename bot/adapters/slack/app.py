"""The Bolt app: listeners that commit what an event changes in memory, then acknowledge
it, then do the slow work (answers, commands) in a task.

Bolt runs with ``process_before_response``: the HTTP 200 (or the Socket Mode ack) goes out
when a listener returns, so a message is stored before Slack hears that it arrived. A listener
that cannot store returns 503 instead (no ack in Socket Mode), and Slack delivers it again.

Messages, edits and deletions go to the engine; slash commands and the "Pin to memory"
shortcut to :func:`bot.core.commands.run_command`; replies come back rendered as mrkdwn.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.render import split, to_mrkdwn
from bot.adapters.slack.translate import (
    PIN_SHORTCUT,
    Policy,
    is_user_message,
    mentions,
    message_event,
    ordering_key,
    shortcut_author,
    thread_of,
    to_command,
    to_deletion,
    to_edit,
    to_incoming,
    to_pin,
    to_reaction,
)
from bot.adapters.text import ATTACHMENT_NAME, LongReply, shorten
from bot.config import SlackConfig, SlackRecord
from bot.core.commands import COMMANDS, run_command
from bot.core.engine import Engine, Pending
from bot.core.models import (
    CommandCall,
    Conversation,
    IncomingMessage,
    Reply,
    ReplyKind,
    StoredMessage,
)

log = logging.getLogger(__name__)

THINKING = "_Thinking…_"
_REMEMBERED = 4096  # event ids and thread keys kept in memory
NAME_WAIT = 1.0
"""Seconds an answer waits for its author's name (``users.info``). A message from someone whose
name is not known yet is stored at once under the user id (storing comes before the ack and
never waits for the lookup); when the name arrives, the stored message takes it, and the
person's later messages carry it from the start."""
_MAX_RESPONSES = 5  # a response_url takes 5 messages
_NOT_ATTACHED = "_(The rest of this reply could not be attached; it is kept in memory.)_"


@dataclass(frozen=True)
class Identity:
    """Who the bot is in its workspace (``auth.test``)."""

    user_id: str
    bot_id: str | None
    team_id: str


async def identify(client: AsyncWebClient) -> Identity:
    answer = await client.auth_test()
    return Identity(
        user_id=str(answer["user_id"]),
        bot_id=answer.get("bot_id"),
        team_id=str(answer.get("team_id") or ""),
    )


def _with_own_thread(conversation: Conversation, ts: str) -> list[Conversation]:
    """A thread's root message is in its channel's conversation and, copied, in its thread's."""
    if conversation.thread is None:
        return [conversation, replace(conversation, thread=ts)]
    return [conversation]


@dataclass(frozen=True)
class _Turn:
    """A stored message that still needs an answer (or the answer it already has)."""

    incoming: IncomingMessage
    accepted: Pending | Reply
    channel: str
    thread: str | None
    naming: asyncio.Task[StoredMessage | None] | None = None
    """Giving the stored message its author's name, when it was stored under the id."""


@dataclass(frozen=True)
class _Queued:
    """A stored turn with its place in its conversation's answer order."""

    key: str
    turn: _Turn
    previous: asyncio.Future[None] | None
    done: asyncio.Future[None]


_NOT_STORED = BoltResponse(status=503, body="")


def _slack_error(exc: SlackClientError) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error"))
    return type(exc).__name__


def _ephemeral(reply: Reply) -> bool:
    return reply.ephemeral or reply.kind is ReplyKind.ERROR


class Listeners:
    """Everything the Bolt app does, on the engine and the Web API client it is given."""

    def __init__(
        self,
        *,
        engine: Engine,
        client: AsyncWebClient,
        settings: SlackConfig,
        identity: Identity,
    ) -> None:
        self.engine = engine
        self.client = client
        self.policy = Policy(
            bot_user_id=identity.user_id,
            answer_channels=frozenset(settings.answer_channels),
            record_all=settings.record is SlackRecord.ALL,
        )
        self.admins: Collection[str] = frozenset(settings.admin_user_ids)
        self._names: dict[str, str] = {}
        self._lookups: dict[str, asyncio.Task[None]] = {}
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._joined_threads: OrderedDict[str, None] = OrderedDict()
        self._seeded_threads: OrderedDict[str, None] = OrderedDict()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._namings: set[asyncio.Task[StoredMessage | None]] = set()
        self._order_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )
        self._answering: dict[str, asyncio.Future[None]] = {}
        """Per conversation: done when its latest accepted message has been answered."""

    def register(self, app: AsyncApp) -> None:
        app.event("message")(self.on_message)
        app.event("app_mention")(self.on_mention)
        app.event("reaction_added")(self.on_reaction)
        app.event("reaction_removed")(self.on_reaction)
        for spec in COMMANDS:
            app.command(f"/{spec.name}")(self.on_command)
        app.shortcut(PIN_SHORTCUT)(self.on_pin_shortcut)

    # -- Bolt listeners: commit, acknowledge, then work in a task -------------------------

    async def on_message(self, body: dict[str, Any], ack: AsyncAck) -> BoltResponse | None:
        try:
            queued = await self._store_in_order(body)
        except Exception as exc:
            return _refuse("message event", exc)
        await ack()
        if queued is not None:
            self._spawn(self._answer_in_turn(queued), "slack message")
        return None

    async def on_mention(self, ack: AsyncAck) -> None:
        await ack()  # the same message also arrives as a message event, handled there

    async def on_reaction(self, body: dict[str, Any], ack: AsyncAck) -> BoltResponse | None:
        if self._first_delivery(body):
            try:
                await self._reaction(body)
            except Exception as exc:
                return _refuse("reaction event", exc)
            if body.get("event_id"):
                self._remember(self._seen, str(body["event_id"]))
        await ack()
        return None

    async def on_command(
        self, body: dict[str, Any], ack: AsyncAck, respond: AsyncRespond
    ) -> BoltResponse | None:
        try:
            first = await self._first_request(body)
        except Exception as exc:
            return _refuse("slash command", exc)
        await ack()
        call = to_command(body, admins=self.admins)
        if first:
            self._spawn(self._command(call, respond), f"slack /{call.name}")
        return None

    async def on_pin_shortcut(
        self, body: dict[str, Any], ack: AsyncAck, respond: AsyncRespond
    ) -> BoltResponse | None:
        try:
            first = await self._first_request(body)
        except Exception as exc:
            return _refuse("pin shortcut", exc)
        await ack()
        if first:
            self._spawn(self._pin_shortcut(body, respond), "slack pin shortcut")
        return None

    # -- lifecycle ---------------------------------------------------------------------------

    async def settle(self) -> None:
        """Wait until the work started so far (and any it started) is done."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def aclose(self, *, grace: float = 10.0) -> None:
        """Give in-flight replies ``grace`` seconds, then cancel them."""
        tasks = list(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def background(self, work: Awaitable[None], name: str) -> None:
        """Run ``work`` as a task that :meth:`settle` waits for and :meth:`aclose` ends."""
        self._spawn(work, name)

    def ordering(self, key: str) -> asyncio.Lock:
        """The lock a conversation's messages are stored under, one at a time
        (``key``: :func:`~bot.adapters.slack.translate.ordering_key`)."""
        return self._order_lock(key)

    def _spawn(self, work: Awaitable[None], name: str) -> None:
        async def guarded() -> None:
            try:
                await work
            except Exception:
                log.exception("%s failed", name)

        task = asyncio.create_task(guarded(), name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _first_delivery(self, body: Mapping[str, Any]) -> bool:
        """False for a reaction event already applied in this process (reactions count, so a
        retry must not count twice; messages are told apart by the store instead)."""
        event_id = body.get("event_id")
        if event_id and event_id in self._seen:
            log.info("ignoring redelivered event %s", event_id)
            return False
        return True

    async def _first_request(self, body: Mapping[str, Any]) -> bool:
        """False for a command whose ``trigger_id`` was acted on already (a replayed request),
        by this process or another on the same database, before or since a restart."""
        trigger = body.get("trigger_id")
        if not trigger:
            return True
        first = await self.engine.first_request(f"slack:{trigger}")
        if not first:
            log.info("ignoring a replayed request (trigger %s)", trigger)
        return first

    # -- work ----------------------------------------------------------------------------

    async def names(self, user_ids: Collection[str]) -> dict[str, str]:
        """Display names, each looked up once (``users.info``) and then cached; those not
        known within :data:`NAME_WAIT` are left out (the caller falls back to the id)."""
        lookups = self._lookups_for(user_ids)
        if lookups:
            await asyncio.wait(lookups, timeout=NAME_WAIT)
        return self.known_names(user_ids)

    def known_names(self, user_ids: Collection[str]) -> dict[str, str]:
        """The names already known, at once; the others are looked up in the background."""
        self._lookups_for(user_ids)
        return {u: self._names[u] for u in user_ids if u in self._names}

    def _lookups_for(self, user_ids: Collection[str]) -> list[asyncio.Task[None]]:
        return [
            self._lookup(user_id)
            for user_id in user_ids
            if user_id and user_id not in self._names and user_id != self.policy.bot_user_id
        ]

    def _lookup(self, user_id: str) -> asyncio.Task[None]:
        """The lookup of ``user_id`` under way (one at a time per person), started if none."""
        task = self._lookups.get(user_id)
        if task is None:

            async def look_up() -> None:
                try:
                    name = await self._look_up(user_id)
                except Exception as exc:  # the network: named by id until the next message
                    log.warning("users.info %s failed: %s", user_id, type(exc).__name__)
                    return
                if name:
                    self._names[user_id] = name

            task = asyncio.create_task(look_up(), name=f"users.info {user_id}")
            self._lookups[user_id] = task
            self._tasks.add(task)  # settle() waits for it, aclose() cancels it
            task.add_done_callback(self._tasks.discard)
            task.add_done_callback(lambda _: self._lookups.pop(user_id, None))
        return task

    async def _look_up(self, user_id: str) -> str | None:
        try:
            answer = await self.client.users_info(user=user_id)
        except SlackApiError as exc:
            log.warning("users.info %s failed: %s", user_id, exc.response.get("error"))
            return None
        user = answer.get("user") or {}
        profile = user.get("profile") or {}
        for name in (profile.get("display_name"), profile.get("real_name"), user.get("name")):
            if name:
                return str(name)
        return None

    async def _store_in_order(self, body: dict[str, Any]) -> _Queued | None:
        """Messages of one conversation are stored one at a time, in the order they came
        (``asyncio.Lock`` wakes waiters first come, first served), each as soon as its turn
        comes, even while an earlier one is being answered: it is acknowledged once stored.
        What needs an answer is queued to be answered in the same order."""
        key = ordering_key(body)
        async with self._order_lock(key):
            turn = await self._take(body)
            if turn is None:
                return None
            previous = self._answering.get(key)
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._answering[key] = done
        return _Queued(key, turn, previous, done)

    async def _answer_in_turn(self, queued: _Queued) -> None:
        turn = queued.turn
        try:
            if queued.previous is not None:
                await asyncio.wait([queued.previous])
            await self._answer(await self._named(turn))
        finally:
            if isinstance(turn.accepted, Pending):
                self.engine.release(turn.accepted)
            queued.done.set_result(None)
            if self._answering.get(queued.key) is queued.done:
                del self._answering[queued.key]

    async def _named(self, turn: _Turn) -> _Turn:
        """The turn with its author's name, and the messages stored before it with theirs,
        when those arrive within :data:`NAME_WAIT`."""
        if self._namings:
            await asyncio.wait(list(self._namings), timeout=NAME_WAIT)
        naming = turn.naming
        if naming is None or not isinstance(turn.accepted, Pending):
            return turn
        renamed = naming.result() if naming.done() and not naming.cancelled() else None
        if renamed is None:
            return turn
        return replace(turn, accepted=replace(turn.accepted, stored=renamed))

    async def _name_later(
        self, conversation: Conversation, message_id: str, author: str
    ) -> StoredMessage | None:
        """Wait for the lookup of ``author``, then give the stored message their name."""
        try:
            lookups = self._lookups_for([author])
            if lookups:
                await asyncio.wait(lookups)
            name = self._names.get(author)
            if not name:
                return None
            return await self.engine.rename_author(conversation, message_id, name)
        except Exception:
            log.exception("naming a stored message failed")
            return None

    def _order_lock(self, key: str) -> asyncio.Lock:
        lock = self._order_locks.get(key)
        if lock is None:
            lock = self._order_locks[key] = asyncio.Lock()
        return lock

    async def _reaction(self, body: dict[str, Any]) -> None:
        """📌 on a message marks it important; unknown messages are ignored. Queued behind the
        storing of the channel's messages, so a reaction to a message just sent finds it
        stored."""
        reaction = to_reaction(body)
        if reaction is None:
            return
        conversation = reaction.conversation
        async with self._order_lock(f"{conversation.workspace}:{conversation.channel}:"):
            found = await self.engine.mark_important(conversation, reaction.message_id, reaction.on)
        if not found:
            log.debug("ignoring a pushpin on a message not in memory")

    async def _take(self, body: dict[str, Any]) -> _Turn | None:
        """Store what the event brings; what still needs an answer, if anything."""
        event = message_event(body)
        if event is None:
            return None
        if event.get("subtype") == "message_changed":
            await self._edit(body)
            return None
        deletion = to_deletion(body)
        if deletion is not None:
            for conversation in _with_own_thread(deletion.conversation, deletion.message_id):
                await self.engine.delete_message(conversation, deletion.message_id)
            return None
        if not is_user_message(event):
            return None
        text = str(event.get("text") or "")
        author = str(event["user"])
        names = self.known_names({author} | mentions(text))
        await self._follow_if_answered(body)
        incoming = to_incoming(
            body, policy=self.policy, names=names, joined_threads=self._joined_threads
        )
        if incoming is None:
            return None
        await self._seed_thread(incoming.conversation)
        accepted = await self.engine.accept(incoming)
        if incoming.conversation.thread is not None and isinstance(accepted, Pending):
            # Followed from now on: a reply sent while this one is being answered is for it.
            self._remember(self._joined_threads, incoming.conversation.key)
        naming = None
        if author not in names and incoming.message_id is not None:
            naming = asyncio.create_task(
                self._name_later(incoming.conversation, incoming.message_id, author),
                name=f"naming {incoming.message_id}",
            )
            self._tasks.add(naming)
            naming.add_done_callback(self._tasks.discard)
            self._namings.add(naming)
            naming.add_done_callback(self._namings.discard)
        if accepted is None:
            return None
        return _Turn(incoming, accepted, str(event["channel"]), event.get("thread_ts"), naming)

    async def _follow_if_answered(self, body: dict[str, Any]) -> None:
        """A reply in a thread the bot answered in before it last started is followed too:
        memory says whether it did (the threads followed are otherwise kept in memory)."""
        conversation = thread_of(body)
        if conversation is None or conversation.key in self._joined_threads:
            return
        if await self.engine.has_answered(conversation):
            self._remember(self._joined_threads, conversation.key)

    async def _answer(self, turn: _Turn) -> None:
        incoming, channel, thread = turn.incoming, turn.channel, turn.thread
        if isinstance(turn.accepted, Reply):  # nothing for the model (an empty message)
            await self._deliver(channel, thread, incoming.author_id, turn.accepted, None)
            return
        placeholder = await self._post(channel, thread, THINKING)
        try:
            reply = await self.engine.answer(turn.accepted, reply_id=placeholder)
        except BaseException:
            await self._delete(channel, placeholder)
            raise
        await self._deliver(channel, thread, incoming.author_id, reply, placeholder)

    async def _edit(self, body: dict[str, Any]) -> None:
        changed = (body.get("event") or {}).get("message") or {}
        wanted = {str(changed.get("user") or "")} | mentions(str(changed.get("text") or ""))
        edit = to_edit(body, policy=self.policy, names=self.known_names(wanted))
        if edit is not None:
            for conversation in _with_own_thread(edit.conversation, edit.message_id):
                await self.engine.edit_message(conversation, edit.message_id, edit.text)

    async def _seed_thread(self, conversation: Conversation) -> None:
        """A thread's conversation starts with a copy of its root message, when the channel's
        conversation has it: a question asked in a thread sees the message it hangs from."""
        if conversation.thread is None or conversation.key in self._seeded_threads:
            return
        self._remember(self._seeded_threads, conversation.key)
        if await self.engine.store.count_messages(conversation_key=conversation.key):
            return
        channel = replace(conversation, thread=None)
        await self.engine.copy_message(conversation.thread, source=channel, into=conversation)

    @staticmethod
    def _remember(keys: OrderedDict[str, None], key: str) -> None:
        keys[key] = None
        keys.move_to_end(key)
        if len(keys) > _REMEMBERED:
            keys.popitem(last=False)

    async def _deliver(
        self,
        channel: str,
        thread: str | None,
        user: str,
        reply: Reply,
        placeholder: str | None,
    ) -> None:
        chunks = split(to_mrkdwn(reply.text))
        if _ephemeral(reply):
            await self._delete(channel, placeholder)
            for chunk in chunks:
                await self.client.chat_postEphemeral(
                    channel=channel, user=user, text=chunk, thread_ts=thread
                )
            return
        long = shorten(reply.text, self.engine.config.llm.max_reply_chars)
        if long is not None:
            chunks = split(to_mrkdwn(long.shown))
        if placeholder is not None and chunks:
            await self.client.chat_update(channel=channel, ts=placeholder, text=chunks[0])
            chunks = chunks[1:]
        for chunk in chunks:
            await self._post(channel, thread, chunk)
        if long is not None:
            await self._attach(channel, thread, long)

    async def _attach(self, channel: str, thread: str | None, long: LongReply) -> None:
        """The whole of a long reply as a file, with its note."""
        try:
            await self.client.files_upload_v2(
                channel=channel,
                thread_ts=thread,
                content=long.attachment,
                filename=ATTACHMENT_NAME,
                title=ATTACHMENT_NAME,
                initial_comment=to_mrkdwn(long.note),
            )
        except (SlackApiError, SlackClientError) as exc:
            log.warning("uploading a long reply to %s failed: %s", channel, _slack_error(exc))
            await self._post(channel, thread, _NOT_ATTACHED)

    async def _post(self, channel: str, thread: str | None, text: str) -> str | None:
        try:
            answer = await self.client.chat_postMessage(
                channel=channel, thread_ts=thread, text=text, unfurl_links=False
            )
        except SlackApiError as exc:
            log.warning("chat.postMessage to %s failed: %s", channel, exc.response.get("error"))
            return None
        ts = answer.get("ts")
        return str(ts) if ts else None

    async def _delete(self, channel: str, ts: str | None) -> None:
        if ts is None:
            return
        try:
            await self.client.chat_delete(channel=channel, ts=ts)
        except SlackApiError as exc:
            log.warning("chat.delete in %s failed: %s", channel, exc.response.get("error"))

    async def _command(self, call: CommandCall, respond: AsyncRespond) -> None:
        await self._respond(respond, await run_command(self.engine, call))

    async def _pin_shortcut(self, body: dict[str, Any], respond: AsyncRespond) -> None:
        message = body.get("message") or {}
        user = str((body.get("user") or {}).get("id") or "")
        wanted = {shortcut_author(body), user} | mentions(str(message.get("text") or ""))
        call = to_pin(body, names=await self.names(wanted))
        await self._respond(respond, await run_command(self.engine, call))

    async def _respond(self, respond: AsyncRespond, reply: Reply) -> None:
        kind = "ephemeral" if _ephemeral(reply) else "in_channel"
        for chunk in split(to_mrkdwn(reply.text))[:_MAX_RESPONSES]:
            await respond(text=chunk, response_type=kind)


def _refuse(what: str, exc: Exception) -> BoltResponse:
    """Not acknowledged: Slack delivers the request again."""
    log.error("could not keep a slack %s, not acknowledged: %s: %s", what, type(exc).__name__, exc)
    return _NOT_STORED


def build_app(*, token: str | None, signing_secret: str | None) -> AsyncApp:
    """The Bolt app, with a Web API client of its own for ``token`` (a client handed to Bolt
    makes it warn on every start that the SLACK_BOT_TOKEN it finds will be unused)."""
    return AsyncApp(
        token=token,
        signing_secret=signing_secret or "",
        request_verification_enabled=signing_secret is not None,
        logger=logging.getLogger("slack_bolt"),
        name="channel-memory-bot",
        process_before_response=True,  # the response waits for what the listener commits
    )
