"""Reading a conversation's messages on Slack: a channel's through ``conversations.history``,
a thread's through ``conversations.replies`` (the same parameters otherwise)."""

from __future__ import annotations

from typing import Any

from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse


async def read_page(
    client: AsyncWebClient, *, channel: str, thread: str | None, **params: Any
) -> AsyncSlackResponse:
    """One page of the channel's messages, or of the thread's when ``thread`` is its root."""
    if thread is None:
        return await client.conversations_history(channel=channel, **params)
    return await client.conversations_replies(channel=channel, ts=thread, **params)
