"""The Bolt app: listeners that commit what an event changes in memory, then acknowledge
it, then do the slow work (answers, commands) in a task.

Bolt runs with ``process_before_response``: the HTTP 200 (or the Socket Mode ack) goes out
when a listener returns, so a message is stored before Slack hears that it arrived. A listener
that cannot store returns 503 instead (no ack in Socket Mode), and Slack delivers it again.

Events are translated (:mod:`.translate`) and handed to the core's
:class:`~bot.core.handler.Handler`; answers go out through a :class:`~.outbox.SlackOutbox`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.assistant import Assistant, started_thread
from bot.adapters.slack.files import post_files
from bot.adapters.slack.names import Names, Naming
from bot.adapters.slack.outbox import SlackOutbox, answer_command
from bot.adapters.slack.places import look_up
from bot.adapters.slack.settings_modal import CALLBACK_ID, PersonaModal, asks_for_modal
from bot.adapters.slack.stream import StreamSupport
from bot.adapters.slack.translate import (
    PIN_SHORTCUT,
    PLATFORM,
    Policy,
    is_user_message,
    mentions,
    message_event,
    shortcut_author,
    to_command,
    to_deletion,
    to_edit,
    to_incoming,
    to_pin,
    to_reaction,
)
from bot.adapters.status import StatusReaction
from bot.config import SlackConfig
from bot.core.commands import COMMANDS
from bot.core.engine import Engine
from bot.core.handler import GRACE_SECONDS, Handler, Turn
from bot.core.models import Conversation, Reply
from bot.core.ports.leases import Awaiting
from bot.core.ports.platform import Outbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Identity:
    """Who the bot is in its workspace (``auth.test``)."""

    user_id: str
    bot_id: str | None
    team_id: str
    url: str = ""
    """The workspace's address (``https://team.slack.com/``), for links to messages."""


async def identify(client: AsyncWebClient) -> Identity:
    answer = await client.auth_test()
    return Identity(
        user_id=str(answer["user_id"]),
        bot_id=answer.get("bot_id"),
        team_id=str(answer.get("team_id") or ""),
        url=str(answer.get("url") or ""),
    )


@dataclass(frozen=True)
class _Taken:
    """A stored message's turn, where its answer goes, and the naming of its author when it
    was stored under the id."""

    turn: Turn
    channel: str
    thread: str | None
    naming: Naming | None
    in_pane: bool = False
    """In a thread of Slack's assistant pane (titled, a status line while answering)."""


