"""A local fake Discord: REST and gateway on 127.0.0.1, enough of both to drive discord.py.

discord.py reads its endpoints from ``discord.http.Route.BASE`` and
``discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY``; :func:`pointed_at` sets both for the
duration of a test. The fake logs the bot in (HELLO, IDENTIFY, READY, GUILD_CREATE), delivers
events a test dispatches, records what the bot sends, and can answer one request with a 429.

Shards as on Discord: an IDENTIFY may carry ``shard: [id, count]`` (none: shard 0 of 1); a
connection is sent only its shard's servers, and a server's events go only to the connections
of the server's shard, ``(guild_id >> 22) % count``; events outside servers (DMs) to shard 0.
Several connections may hold the same shard: each gets its events, as on Discord.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self, TypeVar

import aiohttp
import discord
import yarl
from aiohttp import WSMsgType, web

from bot.adapters.live import EDIT_INTERVAL

JSON = dict[str, Any]
T = TypeVar("T")
API = "/api/v10"
CONTENT_LIMIT = 2000
"""Characters a message's content may have: more gets 400 Invalid Form Body."""
MESSAGE_CONTENT_INTENT = 1 << 15
EVERYONE_PERMISSIONS = discord.Permissions(
    view_channel=True,
    send_messages=True,
    send_messages_in_threads=True,
    read_message_history=True,
    use_application_commands=True,
).value
VIEW_CHANNEL = discord.Permissions(view_channel=True).value
_last = [1_300_000_000_000_000_000]
FILES = web.RequestKey("files", list)
"""A request's attachments, (file name, content) pairs."""


async def eventually(condition: Callable[[], bool | Awaitable[bool]], within: float = 10) -> None:
    """Poll ``condition`` until it holds: for effects with no event to wait on (the store)."""
    async with asyncio.timeout(within):
        while True:
            result = condition()
            if result if isinstance(result, bool) else await result:
                return
            await asyncio.sleep(0.01)


_DISCORD_EPOCH_MS = 1_420_070_400_000


def shard_of(guild_id: int, shard_count: int) -> int:
    """The shard Discord sends a server's events on."""
    return (guild_id >> 22) % shard_count


def snowflake() -> str:
    """A new id, later than any before, that says the time it was made (as Discord's do:
    discord.py reads a message's time from its id)."""
    now = (int(time.time() * 1000) - _DISCORD_EPOCH_MS) << 22
    _last[0] = max(now, _last[0] + 1)
    return str(_last[0])


def user_payload(
    user_id: int, name: str, *, bot: bool = False, global_name: str | None = None
) -> JSON:
    return {
        "id": str(user_id),
        "username": name.lower(),
        "global_name": global_name if global_name is not None else name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
    }


@dataclass(frozen=True)
class Person:
    id: int
    name: str
    """The global display name."""
    nick: str | None = None
    """A server nickname, which wins over ``name``."""
    bot: bool = False
    permissions: discord.Permissions = field(
        default_factory=lambda: discord.Permissions(EVERYONE_PERMISSIONS)
    )
    """What Discord computes for the person where they use a command (an interaction's
    ``member.permissions``)."""
    roles: tuple[int, ...] = ()
    """The server's roles the person has (ids of :class:`FakeGuild`'s roles)."""

    @property
    def user(self) -> JSON:
        return user_payload(self.id, self.name, bot=self.bot)

    def member(self) -> JSON:
        return {
            "user": self.user,
            "nick": self.nick,
            "roles": [str(role) for role in self.roles],
            "joined_at": "2026-01-01T00:00:00+00:00",
            "deaf": False,
            "mute": False,
            "flags": 0,
            "pending": False,
            "permissions": str(self.permissions.value),
        }


SETTLED = EDIT_INTERVAL + 0.3
"""Seconds without a change after which a streamed answer has had its last edit."""


@dataclass
class Sent:
    """A message the bot sent to a channel."""

    channel_id: int
    content: str
    body: JSON
    message: JSON
    """The message as the fake created it (its id, to edit or delete it later)."""
    files: list[tuple[str, bytes]] = field(default_factory=list)
    """Attachments (file name, content), sent as multipart/form-data."""
    posted_at: float = field(default_factory=time.monotonic)
    edits: list[tuple[float, str]] = field(default_factory=list)
    """Each edit's time (:func:`time.monotonic`) and new content; ``content`` is the last."""
    deleted: bool = False

    @property
    def allowed_mentions(self) -> JSON | None:
        value = self.body.get("allowed_mentions")
        return value if isinstance(value, dict) else None


