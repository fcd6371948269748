"""Slack payloads (plain dicts, as Bolt hands them over) into the core's values. Pure.

Conversations: ``slack:{team}:{channel}`` for a channel or DM, ``slack:{team}:{channel}:{ts}``
for a thread, keyed by the thread's root ``ts``. A thread's root message belongs to its
channel's conversation (it was said in the channel); replies (``thread_ts != ts``) belong to
the thread's conversation, which shares the channel's pins and which the core's handler
starts with a copy of the root (so edits and deletions of a root apply to both). Slash
commands always act on the channel: Slack does not run them inside threads.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bot.adapters.slack.places import UNKNOWN, Place
from bot.adapters.text import mentioned, named_mentions, without_mentions_of
from bot.core.models import CommandCall, Conversation, Deletion, Edit, IncomingMessage, Reaction

PLATFORM = "slack"
PIN_SHORTCUT = "pin_to_memory"
PUSHPIN = "pushpin"
"""The reaction (📌) that marks a message important."""

Payload = Mapping[str, Any]

_USER_SUBTYPES = frozenset({None, "thread_broadcast", "file_share", "me_message"})
MENTION = re.compile(r"<@([UW][A-Z0-9]+)(?:\|[^>]*)?>")
_MARKUP = re.compile(r"<([^<>\s]+(?:\|[^<>]*)?)>")


@dataclass(frozen=True)
class Policy:
    """What the adapter takes as addressed to the bot, from the ``slack`` config section."""

    bot_user_id: str


def conversation_for(
    team: str, channel: str, ts: str | None, thread_ts: str | None
) -> Conversation:
    thread = thread_ts if thread_ts and thread_ts != ts else None
    return Conversation(platform=PLATFORM, workspace=team, channel=channel, thread=thread)


def thread_of(body: Payload) -> Conversation | None:
    """The thread conversation a message event is a reply in; None for anything else."""
    event = message_event(body)
    if event is None:
        return None
    thread_ts, ts, channel = event.get("thread_ts"), event.get("ts"), event.get("channel")
    if not thread_ts or thread_ts == ts or not channel or not _team(body):
        return None
    return conversation_for(_team(body), str(channel), ts, thread_ts)


def _team(body: Payload) -> str:
    event = body.get("event") or {}
    team = body.get("team_id") or event.get("team") or (body.get("team") or {}).get("id")
    return str(team or "")


def mentions(text: str) -> set[str]:
    """The user ids ``<@U...>`` mentions in ``text``."""
    return mentioned(text, MENTION)


def strip_mention(text: str, user_id: str) -> str:
    """Remove mentions of ``user_id`` (the bot), leaving the rest of the text."""
    return without_mentions_of(text, {user_id}, MENTION).strip()


def replace_mentions(text: str, names: Mapping[str, str]) -> str:
    """Slack's markup as a person reads it: ``<@U1>`` → ``@Ana`` (for known names),
    ``<#C1|general>`` → ``#general``, ``<!here>`` → ``@here``, ``<https://x|label>`` →
    ``label (https://x)``, and ``&amp;``, ``&lt;``, ``&gt;`` unescaped."""

    def other(match: re.Match[str]) -> str:
        target, _, label = match.group(1).partition("|")
        if target.startswith("#"):
            return f"#{label or target[1:]}"
        if target.startswith("!"):
            return "@" + (label or target[1:].split("^")[0]).lstrip("@")
        if target.startswith("@"):
            return match.group(0)
        return f"{label} ({target})" if label and label != target else target

    text = named_mentions(text, {k: v for k, v in names.items() if v}, MENTION)
    text = _MARKUP.sub(other, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def message_event(body: Payload) -> Payload | None:
    """The event of an event callback when it is a message (or mention) event."""
    event = body.get("event")
    if not isinstance(event, Mapping) or event.get("type") not in ("message", "app_mention"):
        return None
    return event


def is_user_message(event: Payload) -> bool:
    """A new message a person wrote (no bot's, no edits, joins or other subtypes)."""
    return (
        event.get("type") == "message"
        and event.get("subtype") in _USER_SUBTYPES
        and not event.get("bot_id")
        and bool(event.get("user"))
    )


def _sent_at(ts: str | None) -> datetime:
    try:
        return datetime.fromtimestamp(float(ts or ""), UTC)
    except ValueError:
        return datetime.now(UTC)


def to_incoming(
    body: Payload, *, policy: Policy, names: Mapping[str, str]
) -> IncomingMessage | None:
    """A ``message`` event callback as the core sees it; None when it is not a person's new
    message.

    Addressed: a DM, a mention of the bot, a reply in a thread whose root is the bot's (the
    core's handler adds the threads the bot follows, and keeps to the channel's settings:
    answering every message, or none, and recording).
    """
    event = message_event(body)
    if event is None or not is_user_message(event):
        return None
    user, channel, ts = str(event["user"]), str(event.get("channel", "")), event.get("ts")
    if not channel or not _team(body):
        return None
    text = str(event.get("text") or "")
    bot = policy.bot_user_id
    conversation = conversation_for(_team(body), channel, ts, event.get("thread_ts"))
    in_bots_thread = conversation.thread is not None and event.get("parent_user_id") == bot
    addressed = event.get("channel_type") == "im" or bot in mentions(text) or in_bots_thread
    return IncomingMessage(
        conversation=conversation,
        author_id=user,
        author_name=names.get(user, user),
        text=replace_mentions(strip_mention(text, bot), names),
        addressed=addressed,
        message_id=str(ts) if ts else None,
        sent_at=_sent_at(ts),
    )


def to_edit(body: Payload, *, policy: Policy, names: Mapping[str, str]) -> Edit | None:
    """A ``message_changed`` event of a person's message."""
    event = message_event(body)
    if event is None or event.get("subtype") != "message_changed":
        return None
    message = event.get("message") or {}
    if message.get("bot_id") or not message.get("user") or not message.get("ts"):
        return None
    if not event.get("channel") or not _team(body):
        return None
    text = str(message.get("text") or "")
    text = replace_mentions(strip_mention(text, policy.bot_user_id), names)
    ts = str(message["ts"])
    conversation = conversation_for(
        _team(body), str(event.get("channel", "")), ts, message.get("thread_ts")
    )
    return Edit(conversation, ts, text)


def to_deletion(body: Payload) -> Deletion | None:
    """A ``message_deleted`` event."""
    event = message_event(body)
    if event is None or event.get("subtype") != "message_deleted":
        return None
    ts = event.get("deleted_ts") or (event.get("previous_message") or {}).get("ts")
    if not ts or not event.get("channel") or not _team(body):
        return None
    thread_ts = (event.get("previous_message") or {}).get("thread_ts")
    conversation = conversation_for(_team(body), str(event.get("channel", "")), ts, thread_ts)
    return Deletion(conversation, str(ts))


def to_reaction(body: Payload) -> Reaction | None:
    """A ``reaction_added`` / ``reaction_removed`` event with 📌 on a message; None otherwise."""
    event = body.get("event")
    if not isinstance(event, Mapping) or event.get("reaction") != PUSHPIN:
        return None
    kind = event.get("type")
    item = event.get("item") or {}
    if kind not in ("reaction_added", "reaction_removed") or item.get("type") != "message":
        return None
    channel, ts, team = item.get("channel"), item.get("ts"), _team(body)
    if not channel or not ts or not team:
        return None
    conversation = conversation_for(team, str(channel), None, None)
    return Reaction(conversation, str(ts), on=kind == "reaction_added")


def permalink(workspace_url: str, channel: str, ts: str) -> str | None:
    """Slack's link to a message (``https://team.slack.com/archives/C1/p1700000000000100``)."""
    if not workspace_url.startswith("https://") or not ts.replace(".", "").isdigit():
        return None
    return f"{workspace_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"


def may_manage(user: str, *, admins: Collection[str], place: Place) -> bool:
    """Whether ``user`` may change settings where they are: an admin
    (``slack.admin_user_ids``) anywhere, anyone in their own DM with the bot."""
    return user in admins or (bool(user) and place.dm_with == user)


def to_command(
    body: Payload, *, admins: Collection[str], place: Place = UNKNOWN, workspace_url: str = ""
) -> CommandCall:
    """A slash command's form (``command``, ``text``, ``user_id``...) as a call on the channel,
    which Slack described as ``place`` (``conversations.info``)."""
    user = str(body.get("user_id", ""))
    channel = str(body.get("channel_id", ""))
    return CommandCall(
        conversation=conversation_for(_team(body), channel, None, None),
        name=str(body.get("command", "")).lstrip("/"),
        argument=replace_mentions(str(body.get("text") or ""), {}),
        user_id=user,
        user_name=str(body.get("user_name") or user),
        can_manage=may_manage(user, admins=admins, place=place),
        private=place.private,
        link_to=functools.partial(permalink, workspace_url, channel) if workspace_url else None,
    )


def shortcut_author(body: Payload) -> str:
    """Who wrote the message a shortcut was used on."""
    return str((body.get("message") or {}).get("user") or "")


def to_pin(body: Payload, *, names: Mapping[str, str]) -> CommandCall:
    """The "Pin to memory" message shortcut as ``/pin`` on the message's channel."""
    message = body.get("message") or {}
    author = shortcut_author(body)
    text = replace_mentions(str(message.get("text") or ""), names)
    said = f"{names.get(author, author)}: {text}" if author and text.strip() else text
    user = body.get("user") or {}
    user_id = str(user.get("id", ""))
    channel = str((body.get("channel") or {}).get("id", ""))
    return CommandCall(
        conversation=conversation_for(_team(body), channel, None, None),
        name="pin",
        argument=said,
        user_id=user_id,
        user_name=names.get(user_id) or str(user.get("name") or user.get("username") or user_id),
        can_manage=False,
    )
