"""Who may change a channel's memory and settings, and whether the channel is private.

One notion of channel admin governs ``/settings`` changes, ``/reset`` and unpinning others'
pins: the caller's own DM, a user of ``discord.admin_user_ids``, a member with a role of
``discord.admin_role_ids``, or a member with Manage Channels where the command is used.
"""

from __future__ import annotations

from typing import Any

import discord

from bot.config import DiscordConfig

Interaction = discord.Interaction[Any]

ADMIN_PERMISSIONS = discord.Permissions(manage_channels=True)
"""The permission that makes a member a channel admin (and the default permission of the
admin-only slash commands)."""


class Admins:
    """The configured admins, checked against an interaction's caller."""

    def __init__(self, settings: DiscordConfig) -> None:
        self._users = frozenset(settings.admin_user_ids)
        self._roles = frozenset(settings.admin_role_ids)

    def can_manage(self, interaction: Interaction) -> bool:
        """DMs are the caller's own; in servers the configured users and roles, or Manage
        Channels in this channel (Discord computes the caller's permissions there)."""
        user = interaction.user
        if interaction.guild_id is None or user.id in self._users:
            return True
        if isinstance(user, discord.Member) and any(r.id in self._roles for r in user.roles):
            return True
        return interaction.permissions.manage_channels


def is_private(interaction: Interaction) -> bool:
    """A DM, a private thread, or a channel (a thread: its parent) that @everyone cannot see.
    A channel the client has not cached cannot be told: private, the stricter answer."""
    if interaction.guild_id is None:
        return True
    guild = interaction.client.get_guild(interaction.guild_id)
    channel = interaction.channel
    if guild is None or channel is None:
        return True
    if isinstance(channel, discord.Thread):
        if channel.type is discord.ChannelType.private_thread:
            return True
        known = guild.get_channel(channel.parent_id)
    else:
        known = guild.get_channel(channel.id)
    if known is None:
        return True
    return not known.permissions_for(guild.default_role).view_channel