@dataclass
class FakeGuild:
    id: int
    name: str
    channels: dict[int, str]
    """Text channel ids and names."""
    threads: dict[int, tuple[int, str]] = field(default_factory=dict)
    """Thread ids and their (parent id, name)."""
    archived_threads: dict[int, tuple[int, str]] = field(default_factory=dict)
    """Threads as ``threads``, archived: not in the server's state a client receives (so
    not in discord.py's cache), known to ``GET /channels/{id}``."""
    private_channels: set[int] = field(default_factory=set)
    """Channels @everyone may not view (an overwrite denies it View Channel)."""
    private_threads: set[int] = field(default_factory=set)
    """Threads that are private threads (type 12), seen only by those invited."""

    @property
    def bot_role_id(self) -> int:
        """The bot's own (managed) role in this server."""
        return self.id + 1

    @property
    def team_role_id(self) -> int:
        """A role people have, mentionable, not the bot's."""
        return self.id + 2

    def channel_payload(self, channel_id: int) -> JSON:
        return {
            "id": str(channel_id),
            "type": 0,
            "guild_id": str(self.id),
            "name": self.channels[channel_id],
            "position": list(self.channels).index(channel_id),
            "permission_overwrites": self._overwrites(channel_id),
            "nsfw": False,
            "parent_id": None,
            "topic": None,
            "last_message_id": None,
            "rate_limit_per_user": 0,
        }

    def _overwrites(self, channel_id: int) -> list[JSON]:
        if channel_id not in self.private_channels:
            return []
        everyone = {"id": str(self.id), "type": 0, "allow": "0", "deny": str(VIEW_CHANNEL)}
        return [everyone]

    def thread_payload(self, thread_id: int, owner: Person) -> JSON:
        archived = thread_id in self.archived_threads
        parent, name = (self.archived_threads if archived else self.threads)[thread_id]
        return {
            "id": str(thread_id),
            "type": 12 if thread_id in self.private_threads else 11,
            "guild_id": str(self.id),
            "parent_id": str(parent),
            "owner_id": str(owner.id),
            "name": name,
            "message_count": 0,
            "member_count": 1,
            "rate_limit_per_user": 0,
            "last_message_id": None,
            "thread_metadata": {
                "archived": archived,
                "auto_archive_duration": 1440,
                "archive_timestamp": "2026-01-01T00:00:00+00:00",
                "locked": False,
            },
        }

    def payload(self, bot: Person) -> JSON:
        channels = [self.channel_payload(cid) for cid in self.channels]
        threads = [self.thread_payload(tid, bot) for tid in self.threads]
        return {
            "id": str(self.id),
            "name": self.name,
            "icon": None,
            "owner_id": "1",
            "roles": [
                {
                    "id": str(self.id),
                    "name": "@everyone",
                    "permissions": str(EVERYONE_PERMISSIONS),
                    "position": 0,
                    "color": 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": False,
                },
                {  # the role Discord gives a bot in each server it joins, named after it
                    "id": str(self.bot_role_id),
                    "name": bot.name,
                    "permissions": "0",
                    "position": 1,
                    "color": 0,
                    "hoist": False,
                    "managed": True,
                    "mentionable": True,
                    "tags": {"bot_id": str(bot.id)},
                },
                {
                    "id": str(self.team_role_id),
                    "name": "Team",
                    "permissions": "0",
                    "position": 2,
                    "color": 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": True,
                },
            ],
            "emojis": [],
            "stickers": [],
            "features": [],
            "member_count": 3,
            "large": False,
            "unavailable": False,
            "members": [bot.member()],
            "channels": channels,
            "threads": threads,
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "joined_at": "2026-01-01T00:00:00+00:00",
            "premium_tier": 0,
            "mfa_level": 0,
            "verification_level": 0,
            "explicit_content_filter": 0,
            "default_message_notifications": 0,
            "system_channel_flags": 0,
            "preferred_locale": "en-US",
            "nsfw_level": 0,
        }


