"""Slack's assistant pane (the app's "Agents & AI Apps" feature): a greeting and suggested
prompts when a person opens a thread there, the thread titled from its first question, and a
status line under it while an answer is made.

The pane's threads are threads of the person's DM with the app: their messages arrive as any
DM message does, addressed to the bot, and each thread is a conversation of its own
(``slack:{team}:{dm}:{thread_ts}``) whose memory no other thread sees. As Slack's own
libraries do, every DM thread is taken for one of the pane's while ``slack.assistant`` is
enabled; where Slack refuses the status line (the app's feature is off), the answer shows a
thinking message as before.

Bolt's ``AsyncAssistant`` middleware is not used: it sends every DM thread message to
listeners of its own (acknowledged after them), and acknowledges edits and deletions in DM
threads without passing them on, so they would not reach memory.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.outbox import SlackOutbox
from bot.adapters.slack.render import to_mrkdwn
from bot.config import SlackAssistantConfig
from bot.core.engine import Pending
from bot.core.handler import Turn
from bot.core.models import Reply, Role
from bot.core.ports.platform import Phase
from bot.core.ports.store import MessageStore

log = logging.getLogger(__name__)

THINKING_STATUS = f"is {Phase.THINKING.value}…"
SEARCHING_STATUS = f"is {Phase.SEARCHING.value}…"
TITLE_CHARS = 60
"""The most of a question a thread's title takes (cut at a word, with an ellipsis)."""
_OPENING = 3  # messages read to find a thread's first question (a copied root, then it)


@dataclass(frozen=True)
class AssistantThread:
    """A thread opened in the pane: the DM it is in, its ``thread_ts``, who opened it."""

    channel: str
    thread: str
    user: str


def started_thread(body: Mapping[str, Any]) -> AssistantThread | None:
    """The thread an ``assistant_thread_started`` event opens; None when it names none."""
    event = body.get("event") or {}
    thread = event.get("assistant_thread") or {}
    channel, ts = thread.get("channel_id"), thread.get("thread_ts")
    if event.get("type") != "assistant_thread_started" or not channel or not ts:
        return None
    return AssistantThread(str(channel), str(ts), str(thread.get("user_id") or ""))


def in_assistant_thread(event: Mapping[str, Any]) -> bool:
    """Whether a message event is a reply in a DM thread (the pane's threads are those)."""
    thread_ts = event.get("thread_ts")
    return event.get("channel_type") == "im" and bool(thread_ts) and thread_ts != event.get("ts")


def title_from(question: str, limit: int = TITLE_CHARS) -> str:
    """A thread's title: the question on one line, cut at a word to at most ``limit``."""
    words = " ".join(question.split())
    if len(words) <= limit:
        return words
    cut = words[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-") + "…"


def _slack_error(exc: SlackClientError) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error"))
    return type(exc).__name__


class ThreadStatus:
    """The status line under an assistant thread ("is thinking…"); Slack clears it when the
    bot posts in the thread."""

    def __init__(self, client: AsyncWebClient, *, channel: str, thread: str) -> None:
        self._client = client
        self._channel = channel
        self._thread = thread
        self.shown = False
        self.current = ""  # the status shown last

    async def show(self, status: str) -> bool:
        """Set the status; False when Slack refuses it (not a thread of the pane)."""
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=self._channel, thread_ts=self._thread, status=status
            )
        except SlackClientError as exc:
            log.info(
                "no status line in %s/%s (%s): showing a thinking message instead",
                self._channel,
                self._thread,
                _slack_error(exc),
            )
            return False
        self.shown = True
        self.current = status
        return True

    async def clear(self) -> None:
        """Take the status back, when it was shown (the answer failed, or posted nothing)."""
        if not self.shown:
            return
        self.shown, self.current = False, ""
        try:
            await self._client.assistant_threads_setStatus(
                channel_id=self._channel, thread_ts=self._thread, status=""
            )
        except SlackClientError as exc:
            log.warning("clearing the status in %s failed: %s", self._channel, _slack_error(exc))


