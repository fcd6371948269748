"""Showing replies on Discord: typing while the answer is made, the answer as a reply to the
message it answers, split to fit, never pinging anyone, a long reply's whole text as a file."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import discord

from bot.adapters.discord.render import split_message
from bot.adapters.discord.slash import NO_MENTIONS
from bot.adapters.live import LiveText, MessageGone
from bot.adapters.text import ATTACHMENT_NAME, LongReply, shorten
from bot.core.models import Reply

log = logging.getLogger(__name__)


_NOT_ATTACHED = "(The rest of this reply could not be attached; it is kept in memory.)"


class DiscordOutbox:
    """The answer to ``message``, in its channel (or thread)."""

    def __init__(
        self, message: discord.Message | discord.PartialMessage, *, max_reply_chars: int
    ) -> None:
        self._message = message
        self._max_reply_chars = max_reply_chars
        self._typing: AbstractAsyncContextManager[None] | None = None
        self._live: LiveText | None = None
        self._posted: dict[str, discord.Message] = {}

    @asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """Typing, until the answer's first text shows (or the answer is sent). An answer that
        fails or is abandoned stops updating what it showed."""
        self._typing = self._message.channel.typing()
        await self._typing.__aenter__()
        try:
            yield None
        except BaseException:
            if self._live is not None:
                await self._live.abandon()
            raise
        finally:
            await self._stop_typing()

    async def _stop_typing(self) -> None:
        typing, self._typing = self._typing, None
        if typing is not None:
            await typing.__aexit__(None, None, None)

    async def show(self, text: str) -> None:
        """The answer so far, as a reply edited about once a second (discord.py waits out
        Discord's rate limits), continued in new messages past 2,000 characters."""
        if self._live is None:
            await self._stop_typing()
            self._live = LiveText(self, self._cut)
        self._live.show(text)

    async def send(self, reply: Reply) -> str | None:
        long = shorten(reply.text, self._max_reply_chars)
        if self._live is not None:
            shown = await self._live.finish(self._cut(reply.text))
            if long is not None:
                await self._attach(long)
            return shown
        parts = split_message(long.shown if long else reply.text)
        if not parts:
            return None
        first, *rest = parts
        channel = self._message.channel
        reference = self._message.to_reference(fail_if_not_exists=False)
        sent = await channel.send(first.text, reference=reference, allowed_mentions=NO_MENTIONS)
        for part in rest:
            await channel.send(part.text, allowed_mentions=NO_MENTIONS)
        if long is not None:
            await self._attach(long)
        return str(sent.id)

    # -- the answer's messages, for LiveText --

    def _cut(self, text: str) -> list[str]:
        """The messages showing ``text``: its start when it is too long to post whole."""
        long = shorten(text, self._max_reply_chars)
        return [part.text for part in split_message(long.shown if long else text)]

    async def post(self, text: str) -> str | None:
        channel = self._message.channel
        if self._posted:
            sent = await channel.send(text, allowed_mentions=NO_MENTIONS)
        else:
            reference = self._message.to_reference(fail_if_not_exists=False)
            sent = await channel.send(text, reference=reference, allowed_mentions=NO_MENTIONS)
        self._posted[str(sent.id)] = sent
        return str(sent.id)

    async def edit(self, message_id: str, text: str) -> None:
        try:
            self._posted[message_id] = await self._posted[message_id].edit(
                content=text, allowed_mentions=NO_MENTIONS
            )
        except discord.NotFound:  # someone deleted it while the answer was written
            raise MessageGone(message_id) from None

    async def delete(self, message_id: str) -> None:
        await self._posted.pop(message_id).delete()

    async def _attach(self, long: LongReply) -> None:
        """The whole of a long reply as a file, with its note."""
        channel = self._message.channel
        file = discord.File(io.BytesIO(long.attachment), filename=ATTACHMENT_NAME)
        try:
            await channel.send(long.note, file=file, allowed_mentions=NO_MENTIONS)
        except discord.HTTPException as exc:  # no Attach Files permission, say
            log.warning("attaching a long reply failed: %s %s", exc.status, exc.text)
            await channel.send(_NOT_ATTACHED, allowed_mentions=NO_MENTIONS)