_NOT_STORED = BoltResponse(status=503, body="")


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
        # Translation keeps every message; the handler keeps what the channel's settings ask.
        self.policy = Policy(bot_user_id=identity.user_id)
        self.handler = Handler(engine=engine)
        self.names = Names(
            client=client, engine=engine, bot_user_id=identity.user_id, track=self.handler.track
        )
        self.assistant = Assistant(client=client, store=engine.store, settings=settings.assistant)
        self.streaming = StreamSupport(settings.streaming)
        emoji = settings.status_reaction
        self.status = None if emoji is None else StatusReaction(PLATFORM, emoji)
        """👀 on a question while it is answered, outside the assistant pane."""
        self.admins: Collection[str] = frozenset(settings.admin_user_ids)
        self.persona = PersonaModal(client=client, handler=self.handler, admins=self.admins)
        self.team = identity.team_id
        self.url = identity.url

    def take_over(self) -> None:
        """Answer what other processes (or this one before a restart) left unanswered."""
        self.handler.take_over(PLATFORM, self._outbox_for)

    def _outbox_for(self, conversation: Conversation, item: Awaiting) -> SlackOutbox:
        return SlackOutbox(
            self.client,
            channel=conversation.channel,
            thread=conversation.thread,
            user=item.question.author_id,
            max_reply_chars=self.engine.config.llm.max_reply_chars,
            question=item.question.message_id,
            placeholder=item.shown_as,
            adopt=item.shown_as is None,
            team=conversation.workspace,
            streaming=self.streaming,
        )

    def register(self, app: AsyncApp) -> None:
        app.event("message")(self.on_message)
        app.event("app_mention")(self.on_mention)
        app.event("reaction_added")(self.on_reaction)
        app.event("reaction_removed")(self.on_reaction)
        for spec in COMMANDS:
            app.command(f"/{spec.name}")(self.on_command)
        app.shortcut(PIN_SHORTCUT)(self.on_pin_shortcut)
        app.view(CALLBACK_ID)(self.on_persona_submitted)
        app.event("assistant_thread_started")(self.on_assistant_thread)
        app.event("assistant_thread_context_changed")(self.on_thread_context)

    # -- Bolt listeners: commit, acknowledge, then work in a task -------------------------

    async def on_message(self, body: dict[str, Any], ack: AsyncAck) -> BoltResponse | None:
        try:
            taken = await self._take(body)
        except Exception as exc:
            return _refuse("message event", exc)
        await ack()
        if taken is not None:
            self.handler.spawn(self._answer(taken), "slack message")
        return None

    async def on_mention(self, ack: AsyncAck) -> None:
        await ack()  # the same message also arrives as a message event, handled there

    async def on_thread_context(self, ack: AsyncAck) -> None:
        await ack()  # the channel a person has open beside the pane: not used

    async def on_assistant_thread(self, body: dict[str, Any], ack: AsyncAck) -> BoltResponse | None:
        """A thread opened in the assistant pane: greeted once, however often delivered."""
        thread = started_thread(body)
        try:
            first = thread is not None and await self.handler.first_request(
                f"slack:assistant:{thread.channel}:{thread.thread}"
            )
        except Exception as exc:
            return _refuse("assistant thread", exc)
        await ack()
        if first and thread is not None:
            self.handler.spawn(self.assistant.greet(thread), "slack assistant greeting")
        return None

    async def on_reaction(self, body: dict[str, Any], ack: AsyncAck) -> BoltResponse | None:
        reaction = to_reaction(body)
        if reaction is not None:
            try:
                await self.handler.react(reaction, delivery=body.get("event_id") or None)
            except Exception as exc:
                return _refuse("reaction event", exc)
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
        if first:
            name = str(body.get("command") or "")
            self.handler.spawn(self._command(body, respond), f"slack {name}")
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
            self.handler.spawn(self._pin_shortcut(body, respond), "slack pin shortcut")
        return None

    async def on_persona_submitted(
        self, body: dict[str, Any], ack: AsyncAck
    ) -> BoltResponse | None:
        """The persona modal submitted: saved (or refused) before the answer Slack waits for."""
        try:
            first = await self._first_request(body)
        except Exception as exc:
            return _refuse("persona form", exc)
        if first:
            await self.persona.submitted(body, ack)
        else:
            await ack()
        return None

    # -- lifecycle ---------------------------------------------------------------------------

    async def settle(self) -> None:
        """Wait until the work started so far (and any it started) is done."""
        await self.handler.settle()

    async def aclose(self, *, grace: float = GRACE_SECONDS) -> None:
        """Give in-flight replies ``grace`` seconds, then cancel them."""
        await self.handler.aclose(grace=grace)

    def background(self, work: Awaitable[None], name: str) -> None:
        """Run ``work`` as a task that :meth:`settle` waits for and :meth:`aclose` ends."""
        self.handler.spawn(work, name)

    async def _first_request(self, body: dict[str, Any]) -> bool:
        """False for a command whose ``trigger_id`` was acted on already (a replayed request)."""
        trigger = body.get("trigger_id")
        return not trigger or await self.handler.first_request(f"slack:{trigger}")

    # -- work ----------------------------------------------------------------------------

    async def _take(self, body: dict[str, Any]) -> _Taken | None:
        """Store what the event brings; what still needs an answer, if anything."""
        event = message_event(body)
        if event is None:
            return None
        if event.get("subtype") == "message_changed":
            changed = event.get("message") or {}
            wanted = {str(changed.get("user") or "")} | mentions(str(changed.get("text") or ""))
            edit = to_edit(body, policy=self.policy, names=self.names.known(wanted))
            if edit is not None:
                await self.handler.edit(edit)
            return None
        deletion = to_deletion(body)
        if deletion is not None:
            await self.handler.delete(deletion)
            return None
        if not is_user_message(event):
            return None
        author = str(event["user"])
        names = self.names.known({author} | mentions(str(event.get("text") or "")))
        incoming = to_incoming(body, policy=self.policy, names=names)
        if incoming is None:
            return None
        turn = await self.handler.take(incoming)
        naming = None
        if author not in names and incoming.message_id is not None:
            naming = self.names.name_later(incoming.conversation, incoming.message_id, author)
        if turn is None:
            return None
        in_pane = self.assistant.holds(event)
        return _Taken(turn, str(event["channel"]), event.get("thread_ts"), naming, in_pane)

    async def _answer(self, taken: _Taken) -> None:
        incoming = taken.turn.incoming
        max_chars = self.engine.config.llm.max_reply_chars
        outbox: Outbox
        where: dict[str, Any] = {
            "channel": taken.channel,
            "user": incoming.author_id,
            "max_reply_chars": max_chars,
            "question": incoming.message_id,
            "team": incoming.conversation.workspace,
            "streaming": self.streaming,
        }
        if taken.in_pane and taken.thread is not None:
            outbox = self.assistant.outbox(thread=taken.thread, **where)
        else:
            outbox = SlackOutbox(self.client, thread=taken.thread, **where)
            outbox = self._with_status(outbox, taken.channel, incoming.message_id)

        async def named(turn: Turn) -> Turn:
            turn = await self.names.settled(turn, taken.naming)
            if taken.in_pane and taken.thread is not None:
                await self.assistant.title(turn, channel=taken.channel, thread=taken.thread)
            return turn

        await self.handler.answer(taken.turn, outbox, prepare=named)

    def _with_status(self, outbox: Outbox, channel: str, ts: str | None) -> Outbox:
        """The outbox, with the status reaction on the question ``ts`` while it is answered
        (when ``slack.status_reaction`` is set)."""
        status = self.status
        if status is None or ts is None:
            return outbox

        async def react(on: bool) -> object:
            call = self.client.reactions_add if on else self.client.reactions_remove
            return await call(channel=channel, name=status.emoji, timestamp=ts)

        return status.around(outbox, react)

    async def _command(self, body: dict[str, Any], reply_to: AsyncRespond) -> None:
        """Run a slash command as its caller, where Slack says it was typed (private or not,
        whose DM); ``/settings persona`` alone opens a modal instead."""
        place = await look_up(self.client, str(body.get("channel_id") or ""))
        call = to_command(body, admins=self.admins, place=place, workspace_url=self.url)
        reply: Reply | None
        if asks_for_modal(call):
            reply = await self.persona.open(call, body)
        else:
            reply = await self.handler.command(call)
        if reply is not None:
            upload = functools.partial(post_files, self.client, channel=call.conversation.channel)
            await answer_command(reply_to, reply, upload=upload)

    async def _pin_shortcut(self, body: dict[str, Any], reply_to: AsyncRespond) -> None:
        message = body.get("message") or {}
        user = str((body.get("user") or {}).get("id") or "")
        wanted = {shortcut_author(body), user} | mentions(str(message.get("text") or ""))
        call = to_pin(body, names=await self.names.wait_for(wanted))
        await answer_command(reply_to, await self.handler.command(call))


