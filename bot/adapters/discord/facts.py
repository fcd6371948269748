"""Reading a :class:`discord.Message` into plain :class:`MessageFacts` (the only step that
touches discord.py objects before the pure translation)."""

from __future__ import annotations

import discord

from bot.adapters.discord.translate import MessageFacts, conversation_for
from bot.core.models import Conversation

_USER_MESSAGE_TYPES = (discord.MessageType.default, discord.MessageType.reply)


def parent_of(channel: object) -> int | None:
    return channel.parent_id if isinstance(channel, discord.Thread) else None


def facts_of(message: discord.Message) -> MessageFacts:
    resolved = message.reference.resolved if message.reference is not None else None
    own_role = message.guild.self_role if message.guild is not None else None
    return MessageFacts(
        message_id=message.id,
        channel_id=message.channel.id,
        guild_id=message.guild.id if message.guild is not None else None,
        parent_id=parent_of(message.channel),
        author_id=message.author.id,
        author_name=message.author.display_name,
        author_is_bot=message.author.bot,
        content=message.content,
        sent_at=message.created_at,
        mentions={user.id: user.display_name for user in message.mentions},
        reply_to_author_id=resolved.author.id if isinstance(resolved, discord.Message) else None,
        role_mentions=frozenset(role.id for role in message.role_mentions),
        own_role_id=own_role.id if own_role is not None else None,
        is_user_message=message.type in _USER_MESSAGE_TYPES,
    )


def conversation_of(*, guild_id: int | None, channel_id: int, channel: object) -> Conversation:
    """The conversation of a channel (or thread) the client may or may not have cached."""
    return conversation_for(guild_id=guild_id, channel_id=channel_id, parent_id=parent_of(channel))
