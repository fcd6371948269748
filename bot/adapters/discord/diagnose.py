"""``bot doctor``'s Discord check: the token works and the Message Content intent is on.

Only REST calls (who am I, which application): nothing is synced, no gateway session opened.
"""

from __future__ import annotations

import asyncio

import aiohttp
import discord

from bot.adapters.discord.platform import BAD_TOKEN, ENABLE_INTENT, point_at
from bot.config import DiscordConfig

# Application flags (Discord docs, "Application Flags"): the intent once approved (verified
# bots) or enabled in the portal (bots in fewer than 100 servers).
GATEWAY_MESSAGE_CONTENT = 1 << 18
GATEWAY_MESSAGE_CONTENT_LIMITED = 1 << 19


async def diagnose(settings: DiscordConfig) -> tuple[bool, str]:
    """(ok, one line) about the bot's account and the intent it needs."""
    if not settings.token:
        return False, "DISCORD_TOKEN is not set in the environment"
    point_at(api_base_url=settings.api_base_url, gateway_url=settings.gateway_url)
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    try:
        user = await http.static_login(settings.token)
        application = await http.application_info()
    except discord.LoginFailure:
        return False, BAD_TOKEN
    except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
        return False, f"could not reach Discord: {exc}"
    finally:
        await http.close()
    flags = int(application.get("flags") or 0)
    if not flags & (GATEWAY_MESSAGE_CONTENT | GATEWAY_MESSAGE_CONTENT_LIMITED):
        return False, f"the Message Content intent is off for this application. {ENABLE_INTENT}"
    where = f"server {settings.dev_guild_id}" if settings.dev_guild_id else "all servers"
    commands = (
        f"slash commands for {where}"
        if settings.register_commands
        else "slash commands registered by another process"
    )
    return True, (
        f"discord: logged in as {user['username']} (application {application['id']}), "
        f"Message Content intent on; records {settings.record} messages; {commands}"
        f"{_shards(settings)}"
    )


def _shards(settings: DiscordConfig) -> str:
    """Which shards this process runs, when sharded."""
    if settings.shard_count is None:
        return ""
    if settings.shard_count == "auto":
        return "; as many shards as Discord recommends"
    if settings.shard_ids is None:
        return f"; every shard of {settings.shard_count}"
    ids = ", ".join(str(shard) for shard in settings.shard_ids)
    return f"; shards {ids} of {settings.shard_count}"
