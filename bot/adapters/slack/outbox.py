"""Showing replies on Slack: a "thinking" message the answer replaces, mrkdwn split to fit,
what only the asker may see as ephemeral messages, a long reply's whole text as a file.

An answer shown as the model writes it streams into its thread with Slack's streaming API
(:mod:`.stream`, which takes the thinking message away once the stream shows text), or, at
the top of a channel and where Slack refuses the API, updates the thinking message about once
a second (:class:`~bot.adapters.live.LiveText`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.live import LiveText, MessageGone, RateLimited
from bot.adapters.slack.files import not_posted
from bot.adapters.slack.history import read_page
from bot.adapters.slack.render import split, to_mrkdwn
from bot.adapters.slack.stream import NativeText, StreamSupport
from bot.adapters.text import ATTACHMENT_NAME, LongReply, shorten
from bot.core.models import Reply, ReplyKind

log = logging.getLogger(__name__)
_GONE = frozenset({"message_not_found", "cant_update_message"})

THINKING = "_Thinking…_"
THINKING_EVENT = "memorybot_thinking"
"""The metadata event type of a thinking message, its payload naming the question's ts: what
lets a process taking an answer over find the message a killed process showed but never
recorded."""
_LOOK_BACK = 100  # messages after the question searched for its thinking message
_MAX_RESPONSES = 5  # a response_url takes 5 messages
_NOT_ATTACHED = "_(The rest of this reply could not be attached; it is kept in memory.)_"


def _slack_error(exc: SlackClientError) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error"))
    return type(exc).__name__


def is_ephemeral(reply: Reply) -> bool:
    return reply.ephemeral or reply.kind is ReplyKind.ERROR


class SlackOutbox:
    """The answer to one message: in its channel (and thread), ephemeral ones to ``user``."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel: str,
        thread: str | None,
        user: str,
        max_reply_chars: int,
        question: str | None = None,
        placeholder: str | None = None,
        adopt: bool = False,
        team: str | None = None,
        streaming: StreamSupport | None = None,
    ) -> None:
        """``question``: the ts of the message answered, which the thinking message names.
        ``placeholder``: the thinking message another process showed for this answer (taken
        over), replaced by it rather than shown again; ``adopt``: look for one in the
        conversation when none is known (its process may have died before recording it).
        ``streaming``: whether Slack's streaming API may show the answer (to ``user`` of
        ``team``, in a thread); None: never. An answer taken over (``placeholder`` or
        ``adopt``) updates the message shown before it instead."""
        self._client = client
        self._channel = channel
        self._thread = thread
        self._user = user
        self._max_reply_chars = max_reply_chars
        self._placeholder = placeholder
        self._question = question
        self._adopt = adopt
        self._live: LiveText | None = None
        self._team = team
        self._streaming = streaming
        self._native: NativeText | None = None
        self._taken_over = placeholder is not None or adopt

    @asynccontextmanager
    async def working(self) -> AsyncIterator[str | None]:
        """A "thinking" message, replaced by the answer; deleted if there is none."""
        await self._adopt_shown()
        if self._placeholder is None:
            self._placeholder = await self._post(THINKING, thinking=True)
        try:
            yield self._placeholder
        except BaseException:
            if self._native is not None:
                await self._native.abandon()
            await self._delete(self._placeholder)
            self._placeholder = None
            raise

    async def show(self, text: str) -> None:
        """The answer so far, in the thinking message (and more, past Slack's length), updated
        about once a second; streamed into its thread where Slack allows."""
        if self._live is None and self._native is None and self._streams():
            assert self._thread is not None and self._streaming is not None
            self._native = NativeText(
                self._client,
                channel=self._channel,
                thread=self._thread,
                team=self._team,
                user=self._user,
                support=self._streaming,
                started=self._unthink,
            )
        if self._native is not None and not self._native.refused:
            self._native.show(text)
            return
        if self._live is None:
            surface = _Messages(self)
            self._live = LiveText(surface, self._cut, first=self._placeholder)
        self._live.show(text)

    def _streams(self) -> bool:
        return (
            self._streaming is not None
            and self._streaming.usable(self._thread)
            and not self._taken_over
        )

    async def _unthink(self) -> None:
        """The streamed answer shows text: the thinking message goes."""
        await self._delete(self._placeholder)
        self._placeholder = None

    async def send(self, reply: Reply) -> str | None:
        native, self._native = self._native, None
        if native is not None and is_ephemeral(reply):
            await native.abandon()
        elif native is not None and not native.refused:
            long = shorten(reply.text, self._max_reply_chars)
            first = await native.finish(long.shown if long else reply.text)
            if first is not None:
                if long is not None:
                    await self._attach(long)
                return first
        if self._live is not None and not is_ephemeral(reply):
            long = shorten(reply.text, self._max_reply_chars)
            first = await self._live.finish(self._cut(reply.text))
            if long is not None:
                await self._attach(long)
            return first
        if self._live is not None:
            await self._live.abandon()
        chunks = split(to_mrkdwn(reply.text))
        if is_ephemeral(reply):
            await self._delete(self._placeholder)
            for chunk in chunks:
                await self._client.chat_postEphemeral(
                    channel=self._channel, user=self._user, text=chunk, thread_ts=self._thread
                )
            return None
        long = shorten(reply.text, self._max_reply_chars)
        if long is not None:
            chunks = split(to_mrkdwn(long.shown))
        await self._adopt_shown()
        first = self._placeholder
        if first is not None and chunks:
            try:
                await self._update(first, chunks[0])
                chunks = chunks[1:]
            except (MessageGone, RateLimited):  # deleted meanwhile: the answer is posted
                first = None
        for chunk in chunks:
            posted = await self._post(chunk)
            first = first or posted
        if long is not None:
            await self._attach(long)
        return first

    async def _attach(self, long: LongReply) -> None:
        """The whole of a long reply as a file, with its note."""
        try:
            await self._client.files_upload_v2(
                channel=self._channel,
                thread_ts=self._thread,
                content=long.attachment,
                filename=ATTACHMENT_NAME,
                title=ATTACHMENT_NAME,
                initial_comment=to_mrkdwn(long.note),
            )
        except (SlackApiError, SlackClientError) as exc:
            log.warning("uploading a long reply to %s failed: %s", self._channel, _slack_error(exc))
            await self._post(_NOT_ATTACHED)

    async def _adopt_shown(self) -> None:
        """Take as this answer's placeholder the thinking message a process showed for the
        question before it died, if any (looked for once)."""
        if self._adopt and self._placeholder is None:
            self._adopt = False
            self._placeholder = await self._shown_before()

    async def _shown_before(self) -> str | None:
        if self._question is None:
            return None
        try:
            found = await read_page(
                self._client,
                channel=self._channel,
                thread=self._thread,
                oldest=self._question,
                limit=_LOOK_BACK,
                include_all_metadata=True,
            )
        except (SlackApiError, SlackClientError) as exc:
            log.warning(
                "reading %s for a thinking message failed: %s", self._channel, _slack_error(exc)
            )
            return None
        for message in found.get("messages") or []:
            metadata = message.get("metadata") or {}
            payload = metadata.get("event_payload") or {}
            if (
                metadata.get("event_type") == THINKING_EVENT
                and payload.get("question") == self._question
            ):
                return str(message["ts"])
        return None

    async def _post(self, text: str, *, thinking: bool = False) -> str | None:
        metadata = None
        if thinking and self._question is not None:
            payload = {"question": self._question}
            metadata = {"event_type": THINKING_EVENT, "event_payload": payload}
        try:
            answer = await self._client.chat_postMessage(
                channel=self._channel,
                thread_ts=self._thread,
                text=text,
                unfurl_links=False,
                metadata=metadata,
            )
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.warning("chat.postMessage to %s failed: %s", self._channel, error)
            return None
        ts = answer.get("ts")
        return str(ts) if ts else None

    def _cut(self, text: str) -> list[str]:
        """The messages showing ``text``: its start when it is too long to post whole."""
        long = shorten(text, self._max_reply_chars)
        return split(to_mrkdwn(long.shown if long else text))

    async def _update(self, ts: str, text: str) -> None:
        try:
            await self._client.chat_update(channel=self._channel, ts=ts, text=text)
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                raise RateLimited(_retry_after(exc)) from None
            if exc.response.get("error") in _GONE:
                raise MessageGone(ts) from None
            log.warning("chat.update in %s failed: %s", self._channel, exc.response.get("error"))

    async def _delete(self, ts: str | None) -> None:
        if ts is None:
            return
        try:
            await self._client.chat_delete(channel=self._channel, ts=ts)
        except SlackApiError as exc:
            log.warning("chat.delete in %s failed: %s", self._channel, exc.response.get("error"))