def _refuse(what: str, exc: Exception) -> BoltResponse:
    """Not acknowledged: Slack delivers the request again."""
    log.error("could not keep a slack %s, not acknowledged: %s: %s", what, type(exc).__name__, exc)
    return _NOT_STORED


def build_app(*, token: str | None, signing_secret: str | None) -> AsyncApp:
    """The Bolt app, with a Web API client of its own for ``token`` (a client handed to Bolt
    makes it warn on every start that the SLACK_BOT_TOKEN it finds will be unused)."""
    app = AsyncApp(
        token=token,
        signing_secret=signing_secret or "",
        request_verification_enabled=signing_secret is not None,
        logger=logging.getLogger("slack_bolt"),
        name="channel-memory-bot",
        process_before_response=True,  # the response waits for what the listener commits
        ignoring_self_events_enabled=False,  # in its place: _ignore_own_events
    )
    app.middleware(_ignore_own_events)
    return app


async def _ignore_own_events(
    context: AsyncBoltContext, body: dict[str, Any], next: Callable[[], Awaitable[BoltResponse]]
) -> BoltResponse:
    """Acknowledge the events the bot's own actions cause, as Bolt's own filter does, but
    one: a person deleting the bot's answer (Slack names the bot as its author), which leaves
    memory as any deleted message does."""
    event, auth = body.get("event"), context.authorize_result
    if isinstance(event, dict) and auth is not None and event.get("subtype") != "message_deleted":
        by_bot = event.get("bot_id") is not None and event.get("bot_id") == auth.bot_id
        if by_bot or (context.user_id is not None and context.user_id == auth.bot_user_id):
            return BoltResponse(status=200, body="")
    return await next()
