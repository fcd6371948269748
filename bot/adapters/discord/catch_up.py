"""Catch-up on start: what people wrote while the bot was stopped (Discord never redelivers),
read back from each channel's history after its newest stored message and stored as if it had
arrived, through the same translation as live messages, never answered.

Only what was written before catch-up began is read: from then on messages arrive live.
Live messages of a conversation being caught up wait (a bounded while) until its catch-up is
stored, so memory keeps Discord's order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING

import discord

from bot.adapters.discord.facts import facts_of
from bot.adapters.discord.translate import to_incoming
from bot.config import CatchUpConfig
from bot.core.models import Conversation
from bot.core.ports.store import NewestMessage
from bot.core.progress import logged
from bot.core.wording import counted

if TYPE_CHECKING:
    from bot.adapters.discord.client import MemoryClient

log = logging.getLogger(__name__)

HOLD_SECONDS = 30.0
"""The longest a live message waits for its conversation's catch-up."""


class Holds:
    """The conversations being caught up: their live messages wait until each is done."""

    def __init__(self) -> None:
        self._done: dict[str, asyncio.Event] = {}

    def hold(self, keys: Iterable[str]) -> None:
        for key in keys:
            self._done.setdefault(key, asyncio.Event())

    def release(self, key: str) -> None:
        done = self._done.pop(key, None)
        if done is not None:
            done.set()

    async def wait(self, key: str) -> None:
        done = self._done.get(key)
        if done is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), HOLD_SECONDS)


async def catch_up(client: MemoryClient, settings: CatchUpConfig, *, until: datetime) -> None:
    """Store what was written in each recently active conversation since its newest stored
    message and before ``until``, when the client connected (what is written from then on
    arrives live); log the count (one line, and per conversation at DEBUG)."""
    if settings.hours <= 0:
        return
    since = time.time() - settings.hours * 3600
    newest = await client.engine.store.newest_messages(platform="discord", since=since)
    client.holds.hold(latest.conversation_key for latest in newest)
    total = 0
    progress = logged(
        "discord catch-up", total=len(newest), unit="conversation", logger=log, final=False
    )
    try:
        with progress:
            for latest in newest:
                try:
                    total += await _one(client, latest, until, settings.max_messages)
                except (discord.HTTPException, OSError, TimeoutError) as exc:
                    log.warning("discord catch-up in %s failed: %s", latest.conversation_key, exc)
                finally:
                    client.holds.release(latest.conversation_key)
                progress.advance()
    finally:
        for latest in newest:
            client.holds.release(latest.conversation_key)
    log.info(
        "discord: caught up %s written while stopped, in %s",
        counted(total, "message"),
        counted(progress.done, "conversation"),
    )


async def _channel(client: MemoryClient, conversation: Conversation) -> discord.abc.Messageable:
    channel_id = int(conversation.thread or conversation.channel)
    if conversation.workspace == "dm":
        return client.get_partial_messageable(channel_id, type=discord.ChannelType.private)
    known = client.get_channel(channel_id)
    if isinstance(known, discord.abc.Messageable):
        return known
    fetched = await client.fetch_channel(channel_id)
    if not isinstance(fetched, discord.abc.Messageable):
        raise discord.ClientException(f"channel {channel_id} has no messages")
    return fetched


async def _one(client: MemoryClient, latest: NewestMessage, until: datetime, limit: int) -> int:
    """Catch one conversation up; how many messages were stored."""
    conversation = Conversation.from_key(latest.conversation_key)
    channel = await _channel(client, conversation)
    after = discord.Object(id=int(latest.message_id))
    # The newest first, one more than wanted to tell whether some were left.
    history = channel.history(limit=limit + 1, after=after, before=until, oldest_first=False)
    found = [m async for m in history]
    if len(found) > limit:
        log.warning(
            "discord catch-up in %s: more than %d written while stopped; the oldest were left",
            conversation.key,
            limit,
        )
    stored = 0
    for message in sorted(found[:limit], key=lambda m: m.id):
        stored += await _store(client, conversation, message)
    log.debug("discord catch-up: %s in %s", counted(stored, "message"), conversation.key)
    return stored


async def _store(client: MemoryClient, conversation: Conversation, message: discord.Message) -> int:
    """Record one message as a live one would be recorded (not answered); 1 if stored."""
    if client.user is None:
        return 0
    store = client.engine.store
    if await store.find_message(conversation_key=conversation.key, message_id=str(message.id)):
        return 0
    incoming = to_incoming(facts_of(message), bot_id=client.user.id)
    if incoming is None or incoming.conversation.key != conversation.key:
        return 0
    return int(await client.handler.record(incoming))
