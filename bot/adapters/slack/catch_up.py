"""Catch-up on start: what people wrote while the bot was stopped, read back with
``conversations.history`` (channels) and ``conversations.replies`` (threads) and stored as if
it had arrived, through the same translation as live events, never answered.

Slack lets apps outside its Marketplace read history about once a minute, 15 messages a call:
each conversation is read in pages of at most 15, the most recently active conversations
first, the newest messages of each first; a 429 is waited out by the client's retry handler,
and what could still not be read is logged.

Only what was written before catch-up began is read: from then on messages arrive as events.
A conversation is caught up under the handler's ordering lock for that conversation: its live
messages that arrive meanwhile are stored right after, so memory keeps the platform's order.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from slack_sdk.errors import SlackApiError

from bot.adapters.slack.app import Listeners
from bot.adapters.slack.history import read_page
from bot.adapters.slack.translate import mentions, to_incoming
from bot.config import CatchUpConfig
from bot.core.models import Conversation
from bot.core.ports.store import NewestMessage
from bot.core.progress import logged
from bot.core.wording import counted

log = logging.getLogger(__name__)

PAGE = 15
"""Messages per history call: what Slack gives apps outside its Marketplace."""


@dataclass(frozen=True)
class Outcome:
    stored: int
    missed: str | None = None
    """Why some of what was written could not be read, if so."""


async def catch_up(listeners: Listeners, settings: CatchUpConfig) -> None:
    """Store what was written in each recently active conversation since its newest stored
    message; log the count (one line, and per conversation at DEBUG). One process at a time
    catches a workspace up: one that finds another doing it leaves it to that one."""
    if settings.hours <= 0:
        return
    async with listeners.engine.leases.held(f"catch-up:slack:{listeners.team}") as ours:
        if not ours:
            log.info("slack catch-up: another process is catching up; left to it")
            return
        await _catch_up(listeners, settings)


async def _catch_up(listeners: Listeners, settings: CatchUpConfig) -> None:
    # Connected now: what is written from here on arrives as events.
    until = f"{time.time():.6f}"
    since = time.time() - settings.hours * 3600
    newest = await listeners.engine.store.newest_messages(platform="slack", since=since)
    total = 0
    progress = logged(
        "slack catch-up", total=len(newest), unit="conversation", logger=log, final=False
    )
    with progress:
        for index, latest in enumerate(newest):
            conversation = Conversation.from_key(latest.conversation_key)
            try:
                outcome = await _one(listeners, conversation, latest, until, settings.max_messages)
            except SlackApiError as exc:
                error = exc.response.get("error")
                left = [n.conversation_key for n in newest[index:]]
                log.warning(
                    "slack catch-up stopped (%s): %s not caught up: %s",
                    error,
                    counted(len(left), "conversation"),
                    ", ".join(left),
                )
                break
            total += outcome.stored
            log.debug(
                "slack catch-up: %s in %s", counted(outcome.stored, "message"), conversation.key
            )
            if outcome.missed:
                log.warning("slack catch-up in %s: %s", conversation.key, outcome.missed)
            progress.advance()
    log.info(
        "slack: caught up %s written while stopped, in %s",
        counted(total, "message"),
        counted(progress.done, "conversation"),
    )


async def _one(
    listeners: Listeners,
    conversation: Conversation,
    latest: NewestMessage,
    until: str,
    limit: int,
) -> Outcome:
    async with listeners.handler.in_order(conversation):
        messages, more = await _read(listeners, conversation, latest.message_id, until, limit)
        stored = 0
        for message in sorted(messages, key=lambda m: float(m.get("ts") or 0)):
            stored += await _store(listeners, conversation, message)
    missed = f"more than {limit} written while stopped; the oldest were left" if more else None
    return Outcome(stored, missed)


async def _read(
    listeners: Listeners, conversation: Conversation, oldest: str, latest: str, limit: int
) -> tuple[list[dict[str, Any]], bool]:
    """Up to ``limit`` of the newest messages between ``oldest`` and ``latest``; whether
    there were more."""
    messages: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = min(PAGE, limit - len(messages))
        answer = await read_page(
            listeners.client,
            channel=conversation.channel,
            thread=conversation.thread,
            oldest=oldest,
            latest=latest,
            limit=page,
            cursor=cursor,
        )
        got = [m for m in answer.get("messages") or [] if float(m.get("ts") or 0) > float(oldest)]
        messages.extend(got[: limit - len(messages)])
        cursor = (answer.get("response_metadata") or {}).get("next_cursor") or None
        more = bool(answer.get("has_more")) and cursor is not None
        if not more or len(messages) >= limit:
            return messages, more


async def _store(listeners: Listeners, conversation: Conversation, message: dict[str, Any]) -> int:
    """Record one message as a live event would be recorded (not answered); 1 if stored."""
    ts = str(message.get("ts") or "")
    store = listeners.engine.store
    if not ts or await store.find_message(conversation_key=conversation.key, message_id=ts):
        return 0
    event = {
        **message,
        "type": "message",
        "channel": conversation.channel,
        "channel_type": "im" if conversation.channel.startswith("D") else "channel",
    }
    body = {"type": "event_callback", "team_id": conversation.workspace, "event": event}
    text = str(message.get("text") or "")
    names = await listeners.names.wait_for({str(message.get("user") or "")} | mentions(text))
    incoming = to_incoming(body, policy=listeners.policy, names=names)
    if incoming is None or incoming.conversation.key != conversation.key:
        return 0
    return int(await listeners.handler.record(incoming))
