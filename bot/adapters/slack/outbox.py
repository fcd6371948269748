"""Showing replies on Slack: a "thinking" message the answer replaces, mrkdwn split to fit,
what only the asker may see as ephemeral messages, a long reply's whole text as a file."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.render import split, to_mrkdwn
from bot.adapters.text import ATTACHMENT_NAME, LongReply, shorten
from bot.core.models import Reply, ReplyKind

log = logging.getLogger(__name__)

THINKING = "_Thinking…_"
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
        placeholder: str | None = None,
    ) -> None:
        """``placeholder``: the thinking message another process showed for this answer
        (taken over), replaced by it rather than shown again."""
        self._client = client
        self._channel = channel
        self._thread = thread
        self._user = user
        self._max_reply_chars = max_reply_chars
        self._placeholder = placeholder

    @asynccontextmanager
    async def working(self) -> AsyncIterator[str | None]:
        """A "thinking" message, replaced by the answer; deleted if there is none."""
        if self._placeholder is None:
            self._placeholder = await self._post(THINKING)
        try:
            yield self._placeholder
        except BaseException:
            await self._delete(self._placeholder)
            self._placeholder = None
            raise

    async def send(self, reply: Reply) -> str | None:
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
        first = self._placeholder
        if first is not None and chunks:
            await self._client.chat_update(channel=self._channel, ts=first, text=chunks[0])
            chunks = chunks[1:]
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

    async def _post(self, text: str) -> str | None:
        try:
            answer = await self._client.chat_postMessage(
                channel=self._channel, thread_ts=self._thread, text=text, unfurl_links=False
            )
        except SlackApiError as exc:
            error = exc.response.get("error")
            log.warning("chat.postMessage to %s failed: %s", self._channel, error)
            return None
        ts = answer.get("ts")
        return str(ts) if ts else None

    async def _delete(self, ts: str | None) -> None:
        if ts is None:
            return
        try:
            await self._client.chat_delete(channel=self._channel, ts=ts)
        except SlackApiError as exc:
            log.warning("chat.delete in %s failed: %s", self._channel, exc.response.get("error"))


async def answer_command(respond: AsyncRespond, reply: Reply) -> None:
    """A command's reply through its response URL."""
    kind = "ephemeral" if is_ephemeral(reply) else "in_channel"
    for chunk in split(to_mrkdwn(reply.text))[:_MAX_RESPONSES]:
        await respond(text=chunk, response_type=kind)
