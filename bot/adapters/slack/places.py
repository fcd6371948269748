"""What kind of conversation a slash command came from: a public channel, or a private one
(a private channel, a DM, a group DM), and whose DM with the bot it is.

A slash command's form is no reliable guide (``channel_name`` is ``directmessage`` or
``privategroup`` for some and a plain name for others), so ``conversations.info`` is asked.
When it cannot tell (the bot is not in the conversation, a scope is missing, Slack is down),
the conversation is taken as private and as nobody's DM: that only makes sharing stricter and
leaves settings to the configured admins.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Place:
    """What Slack says of a conversation."""

    private: bool
    """A private channel, a DM or a group DM (or one Slack would not describe)."""
    dm_with: str | None = None
    """The person whose DM with the bot it is; None for anything else."""


UNKNOWN = Place(private=True)


def place_of(channel: Mapping[str, Any]) -> Place:
    """``conversations.info``'s ``channel`` as a :class:`Place`."""
    is_im = bool(channel.get("is_im"))
    private = is_im or any(channel.get(k) for k in ("is_private", "is_mpim", "is_group"))
    user = channel.get("user")
    return Place(private=private, dm_with=str(user) if is_im and user else None)


async def look_up(client: AsyncWebClient, channel: str) -> Place:
    """Ask Slack about ``channel``; :data:`UNKNOWN` when it does not say."""
    if not channel:
        return UNKNOWN
    try:
        answer = await client.conversations_info(channel=channel)
    except SlackApiError as exc:
        error = str(exc.response.get("error"))
        # An app installed before the manifest asked for the *:read scopes lacks them.
        level = logging.WARNING if error == "missing_scope" else logging.INFO
        log.log(level, "slack: conversations.info on %s: %s; taken as private", channel, error)
        return UNKNOWN
    except (SlackClientError, aiohttp.ClientError, OSError, TimeoutError) as exc:
        what = type(exc).__name__
        log.info("slack: conversations.info on %s failed (%s); taken as private", channel, what)
        return UNKNOWN
    info = answer.get("channel")
    return place_of(info) if isinstance(info, Mapping) else UNKNOWN