def _retry_after(exc: SlackApiError) -> float:
    try:
        return max(1.0, float(exc.response.headers.get("Retry-After", 1)))
    except (TypeError, ValueError):
        return 1.0


class _Messages:
    """An answer's messages in its channel (or thread), for :class:`LiveText`."""

    def __init__(self, outbox: SlackOutbox) -> None:
        self._outbox = outbox

    async def post(self, text: str) -> str | None:
        return await self._outbox._post(text)

    async def edit(self, message_id: str, text: str) -> None:
        await self._outbox._update(message_id, text)

    async def delete(self, message_id: str) -> None:
        await self._outbox._delete(message_id)


Upload = Callable[[Reply], Awaitable[str | None]]
"""Posts a reply with its files (:func:`~bot.adapters.slack.files.post_files`); None once
posted, else why not."""


async def answer_command(
    respond: AsyncRespond, reply: Reply, *, upload: Upload | None = None
) -> bool:
    """A command's reply through its response URL; whether Slack took it (a response URL
    lasts 30 minutes). A reply with files is posted with them by ``upload`` instead; where
    that fails, through the response URL with a line saying why the files are missing."""
    if reply.attachments:
        why = "this is no channel the bot can post in" if upload is None else await upload(reply)
        if why is None:
            return True
        text = f"{reply.text}\n{not_posted(reply, why)}"
        reply = dataclasses.replace(reply, text=text, attachments=())
    kind = "ephemeral" if is_ephemeral(reply) else "in_channel"
    for chunk in split(to_mrkdwn(reply.text))[:_MAX_RESPONSES]:
        response = await respond(text=chunk, response_type=kind)
        if response.status_code != 200:
            return False
    return True
