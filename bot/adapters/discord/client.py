"""The discord.py client: gateway events translated for the core's handler, replies back to
the channel through a :class:`~.outbox.DiscordOutbox`."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
from typing import Any

import discord

from bot.adapters.discord.catch_up import Holds
from bot.adapters.discord.facts import facts_of, parent_of
from bot.adapters.discord.outbox import DiscordOutbox
from bot.adapters.discord.slash import NO_MENTIONS, CommandRunner, build_tree
from bot.adapters.discord.translate import conversation_for, is_pushpin, to_incoming
from bot.adapters.status import StatusReaction
from bot.config import DiscordConfig
from bot.core.engine import Engine
from bot.core.handler import Handler
from bot.core.models import (
    Conversation,
    Deletion,
    Edit,
    IncomingMessage,
    Reaction,
)
from bot.core.ports.leases import Awaiting
from bot.core.ports.platform import Outbox
from bot.core.ports.store import StorageError

log = logging.getLogger(__name__)

_PARENTS = 4096  # uncached threads whose parent channel is remembered


def intents() -> discord.Intents:
    """Guilds, messages (server and DM) and their text: Message Content is privileged;
    reactions (for 📌) are not."""
    wanted = discord.Intents.none()
    wanted.guilds = True
    wanted.guild_messages = True
    wanted.dm_messages = True
    wanted.message_content = True
    wanted.reactions = True
    return wanted


class MemoryClient(discord.Client):
    """One gateway connection (unsharded); :class:`ShardedMemoryClient` runs shards."""

    def __init__(
        self,
        *,
        engine: Engine,
        settings: DiscordConfig,
        guild_ready_timeout: float = 2.0,
        identify_interval: float = 5.0,
    ) -> None:
        # The bot never joins voice: discord.py need not warn on each start that the voice
        # libraries are not installed.
        discord.VoiceClient.warn_nacl = discord.VoiceClient.warn_dave = False
        super().__init__(
            intents=intents(),
            allowed_mentions=NO_MENTIONS,
            guild_ready_timeout=guild_ready_timeout,
            **self._sharding(settings),
        )
        self._engine = engine
        self._settings = settings
        self._identify_interval = identify_interval
        self._parents: dict[int, asyncio.Future[int | None]] = {}
        emoji = settings.status_reaction
        self._status = None if emoji is None else StatusReaction("discord", emoji)
        self.holds = Holds()
        """Conversations being caught up on start: their live messages wait for it."""
        self.handler = Handler(engine=engine)
        self._taking = True
        self.tree = build_tree(self, CommandRunner(handler=self.handler, settings=settings))

    @staticmethod
    def _sharding(settings: DiscordConfig) -> dict[str, Any]:
        """discord.py's options for the shards this client runs: none, unsharded."""
        return {}

    @property
    def engine(self) -> Engine:
        return self._engine

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        """Wait between one connection's IDENTIFY and the next (a later shard, a reconnect):
        Discord takes one IDENTIFY every 5 seconds (per bucket of its session start limit)."""
        if not initial:
            await asyncio.sleep(self._identify_interval)

    async def setup_hook(self) -> None:
        """Sync the slash commands, to the development server when one is configured; not at
        all when another process registers them (``discord.register_commands``)."""
        if not self._settings.register_commands:
            log.info("slash commands left to the process that registers them")
        elif self._settings.dev_guild_id is not None:
            guild = discord.Object(id=self._settings.dev_guild_id)
            self.tree.copy_global_to(guild=guild)
            synced = await self.tree.sync(guild=guild)
            log.info("synced %d commands to server %s", len(synced), guild.id)
        else:
            synced = await self.tree.sync()
            log.info("synced %d commands globally (they can take a while to appear)", len(synced))

    async def _parent(self, guild_id: int | None, channel_id: int, channel: object) -> int | None:
        """The parent channel when ``channel_id`` is a thread. A thread the client has not
        cached (an archived one, say) comes as a bare id: Discord is asked once what it is,
        so that its messages, edits, deletions and 📌 reach the thread's memory rather than
        a conversation of their own."""
        if guild_id is None or isinstance(channel, discord.Thread):
            return parent_of(channel)
        if channel is not None and not isinstance(channel, discord.PartialMessageable):
            return None  # a channel the client knows
        known = self._parents.get(channel_id)
        if known is None:  # one request, however many events arrive meanwhile
            if len(self._parents) >= _PARENTS:
                self._parents.clear()
            known = self._parents[channel_id] = asyncio.ensure_future(
                self._fetch_parent(channel_id)
            )
        return await asyncio.shield(known)

    async def _fetch_parent(self, channel_id: int) -> int | None:
        try:
            fetched = await self.fetch_channel(channel_id)
        except Exception as exc:
            # Whatever went wrong, the event is taken as a channel's; asked again next time.
            self._parents.pop(channel_id, None)
            log.warning("cannot tell whether channel %s is a thread (%s)", channel_id, exc)
            return None
        return parent_of(fetched)

    async def _conversation(
        self, guild_id: int | None, channel_id: int, channel: object
    ) -> Conversation:
        parent = await self._parent(guild_id, channel_id, channel)
        return conversation_for(guild_id=guild_id, channel_id=channel_id, parent_id=parent)

    async def _incoming(self, message: discord.Message) -> IncomingMessage | None:
        if self.user is None:
            return None
        facts = facts_of(message)
        if facts.parent_id is None:
            parent = await self._parent(facts.guild_id, facts.channel_id, message.channel)
            facts = dataclasses.replace(facts, parent_id=parent)
        return to_incoming(facts, bot_id=self.user.id)

    def outbox_for(self, conversation: Conversation, item: Awaiting) -> DiscordOutbox | None:
        """Where the answer to a stored message goes, for one another process received (a
        reply to it, in its channel or thread)."""
        question = item.question
        if question.message_id is None or not question.message_id.isdigit():
            return None
        channel = self.get_partial_messageable(int(conversation.thread or conversation.channel))
        message = channel.get_partial_message(int(question.message_id))
        return DiscordOutbox(message, max_reply_chars=self._engine.config.llm.max_reply_chars)

    def _with_status(self, message: discord.Message, outbox: DiscordOutbox) -> Outbox:
        """The outbox, with the status reaction on ``message`` while it is answered (when
        ``discord.status_reaction`` is set)."""
        status, me = self._status, self.user
        if status is None or me is None:
            return outbox

        async def react(on: bool) -> None:
            if on:
                await message.add_reaction(status.emoji)
            else:
                await message.remove_reaction(status.emoji, me)

        return status.around(outbox, react)

    def stop_taking(self) -> None:
        """Ignore the events that arrive from now on (shutting down): the work they would
        start could not finish."""
        self._taking = False

    async def on_message(self, message: discord.Message) -> None:
        incoming = await self._incoming(message) if self._taking else None
        if incoming is None:
            return
        await self.holds.wait(incoming.conversation.key)
        outbox = DiscordOutbox(message, max_reply_chars=self._engine.config.llm.max_reply_chars)
        try:
            await self.handler.handle(incoming, self._with_status(message, outbox))
        except StorageError as exc:
            # Discord never delivers a message again: the person is told it was not kept.
            notice = self.handler.storage_notice(incoming.conversation, exc)
            if notice is not None:
                await outbox.send(notice)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        incoming = await self._incoming(payload.message) if self._taking else None
        if incoming is None or incoming.message_id is None:
            return
        await self.handler.edit(Edit(incoming.conversation, incoming.message_id, incoming.text))

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        await self._forget(payload.guild_id, payload.channel_id, [payload.message_id])

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        await self._forget(payload.guild_id, payload.channel_id, sorted(payload.message_ids))

    async def _forget(self, guild_id: int | None, channel_id: int, message_ids: list[int]) -> None:
        if not self._taking:
            return
        conversation = await self._conversation(guild_id, channel_id, self.get_channel(channel_id))
        for message_id in message_ids:
            await self.handler.delete(Deletion(conversation, str(message_id)))

    async def on_raw_reaction_add(self, payload: discord.RawReactionActionEvent) -> None:
        await self._pushpin(payload, on=True)

    async def on_raw_reaction_remove(self, payload: discord.RawReactionActionEvent) -> None:
        await self._pushpin(payload, on=False)

    async def _pushpin(self, payload: discord.RawReactionActionEvent, *, on: bool) -> None:
        """📌 on a message marks it important; other reactions and the bot's own are
        ignored."""
        if not self._taking or not is_pushpin(payload.emoji.name):
            return
        if self.user is not None and payload.user_id == self.user.id:
            return
        conversation = await self._conversation(
            payload.guild_id, payload.channel_id, self.get_channel(payload.channel_id)
        )
        await self.handler.react(Reaction(conversation, str(payload.message_id), on))

    async def on_error(self, event_method: str, /, *args: Any, **kwargs: Any) -> None:
        if isinstance(sys.exc_info()[1], StorageError):
            return  # the store logged its cause in one line
        log.exception("Discord event %s failed", event_method)


