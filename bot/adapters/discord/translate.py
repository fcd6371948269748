"""Pure translation of what Discord says about a message into the core's values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from bot.adapters.text import named_mentions, without_mentions_of
from bot.core.models import Conversation, IncomingMessage

PLATFORM = "discord"
DM_WORKSPACE = "dm"
PUSHPIN = "📌"
"""The reaction that marks a message important."""
USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")


@dataclass(frozen=True)
class MessageFacts:
    """The fields of a Discord message the bot uses, as plain values."""

    message_id: int
    channel_id: int
    guild_id: int | None
    """None in DMs."""
    parent_id: int | None
    """The parent channel when ``channel_id`` is a thread."""
    author_id: int
    author_name: str
    """The display name (server nickname, else global name, else username)."""
    author_is_bot: bool
    content: str
    sent_at: datetime
    mentions: Mapping[int, str] = field(default_factory=dict)
    """Display names of the users the message mentions, by id."""
    reply_to_author_id: int | None = None
    role_mentions: frozenset[int] = frozenset()
    """The roles the message mentions, by id."""
    own_role_id: int | None = None
    """The bot's own role in the server (the managed role Discord names after it), if any."""
    is_user_message: bool = True
    """False for system messages (joins, pins, thread created, ...)."""


def conversation_for(
    *, guild_id: int | None, channel_id: int, parent_id: int | None
) -> Conversation:
    """A channel, or a thread under its parent channel (sharing the parent's pins)."""
    workspace = str(guild_id) if guild_id is not None else DM_WORKSPACE
    if parent_id is not None:
        return Conversation(PLATFORM, workspace, str(parent_id), str(channel_id))
    return Conversation(PLATFORM, workspace, str(channel_id))


def jump_url(guild_id: int | None, channel_id: int, message_id: str) -> str | None:
    """Discord's link to a message (``https://discord.com/channels/G/C/M``; ``@me`` in DMs)."""
    if not message_id.isdigit():
        return None
    return f"https://discord.com/channels/{guild_id or '@me'}/{channel_id}/{message_id}"


def is_pushpin(emoji_name: str | None) -> bool:
    return emoji_name == PUSHPIN


def is_addressed(facts: MessageFacts, *, bot_id: int) -> bool:
    """A DM, a mention (of the bot, or of its own role: Discord offers both for its name), or
    a reply to the bot (the core's handler adds the channels that answer every message)."""
    return (
        facts.guild_id is None
        or bot_id in facts.mentions
        or (facts.own_role_id is not None and facts.own_role_id in facts.role_mentions)
        or facts.reply_to_author_id == bot_id
    )


def prompt_text(
    content: str, mentions: Mapping[int, str], *, bot_id: int, own_role_id: int | None = None
) -> str:
    """The bot's own mention (or its role's) removed, other users' mentions shown as
    ``@name``."""

    text = without_mentions_of(content, {str(bot_id)}, USER_MENTION)
    if own_role_id is not None:
        text = without_mentions_of(text, {str(own_role_id)}, _ROLE_MENTION)
    names = {str(user_id): name for user_id, name in mentions.items()}
    return named_mentions(text, names, USER_MENTION).strip()


def to_incoming(facts: MessageFacts, *, bot_id: int) -> IncomingMessage | None:
    """The core's message, or None for what is not user input (bots, system messages)."""
    if facts.author_is_bot or not facts.is_user_message:
        return None
    return IncomingMessage(
        conversation=conversation_for(
            guild_id=facts.guild_id, channel_id=facts.channel_id, parent_id=facts.parent_id
        ),
        author_id=str(facts.author_id),
        author_name=facts.author_name,
        text=prompt_text(
            facts.content, facts.mentions, bot_id=bot_id, own_role_id=facts.own_role_id
        ),
        addressed=is_addressed(facts, bot_id=bot_id),
        message_id=str(facts.message_id),
        sent_at=facts.sent_at,
    )
