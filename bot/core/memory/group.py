"""Memory groups: channels of one workspace whose recall also searches each other's messages.

A channel joins with ``/settings memory-group NAME``; its members are the channels of the
workspace whose own settings name the group (a thread's setting makes it search the group,
never a member). A private channel or DM joins only once an admin of it opted in
(``/settings share-private on``, enforced by the command), and a conversation outside any
workspace (a Discord DM) is in no group. Recall (:mod:`.recall`) shows the group's matches
after the conversation's own, each naming the channel it was said in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.core.models import EVERY_CHANNEL, Conversation, StoredMessage
from bot.core.ports.settings import SettingsStore

GROUP_HEADING = (
    "Messages from other channels of this channel's memory group that may be relevant (found "
    "by search, oldest first; #channel says where each was said, not here):"
)
GROUP_KEY = "memory-group"
"""The ``/settings`` key naming a channel's memory group."""


@dataclass(frozen=True)
class Shared:
    """Candidates from the other channels of a memory group, best first."""

    messages: Sequence[StoredMessage]
    where: Mapping[int, str]
    """The conversation key each was said in, by message id."""


NO_SHARED = Shared(messages=(), where={})


def channel_label(key: str) -> str:
    """How a recalled line names the channel a group's message was said in: ``#C2``."""
    return "#" + Conversation.from_key(key).channel


async def members(store: SettingsStore, conversation: Conversation, group: str | None) -> list[str]:
    """The keys of the channels of ``conversation``'s workspace in memory group ``group``,
    but the conversation itself (none when ``group`` is None: no store read)."""
    if group is None or not conversation.shares_workspace:
        return []
    scopes = await store.scopes_where(
        prefix=conversation.workspace_prefix, key=GROUP_KEY, value=group
    )
    return [key for key in scopes if _is_channel(key) and key != conversation.key]


def _is_channel(key: str) -> bool:
    """Whether a settings scope is a channel's (not a thread's, nor a workspace's)."""
    try:
        conversation = Conversation.from_key(key)
    except ValueError:
        return False
    return conversation.thread is None and conversation.channel != EVERY_CHANNEL