class AssistantOutbox(SlackOutbox):
    """An answer in an assistant thread: the status line shows the work, not a thinking
    message (which Slack's pane would keep as a message of the thread); a thinking message
    after all when Slack refuses the status."""

    def __init__(self, client: AsyncWebClient, *, status: ThreadStatus, **where: Any) -> None:
        super().__init__(client, **where)
        self._status = status

    @asynccontextmanager
    async def working(self) -> AsyncIterator[str | None]:
        if not await self._status.show(SEARCHING_STATUS):
            async with super().working() as shown:
                yield shown
            return
        try:
            yield None
        except BaseException:
            await self._status.clear()
            raise

    async def send(self, reply: Reply) -> str | None:
        try:
            sent = await super().send(reply)
        except BaseException:
            await self._status.clear()
            raise
        if sent is None:  # only the asker saw it (an error), or nothing was posted
            await self._status.clear()
        return sent

    async def progress(self, phase: Phase) -> None:
        """The status line follows the work: searching memory, then thinking."""
        wanted = f"is {phase.value}…"
        if self._status.shown and self._status.current != wanted:
            await self._status.show(wanted)


class Assistant:
    """The pane's greeting and titles, on the Web API client and memory it is given."""

    def __init__(
        self, *, client: AsyncWebClient, store: MessageStore, settings: SlackAssistantConfig
    ) -> None:
        self.client = client
        self.store = store
        self.settings = settings

    def holds(self, event: Mapping[str, Any]) -> bool:
        """Whether a message event is in a thread of the pane (when the pane is enabled)."""
        return self.settings.enabled and in_assistant_thread(event)

    def outbox(self, *, channel: str, thread: str, user: str, **where: Any) -> AssistantOutbox:
        """The answer's outbox in a thread of the pane (``where``: as for :class:`SlackOutbox`)."""
        status = ThreadStatus(self.client, channel=channel, thread=thread)
        return AssistantOutbox(
            self.client, status=status, channel=channel, thread=thread, user=user, **where
        )

    async def greet(self, thread: AssistantThread) -> None:
        """The greeting in a thread just opened, and the suggested prompts under it."""
        if not self.settings.enabled:
            return
        if self.settings.greeting:
            try:
                await self.client.chat_postMessage(
                    channel=thread.channel,
                    thread_ts=thread.thread,
                    text=to_mrkdwn(self.settings.greeting),
                    unfurl_links=False,
                )
            except SlackClientError as exc:
                log.warning("greeting in %s failed: %s", thread.channel, _slack_error(exc))
        if self.settings.suggested_prompts:
            prompts = [p.model_dump() for p in self.settings.suggested_prompts]
            try:
                await self.client.assistant_threads_setSuggestedPrompts(
                    channel_id=thread.channel, thread_ts=thread.thread, prompts=prompts
                )
            except SlackClientError as exc:
                log.warning(
                    "suggesting prompts in %s failed: %s", thread.channel, _slack_error(exc)
                )

    async def title(self, turn: Turn, *, channel: str, thread: str) -> None:
        """Title the thread from its first question (once: later questions leave it)."""
        if not isinstance(turn.accepted, Pending) or not await self._first_question(turn):
            return
        title = title_from(turn.incoming.text)
        if not title:
            return
        try:
            await self.client.assistant_threads_setTitle(
                channel_id=channel, thread_ts=thread, title=title
            )
        except SlackClientError as exc:
            log.info("no title for %s/%s: %s", channel, thread, _slack_error(exc))

    async def _first_question(self, turn: Turn) -> bool:
        """Whether memory holds no person's message in the thread before this one."""
        assert isinstance(turn.accepted, Pending)
        opening = await self.store.messages_after_turn(
            conversation_key=turn.incoming.conversation.key, after_turn=0, limit=_OPENING
        )
        asked = [m.id for m in opening if m.role is Role.USER]
        return bool(asked) and asked[0] == turn.accepted.stored.id
