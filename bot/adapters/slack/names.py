"""People's display names, from ``users.info``: Slack's events carry user ids only."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.core.engine import Engine, Pending
from bot.core.handler import Turn
from bot.core.models import Conversation, StoredMessage

log = logging.getLogger(__name__)

NAME_WAIT = 1.0
"""Seconds an answer waits for its author's name (``users.info``). A message from someone whose
name is not known yet is stored at once under the user id (storing comes before the ack and
never waits for the lookup); when the name arrives, the stored message takes it, and the
person's later messages carry it from the start."""

Naming = asyncio.Task[StoredMessage | None]
"""Giving a stored message its author's name, once looked up: the message as renamed."""


class Names:
    """Each person looked up once (one lookup at a time per person), then known; the tasks
    it starts are handed to ``track`` (work in flight, waited for and ended at shutdown)."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        engine: Engine,
        bot_user_id: str,
        track: Callable[[asyncio.Task[Any]], None],
    ) -> None:
        self._client = client
        self._engine = engine
        self._bot_user_id = bot_user_id
        self._track = track
        self._names: dict[str, str] = {}
        self._lookups: dict[str, asyncio.Task[None]] = {}
        self._namings: set[Naming] = set()

    async def wait_for(self, user_ids: Collection[str]) -> dict[str, str]:
        """Display names, those not known within :data:`NAME_WAIT` left out (the caller
        falls back to the id)."""
        lookups = self._lookups_for(user_ids)
        if lookups:
            await asyncio.wait(lookups, timeout=NAME_WAIT)
        return self.known(user_ids)

    def known(self, user_ids: Collection[str]) -> dict[str, str]:
        """The names already known, at once; the others are looked up in the background."""
        self._lookups_for(user_ids)
        return {u: self._names[u] for u in user_ids if u in self._names}

    def name_later(self, conversation: Conversation, message_id: str, author: str) -> Naming:
        """Give a message stored under its author's id their name, once looked up."""
        naming = asyncio.create_task(
            self._name_later(conversation, message_id, author), name=f"naming {message_id}"
        )
        self._track(naming)
        self._namings.add(naming)
        naming.add_done_callback(self._namings.discard)
        return naming

    async def settled(self, turn: Turn, naming: Naming | None) -> Turn:
        """The turn with its author's name (``naming``), and the messages stored before it
        with theirs, when those arrive within :data:`NAME_WAIT`."""
        if self._namings:
            await asyncio.wait(list(self._namings), timeout=NAME_WAIT)
        if naming is None or not isinstance(turn.accepted, Pending):
            return turn
        renamed = naming.result() if naming.done() and not naming.cancelled() else None
        if renamed is None:
            return turn
        return replace(turn, accepted=replace(turn.accepted, stored=renamed))

    async def _name_later(
        self, conversation: Conversation, message_id: str, author: str
    ) -> StoredMessage | None:
        try:
            lookups = self._lookups_for([author])
            if lookups:
                await asyncio.wait(lookups)
            name = self._names.get(author)
            if not name:
                return None
            return await self._engine.rename_author(conversation, message_id, name)
        except Exception:
            log.exception("naming a stored message failed")
            return None

    def _lookups_for(self, user_ids: Collection[str]) -> list[asyncio.Task[None]]:
        return [
            self._lookup(user_id)
            for user_id in user_ids
            if user_id and user_id not in self._names and user_id != self._bot_user_id
        ]

    def _lookup(self, user_id: str) -> asyncio.Task[None]:
        """The lookup of ``user_id`` under way, started if none."""
        task = self._lookups.get(user_id)
        if task is None:

            async def look_up() -> None:
                try:
                    name = await self._look_up(user_id)
                except Exception as exc:  # the network: named by id until the next message
                    log.warning("users.info %s failed: %s", user_id, type(exc).__name__)
                    return
                if name:
                    self._names[user_id] = name

            task = asyncio.create_task(look_up(), name=f"users.info {user_id}")
            self._lookups[user_id] = task
            self._track(task)
            task.add_done_callback(lambda _: self._lookups.pop(user_id, None))
        return task

    async def _look_up(self, user_id: str) -> str | None:
        try:
            answer = await self._client.users_info(user=user_id)
        except SlackApiError as exc:
            log.warning("users.info %s failed: %s", user_id, exc.response.get("error"))
            return None
        user = answer.get("user") or {}
        profile = user.get("profile") or {}
        for name in (profile.get("display_name"), profile.get("real_name"), user.get("name")):
            if name:
                return str(name)
        return None
