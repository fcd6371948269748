"""Showing replies on Discord: typing while the answer is made, the answer as a reply to the
message it answers, split to fit, never pinging anyone, a long reply's whole text as a file."""

from __future__ import annotations

import io
import logging
from contextlib import AbstractAsyncContextManager

import discord

from bot.adapters.discord.render import split_message
from bot.adapters.discord.slash import NO_MENTIONS
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

    def working(self) -> AbstractAsyncContextManager[None]:
        return self._message.channel.typing()

    async def send(self, reply: Reply) -> str | None:
        long = shorten(reply.text, self._max_reply_chars)
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

    async def _attach(self, long: LongReply) -> None:
        """The whole of a long reply as a file, with its note."""
        channel = self._message.channel
        file = discord.File(io.BytesIO(long.attachment), filename=ATTACHMENT_NAME)
        try:
            await channel.send(long.note, file=file, allowed_mentions=NO_MENTIONS)
        except discord.HTTPException as exc:  # no Attach Files permission, say
            log.warning("attaching a long reply failed: %s %s", exc.status, exc.text)
            await channel.send(_NOT_ATTACHED, allowed_mentions=NO_MENTIONS)
