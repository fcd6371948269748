"""The pure translation of Discord messages into the core's values."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.adapters.discord.translate import MessageFacts, conversation_for, to_incoming
from bot.core.models import Conversation

BOT = 900
WHEN = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
PLAIN = MessageFacts(
    message_id=1,
    channel_id=10,
    guild_id=5,
    parent_id=None,
    author_id=7,
    author_name="Ana",
    author_is_bot=False,
    content="hello there",
    sent_at=WHEN,
)


def test_a_channel_message_is_recorded_but_not_addressed() -> None:
    incoming = to_incoming(PLAIN, bot_id=BOT)
    assert incoming is not None
    assert incoming.conversation == Conversation("discord", "5", "10")
    assert incoming.conversation.key == "discord:5:10"
    assert (incoming.author_id, incoming.author_name, incoming.text) == ("7", "Ana", "hello there")
    assert incoming.message_id == "1" and incoming.sent_at == WHEN
    assert not incoming.addressed


def test_mentions_replies_and_dms_are_addressed() -> None:
    mentioned = replace(PLAIN, content=f"<@{BOT}> hi <@!8>", mentions={BOT: "Bot", 8: "Bo"})
    incoming = to_incoming(mentioned, bot_id=BOT)
    assert incoming is not None and incoming.addressed
    assert incoming.text == "hi @Bo"
    reply = to_incoming(replace(PLAIN, reply_to_author_id=BOT), bot_id=BOT)
    assert reply is not None and reply.addressed
    dm = to_incoming(replace(PLAIN, guild_id=None), bot_id=BOT)
    assert dm is not None and dm.addressed
    assert dm.conversation.key == "discord:dm:10"
    other = to_incoming(replace(PLAIN, reply_to_author_id=8), bot_id=BOT)
    assert other is not None and not other.addressed


def test_a_thread_is_its_own_conversation_under_its_channel() -> None:
    thread = replace(PLAIN, channel_id=77, parent_id=10)
    incoming = to_incoming(thread, bot_id=BOT)
    assert incoming is not None
    assert incoming.conversation.key == "discord:5:10:77"
    assert incoming.conversation.channel_key == "discord:5:10"
    assert conversation_for(guild_id=5, channel_id=77, parent_id=10) == incoming.conversation


def test_bots_and_system_messages_are_not_user_input() -> None:
    assert to_incoming(replace(PLAIN, author_is_bot=True), bot_id=BOT) is None
    assert to_incoming(replace(PLAIN, author_id=BOT, author_is_bot=True), bot_id=BOT) is None
    assert to_incoming(replace(PLAIN, is_user_message=False), bot_id=BOT) is None


def test_text_keeps_its_indentation_once_the_mention_is_removed() -> None:
    code = f"<@{BOT}> why does this fail?\n```py\ndef f():\n    return  1\n```"
    incoming = to_incoming(replace(PLAIN, content=code, mentions={BOT: "Bot"}), bot_id=BOT)
    assert incoming is not None
    assert incoming.text == "why does this fail?\n```py\ndef f():\n    return  1\n```"