class ShardedMemoryClient(MemoryClient, discord.AutoShardedClient):
    """The same client over several gateway connections, one a shard: Discord sends each
    server's events on shard ``(guild_id >> 22) % shard_count``, and discord.py sends on the
    shard of the server concerned."""

    @staticmethod
    def _sharding(settings: DiscordConfig) -> dict[str, Any]:
        count = settings.shard_count
        ids = None if settings.shard_ids is None else list(settings.shard_ids)
        return {"shard_count": None if count == "auto" else count, "shard_ids": ids}

    async def launch_shards(self) -> None:
        """With ``shard_count: auto``, the count Discord recommends; the gateway stays the
        configured one (discord.py would take the one Discord names with it)."""
        if self._settings.shard_count == "auto" and not self.is_closed():
            self.shard_count, _, _ = await self.http.get_bot_gateway()
            log.info("discord: %d shards, as Discord recommends", self.shard_count)
        await super().launch_shards()


def client_for(
    *,
    engine: Engine,
    settings: DiscordConfig,
    guild_ready_timeout: float = 2.0,
    identify_interval: float = 5.0,
) -> MemoryClient:
    """The sharded client when ``discord.shard_count`` is set, else the unsharded one."""
    kind = MemoryClient if settings.shard_count is None else ShardedMemoryClient
    return kind(
        engine=engine,
        settings=settings,
        guild_ready_timeout=guild_ready_timeout,
        identify_interval=identify_interval,
    )