class FakeDiscord:
    def __init__(
        self,
        *,
        guilds: list[FakeGuild] | None = None,
        bot: Person | None = None,
        application_id: int = 901,
        grant_message_content: bool = True,
        token: str = "fake.bot.token",
        recommended_shards: int = 1,
    ) -> None:
        self.token = token
        self.recommended_shards = recommended_shards
        """The shard count ``GET /gateway/bot`` recommends."""
        self.bot = bot or Person(900, "Memory Bot", bot=True)
        self.application_id = application_id
        self.guilds = guilds or []
        self.grant_message_content = grant_message_content
        self.sent: list[Sent] = []
        self._changed = 0.0  # when a message was last sent, edited or deleted
        self.typing: list[int] = []
        self.typing_at: list[float] = []
        """When each typing call came (:func:`time.monotonic`), in ``typing``'s order."""
        self.reactions: list[tuple[str, int, str, str]] = []
        """The bot's own reactions as it changed them: ("add" or "remove", channel id,
        message id, emoji)."""
        self.requests: list[tuple[str, str]] = []
        self.command_syncs: list[tuple[str, list[JSON]]] = []
        """(scope, commands): scope is "global" or the guild id."""
        self.callbacks: list[JSON] = []
        self.followups: list[JSON] = []
        self.deleted_originals: list[str] = []
        self.identify: JSON | None = None
        """The latest IDENTIFY; ``identifies`` has them all, in order."""
        self.identifies: list[JSON] = []
        self.rate_limited: list[str] = []
        self.rate_limited_at: list[float] = []
        """When each 429 was answered (:func:`time.monotonic`), in ``rate_limited``'s order."""
        self.refuse_reactions = False
        """True: the bot's reactions get 403 Missing Permissions (no Add Reactions)."""
        self.refuse_files = False
        """True: messages and follow-ups with attachments get 403 Missing Permissions (no
        Attach Files)."""
        self.sharding_required = False
        """Close an unsharded IDENTIFY with 4011, as Discord does once a bot is in 2,500
        servers."""
        self.refuse_gateway: int | None = None
        """An HTTP status the gateway's websocket is refused with, instead of upgraded."""
        self._rate_limit: re.Pattern[str] | None = None
        self._connections: dict[web.WebSocketResponse, tuple[int, int]] = {}
        """Each identified gateway connection and its (shard id, shard count)."""
        self._seq = itertools.count(1)
        self.history: dict[int, list[JSON]] = {}
        """Channel (or thread) id → its messages, oldest first: what the messages route reads."""
        self._runner: web.AppRunner | None = None
        self.url = ""
        self._thread: tuple[asyncio.AbstractEventLoop, threading.Thread] | None = None

    # -- lifecycle ------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", API + "/{tail:.*}", self._rest)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in list(self._connections):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    @classmethod
    def start_in_thread(cls, **options: Any) -> FakeDiscord:
        """Serve from a daemon thread's event loop (for the bot run as a process)."""
        fake = cls(**options)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fake-discord", daemon=True)
        thread.start()
        fake._thread = (loop, thread)
        fake.call(fake.__aenter__())
        return fake

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the fake's own loop (threaded mode) and return its result."""
        assert self._thread is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self._thread[0]).result(timeout=30)

    def stop(self) -> None:
        assert self._thread is not None
        loop, thread = self._thread
        try:
            self.call(self.__aexit__(None, None, None))
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=30)
            loop.close()
            self._thread = None

    @property
    def api_base(self) -> str:
        return self.url + API

    @property
    def gateway_url(self) -> str:
        return self.url.replace("http://", "ws://") + "/gateway"

    @contextmanager
    def pointed_at(self) -> Iterator[None]:
        """discord.py talks to this fake (a process-wide setting) until the block ends."""
        base, gateway = discord.http.Route.BASE, discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
        discord.http.Route.BASE = self.api_base
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(self.gateway_url)
        try:
            yield
        finally:
            discord.http.Route.BASE = base
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = gateway

    def rate_limit_once(self, method: str, path: str) -> None:
        """The next request matching ``method`` and the ``path`` regex gets a 429."""
        self._rate_limit = re.compile(f"^{method} {path}$")

    # -- events ---------------------------------------------------------------------------

    async def dispatch(self, event: str, data: JSON) -> None:
        """Send ``event`` to the connections of its server's shard (DMs: shard 0's)."""
        guild_id = data.get("guild_id")
        targets = [
            ws
            for ws, (shard, count) in self._connections.items()
            if shard == (0 if guild_id is None else shard_of(int(guild_id), count))
        ]
        assert targets, f"no connection of the bot takes {event} for server {guild_id}"
        for ws in targets:
            await self._emit(ws, event, data)

    async def _emit(self, ws: web.WebSocketResponse, event: str, data: JSON) -> None:
        await ws.send_str(json.dumps({"op": 0, "t": event, "s": next(self._seq), "d": data}))

    def message(
        self,
        author: Person,
        content: str,
        *,
        channel_id: int,
        guild_id: int | None,
        mentions: tuple[Person, ...] = (),
        role_mentions: tuple[int, ...] = (),
        reply_to: JSON | None = None,
    ) -> JSON:
        payload: JSON = {
            "id": snowflake(),
            "channel_id": str(channel_id),
            "author": author.user,
            "content": content,
            "timestamp": datetime.now(UTC).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [{**p.user, "member": p.member()} for p in mentions],
            "mention_roles": [str(role) for role in role_mentions],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 19 if reply_to else 0,
            "flags": 0,
        }
        if guild_id is not None:
            payload["guild_id"] = str(guild_id)
            member = author.member()
            member.pop("user")
            payload["member"] = member
        if reply_to is not None:
            payload["message_reference"] = {
                "message_id": reply_to["id"],
                "channel_id": reply_to["channel_id"],
                "guild_id": reply_to.get("guild_id"),
                "type": 0,
            }
            payload["referenced_message"] = reply_to
        return payload

    def write(self, author: Person, content: str, **kw: Any) -> JSON:
        """A message someone wrote while no gateway event reaches the bot: only the
        channel's history has it."""
        payload = self.message(author, content, **kw)
        self.history.setdefault(int(payload["channel_id"]), []).append(payload)
        return payload

    async def say(self, author: Person, content: str, **kw: Any) -> JSON:
        payload = self.write(author, content, **kw)
        await self.dispatch("MESSAGE_CREATE", payload)
        return payload

    async def start_thread(self, root: JSON, name: str, *, owner: Person) -> int:
        """Someone starts a thread from the message ``root``: as on Discord, the thread's id
        is the message's and its parent is the message's channel."""
        thread_id, parent = int(root["id"]), int(root["channel_id"])
        guild = next(g for g in self.guilds if parent in g.channels)
        guild.threads[thread_id] = (parent, name)
        payload = {**guild.thread_payload(thread_id, owner), "newly_created": True}
        await self.dispatch("THREAD_CREATE", payload)
        return thread_id

    async def edit(self, original: JSON, content: str) -> JSON:
        edited = {**original, "content": content, "edited_timestamp": datetime.now(UTC).isoformat()}
        await self.dispatch("MESSAGE_UPDATE", edited)
        return edited

    async def delete(self, original: JSON) -> None:
        data = {"id": original["id"], "channel_id": original["channel_id"]}
        if "guild_id" in original:
            data["guild_id"] = original["guild_id"]
        await self.dispatch("MESSAGE_DELETE", data)

    async def react(self, user: Person, message: JSON, emoji: str, *, added: bool = True) -> None:
        """Someone adds (or removes) a reaction to ``message``."""
        data: JSON = {
            "user_id": str(user.id),
            "channel_id": message["channel_id"],
            "message_id": message["id"],
            "emoji": {"id": None, "name": emoji},
            "type": 0,
            "burst": False,
        }
        if message.get("guild_id"):
            data["guild_id"] = message["guild_id"]
            if added:
                data["member"] = user.member()
        event = "MESSAGE_REACTION_ADD" if added else "MESSAGE_REACTION_REMOVE"
        await self.dispatch(event, data)

    async def command(
        self,
        user: Person,
        name: str,
        options: dict[str, str] | None = None,
        *,
        channel_id: int,
        guild_id: int | None,
        target: JSON | None = None,
    ) -> JSON:
        """An application command interaction; with ``target``, a message context menu."""
        data: JSON = {"id": snowflake(), "name": name, "type": 1}
        if options:
            data["options"] = [{"name": k, "type": 3, "value": v} for k, v in options.items()]
        if target is not None:
            data.update(
                type=3, target_id=target["id"], resolved={"messages": {target["id"]: target}}
            )
        return await self._interact(user, 2, data, channel_id=channel_id, guild_id=guild_id)

    def forms(self) -> list[JSON]:
        """The modals the bot opened (callback type 9), oldest first: each its ``custom_id``,
        ``title`` and ``components``."""
        return [c["data"] for c in self.callbacks if c["type"] == 9]

    async def submit_form(
        self,
        user: Person,
        form: JSON,
        values: dict[str, str],
        *,
        channel_id: int,
        guild_id: int | None,
    ) -> JSON:
        """``user`` submits the modal ``form`` (one of :meth:`forms`) with its text inputs
        filled in, by their label: values the form would not take fail the test, as Discord's
        client refuses them."""
        components = [_submitted(c, values) for c in form["components"]]
        data = {"custom_id": form["custom_id"], "components": components}
        return await self._interact(user, 5, data, channel_id=channel_id, guild_id=guild_id)

    async def _interact(
        self, user: Person, kind: int, data: JSON, *, channel_id: int, guild_id: int | None
    ) -> JSON:
        payload: JSON = {
            "id": snowflake(),
            "application_id": str(self.application_id),
            "type": kind,
            "data": data,
            "channel_id": str(channel_id),
            "channel": self._channel_of_interaction(channel_id, guild_id),
            "token": f"token-{snowflake()}",
            "version": 1,
            "locale": "en-US",
            "app_permissions": str(discord.Permissions.all().value),
            "entitlements": [],
            "authorizing_integration_owners": {},
            "context": 0 if guild_id else 1,
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        if guild_id is not None:
            payload["guild_id"] = str(guild_id)
            payload["guild_locale"] = "en-US"
            payload["member"] = user.member()
        else:
            payload["user"] = user.user
        await self.dispatch("INTERACTION_CREATE", payload)
        return payload

    def _channel_of_interaction(self, channel_id: int, guild_id: int | None) -> JSON:
        """The partial channel an interaction names, as Discord sends it: without permission
        overwrites (only a client that cached the channel knows those). A server's channel
        the fake does not know is a text channel named "unseen"."""
        guild = next((g for g in self.guilds if g.id == guild_id), None)
        if guild is None:
            return {"id": str(channel_id), "type": 1}
        if channel_id in {*guild.threads, *guild.archived_threads}:
            return guild.thread_payload(channel_id, self.bot)
        if channel_id in guild.channels:
            channel = guild.channel_payload(channel_id)
        else:
            channel = {**guild.channel_payload(next(iter(guild.channels))), "name": "unseen"}
        channel.pop("permission_overwrites")
        return {**channel, "id": str(channel_id)}

    # -- waiting --------------------------------------------------------------------------

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (up to 10 s) until ``condition()`` holds, e.g. on what the bot sent."""
        await eventually(condition)

    async def sent_count(self, count: int, *, quiet: float = SETTLED) -> list[Sent]:
        """The messages the bot has sent (not deleted) once there are ``count`` and none was
        sent, edited or deleted for ``quiet`` seconds: an answer streamed into its message
        has settled (its last edit waits up to a second after the one before)."""
        while True:
            await self.until(lambda: len(self.shown()) >= count)
            if time.monotonic() - self._changed >= quiet:
                return self.shown()
            await asyncio.sleep(quiet / 5)

    def shown(self) -> list[Sent]:
        """The messages the bot sent and did not delete, with their latest content."""
        return [sent for sent in self.sent if not sent.deleted]

    # -- gateway --------------------------------------------------------------------------

    async def drop_gateway(self, code: int = 4000) -> None:
        """Close the bot's gateway connections with ``code`` (4000: an error it may resume)."""
        assert self._connections, "the bot is not connected"
        for ws in list(self._connections):
            await ws.close(code=code)

    async def _gateway(self, request: web.Request) -> web.StreamResponse:
        if self.refuse_gateway is not None:
            return web.Response(status=self.refuse_gateway, text="refused")
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"op": 10, "d": {"heartbeat_interval": 41250}, "s": None, "t": None})
        try:
            async for frame in ws:
                if frame.type is not WSMsgType.TEXT:
                    continue
                message = json.loads(frame.data)
                if message["op"] == 1:
                    await ws.send_json({"op": 11, "d": None, "s": None, "t": None})
                elif message["op"] == 2:
                    await self._identified(ws, message["d"])
        finally:
            self._connections.pop(ws, None)
        return ws

    async def _identified(self, ws: web.WebSocketResponse, identify: JSON) -> None:
        self.identify = identify
        self.identifies.append(identify)
        if identify["intents"] & MESSAGE_CONTENT_INTENT and not self.grant_message_content:
            await ws.close(code=4014, message=b"Disallowed intent(s).")
            return
        shard, count = identify.get("shard") or (0, 1)
        if self.sharding_required and count == 1:
            await ws.close(code=4011, message=b"Sharding required.")
            return
        if not 0 <= shard < count:
            await ws.close(code=4010, message=b"Invalid shard.")
            return
        self._connections[ws] = (shard, count)
        guilds = [g for g in self.guilds if shard_of(g.id, count) == shard]
        ready = {
            "v": 10,
            "user": self.bot.user,
            "guilds": [{"id": str(g.id), "unavailable": True} for g in guilds],
            "session_id": "fake-session",
            "resume_gateway_url": self.gateway_url,
            "application": {"id": str(self.application_id), "flags": 0},
            "private_channels": [],
        }
        if count > 1:
            ready["shard"] = [shard, count]
        await self._emit(ws, "READY", ready)
        for guild in guilds:
            await self._emit(ws, "GUILD_CREATE", guild.payload(self.bot))

    # -- REST -----------------------------------------------------------------------------

    async def _rest(self, request: web.Request) -> web.StreamResponse:
        path = "/" + request.match_info["tail"]
        method = request.method
        self.requests.append((method, path))
        body: Any = None
        if request.can_read_body and request.content_type == "application/json":
            body = await request.json()
        elif request.can_read_body and request.content_type == "multipart/form-data":
            body, request[FILES] = await self._multipart(request)
        if self._rate_limit is not None and self._rate_limit.match(f"{method} {path}"):
            self._rate_limit = None
            self.rate_limited.append(f"{method} {path}")
            self.rate_limited_at.append(time.monotonic())
            return self._json(
                {"message": "You are being rate limited.", "retry_after": 0.05, "global": False},
                status=429,
                headers={"Via": "1.1 google", "Retry-After": "1"},
            )
        if path == "/users/@me" and request.headers.get("Authorization") != f"Bot {self.token}":
            return self._json({"message": "401: Unauthorized", "code": 0}, status=401)
        for pattern, handler in self._routes():
            match = re.fullmatch(pattern, f"{method} {path}")
            if match:
                return handler(request, body, *match.groups())
        return self._json({"message": f"fake Discord has no {method} {path}", "code": 0}, 404)

    @staticmethod
    async def _multipart(request: web.Request) -> tuple[JSON, list[tuple[str, bytes]]]:
        """A message with attachments: ``payload_json`` and ``files[n]`` parts."""
        body: JSON = {}
        files: list[tuple[str, bytes]] = []
        reader = await request.multipart()
        async for part in reader:
            assert isinstance(part, aiohttp.BodyPartReader)
            if part.name == "payload_json":
                body = json.loads(await part.text())
            else:
                files.append((part.filename or "", bytes(await part.read())))
        return body, files

    def _routes(self) -> list[tuple[str, Callable[..., web.StreamResponse]]]:
        return [
            (r"GET /users/@me", lambda r, b: self._json(self.bot.user)),
            (r"GET /oauth2/applications/@me", lambda r, b: self._json(self._application())),
            (r"GET /gateway/bot", lambda r, b: self._json(self._gateway_bot())),
            (r"PUT /applications/\d+/commands", lambda r, b: self._sync("global", b)),
            (r"PUT /applications/\d+/guilds/(\d+)/commands", lambda r, b, g: self._sync(g, b)),
            (r"GET /channels/(\d+)", self._channel),
            (r"POST /channels/(\d+)/messages", self._send),
            (r"GET /channels/(\d+)/messages", self._history),
            (r"PATCH /channels/(\d+)/messages/(\d+)", self._edit),
            (r"DELETE /channels/(\d+)/messages/(\d+)", self._delete),
            (r"POST /channels/(\d+)/typing", self._typing),
            (r"(PUT|DELETE) /channels/(\d+)/messages/(\d+)/reactions/([^/]+)/@me", self._react),
            (r"POST /interactions/(\d+)/([^/]+)/callback", self._callback),
            (r"POST /webhooks/\d+/([^/]+)", self._followup),
            (r"DELETE /webhooks/\d+/([^/]+)/messages/@original", self._delete_original),
        ]

    def _json(
        self, data: Any, status: int = 200, headers: dict[str, str] | None = None
    ) -> web.Response:
        return web.Response(
            status=status,
            body=json.dumps(data).encode(),
            headers={"Content-Type": "application/json", **(headers or {})},
        )

    def _application(self) -> JSON:
        return {
            "id": str(self.application_id),
            "name": self.bot.name,
            "description": "",
            "icon": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": user_payload(1, "Owner"),
            "verify_key": "0" * 64,
            # GATEWAY_MESSAGE_CONTENT_LIMITED: the intent is on in the Developer Portal.
            "flags": (1 << 19) if self.grant_message_content else 0,
        }

    def _gateway_bot(self) -> JSON:
        return {
            "url": self.gateway_url,
            "shards": self.recommended_shards,
            "session_start_limit": {
                "total": 1000,
                "remaining": 999,
                "reset_after": 14_400_000,
                "max_concurrency": 1,
            },
        }

    def _sync(self, scope: str, commands: list[JSON]) -> web.Response:
        self.command_syncs.append((scope, commands))
        created = [
            {
                "description": "",
                **c,
                "id": snowflake(),
                "application_id": str(self.application_id),
                "version": "1",
            }
            for c in commands
        ]
        return self._json(created)

    def _message_out(self, channel_id: str, body: JSON) -> JSON:
        return {
            "id": snowflake(),
            "channel_id": channel_id,
            "author": self.bot.user,
            "content": body.get("content") or "",
            "timestamp": datetime.now(UTC).isoformat(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 0,
            "flags": body.get("flags", 0),
        }

    def _channel(self, request: web.Request, body: Any, channel_id: str) -> web.Response:
        wanted = int(channel_id)
        for guild in self.guilds:
            if wanted in guild.channels:
                return self._json(guild.channel_payload(wanted))
            if wanted in guild.threads or wanted in guild.archived_threads:
                return self._json(guild.thread_payload(wanted, self.bot))
        return self._json({"message": "Unknown Channel", "code": 10003}, 404)

    def _send(self, request: web.Request, body: JSON, channel_id: str) -> web.Response:
        files = list(request.get(FILES, []))
        if files and self.refuse_files:
            return self._json({"message": "Missing Permissions", "code": 50013}, 403)
        if too_long := self._too_long(body):
            return too_long
        message = self._message_out(channel_id, body)
        self.sent.append(Sent(int(channel_id), body.get("content") or "", body, message, files))
        self._changed = time.monotonic()
        self.history.setdefault(int(channel_id), []).append(message)
        return self._json(message)

    def _too_long(self, body: JSON) -> web.Response | None:
        """Discord's 400 for content over 2,000 characters; None when it fits."""
        if len(str(body.get("content") or "")) <= CONTENT_LIMIT:
            return None
        error = {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}
        invalid = {"message": "Invalid Form Body", "code": 50035}
        return self._json({**invalid, "errors": {"content": {"_errors": [error]}}}, 400)

    def _find(self, channel_id: str, message_id: str) -> Sent | None:
        for sent in self.sent:
            if sent.message["id"] == message_id and sent.channel_id == int(channel_id):
                return sent
        return None

    def _edit(
        self, request: web.Request, body: JSON, channel_id: str, message_id: str
    ) -> web.Response:
        sent = self._find(channel_id, message_id)
        if sent is None or sent.deleted:
            return self._json({"message": "Unknown Message", "code": 10008}, 404)
        if too_long := self._too_long(body):
            return too_long
        self._changed = time.monotonic()
        sent.content = str(body.get("content") or "")
        sent.edits.append((self._changed, sent.content))
        sent.message["content"] = sent.content  # the same dict history holds
        sent.message["edited_timestamp"] = datetime.now(UTC).isoformat()
        return self._json(sent.message)

    def _delete(
        self, request: web.Request, body: Any, channel_id: str, message_id: str
    ) -> web.Response:
        sent = self._find(channel_id, message_id)
        if sent is None or sent.deleted:
            return self._json({"message": "Unknown Message", "code": 10008}, 404)
        self._changed = time.monotonic()
        sent.deleted = True
        return web.Response(status=204)

    def _history(self, request: web.Request, body: Any, channel_id: str) -> web.Response:
        """Newest first, as Discord answers: with ``after`` (and no ``before``) the ``limit``
        messages right after it, else the ``limit`` newest before ``before``."""
        query = request.query
        after, before = int(query.get("after", 0)), query.get("before")
        limit = int(query.get("limit", 50))
        found = [
            m
            for m in self.history.get(int(channel_id), [])
            if int(m["id"]) > after and (before is None or int(m["id"]) < int(before))
        ]
        found.sort(key=lambda m: int(m["id"]))
        page = found[:limit] if "after" in query and before is None else found[-limit:]
        return self._json(list(reversed(page)))

    def _typing(self, request: web.Request, body: Any, channel_id: str) -> web.Response:
        self.typing.append(int(channel_id))
        self.typing_at.append(time.monotonic())
        return web.Response(status=204)

    def _react(
        self,
        request: web.Request,
        body: Any,
        method: str,
        channel_id: str,
        message_id: str,
        emoji: str,
    ) -> web.Response:
        """The bot's reaction added (PUT) or removed (DELETE); the emoji as sent, decoded."""
        if self.refuse_reactions:
            return self._json({"message": "Missing Permissions", "code": 50013}, 403)
        emoji = urllib.parse.unquote(emoji)
        action = "add" if method == "PUT" else "remove"
        self.reactions.append((action, int(channel_id), message_id, emoji))
        return web.Response(status=204)

    def _callback(
        self, request: web.Request, body: JSON, interaction_id: str, token: str
    ) -> web.Response:
        self.callbacks.append({"interaction_id": interaction_id, "token": token, **body})
        flags = (body.get("data") or {}).get("flags", 0)
        return self._json(
            {
                "interaction": {
                    "id": interaction_id,
                    "type": 2,
                    "response_message_id": snowflake(),
                    "response_message_loading": body["type"] == 5,
                    "response_message_ephemeral": bool(flags & 64),
                },
                "resource": None,
            }
        )

    def _followup(self, request: web.Request, body: JSON, token: str) -> web.Response:
        """A follow-up message; its attachments' contents, when it has any, under ``files``
        ((file name, content) pairs; ``attachments`` has their descriptions)."""
        files = list(request.get(FILES, []))
        if files and self.refuse_files:
            return self._json({"message": "Missing Permissions", "code": 50013}, 403)
        self.followups.append({"token": token, **body, **({"files": files} if files else {})})
        return self._json(self._message_out("0", body))

    def _delete_original(self, request: web.Request, body: Any, token: str) -> web.Response:
        self.deleted_originals.append(token)
        return web.Response(status=204)


def _submitted(component: JSON, values: dict[str, str]) -> JSON:
    """A modal's component as its submission carries it: a text input (type 4) with its
    ``value``, inside its label (type 18) or action row (type 1)."""
    if component["type"] == 18:
        inner = _text_input(component["component"], component["label"], values)
        return {"type": 18, "id": component.get("id", 0), "component": inner}
    if component["type"] == 1:
        inputs = [_text_input(c, c.get("label", ""), values) for c in component["components"]]
        return {"type": 1, "components": inputs}
    raise AssertionError(f"the fake cannot submit a modal component of type {component['type']}")


def _text_input(component: JSON, label: str, values: dict[str, str]) -> JSON:
    assert component["type"] == 4, f"not a text input: {component}"
    value = values.get(label, component.get("value") or "")
    assert len(value) <= component.get("max_length", 4000), f"{label}: {len(value)} characters"
    assert value or not component.get("required", True), f"{label} is required"
    return {
        "type": 4,
        "id": component.get("id", 0),
        "custom_id": component["custom_id"],
        "value": value,
    }
