"""Slash commands and the "Pin to memory" menu, registered from :data:`bot.core.commands.COMMANDS`.

Every interaction is deferred at once (Discord allows 3 s) and answered with follow-ups, but
``/settings persona``, which opens a form (:mod:`.settings_modal`).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, NamedTuple

import discord
from discord import app_commands

from bot.adapters.discord.access import ADMIN_PERMISSIONS, Admins, is_private
from bot.adapters.discord.facts import conversation_of
from bot.adapters.discord.files import files_of, not_attached
from bot.adapters.discord.render import split_message
from bot.adapters.discord.settings_modal import PersonaForm, opens_persona_form
from bot.adapters.discord.translate import jump_url, prompt_text
from bot.config import DiscordConfig
from bot.core.commands import COMMANDS, CommandSpec
from bot.core.handler import Handler
from bot.core.models import CommandCall, Reply, ReplyKind

log = logging.getLogger(__name__)

PIN_MENU = "Pin to memory"
NO_MENTIONS = discord.AllowedMentions.none()
_OPTION = re.compile(r"^(\[)?([A-Za-z]+)\]?$")
Interaction = discord.Interaction[Any]


class CommandRunner:
    """Runs the core's commands for Discord interactions."""

    def __init__(self, *, handler: Handler, settings: DiscordConfig) -> None:
        self._handler = handler
        self._admins = Admins(settings)

    def can_manage(self, interaction: Interaction) -> bool:
        return self._admins.can_manage(interaction)

    def call_for(self, interaction: Interaction, name: str, argument: str) -> CommandCall:
        """The core's command call for ``interaction``'s caller, channel and rights."""
        return CommandCall(
            conversation=conversation_of(
                guild_id=interaction.guild_id,
                channel_id=interaction.channel_id or 0,
                channel=interaction.channel,
            ),
            name=name,
            argument=argument,
            user_id=str(interaction.user.id),
            user_name=interaction.user.display_name,
            can_manage=self.can_manage(interaction),
            private=is_private(interaction),
            link_to=functools.partial(jump_url, interaction.guild_id, interaction.channel_id or 0),
        )

    async def run(self, interaction: Interaction, spec: CommandSpec, argument: str) -> None:
        """Run ``/NAME ARGUMENT`` for the caller. Those who may not change the persona get
        it shown whole, as ``/settings persona`` does on other platforms, rather than a form
        whose submission would be refused."""
        if opens_persona_form(spec.name, argument) and self.can_manage(interaction):
            await self.open_persona_form(interaction, spec)
        else:
            await self.execute(interaction, spec, argument, ephemeral=spec.ephemeral_for(argument))

    async def execute(
        self, interaction: Interaction, spec: CommandSpec, argument: str, *, ephemeral: bool
    ) -> None:
        """Defer, run the core's command, follow up with its reply."""
        await interaction.response.defer(thinking=True, ephemeral=ephemeral)
        call = self.call_for(interaction, spec.name, argument)
        try:
            reply = await self._handler.command(call)
        except Exception:
            log.exception("/%s failed in %s", spec.name, call.conversation.key)
            reply = Reply(
                f"/{spec.name} failed; the details are in the bot's log.",
                kind=ReplyKind.ERROR,
                ephemeral=True,
            )
        await self.answer(interaction, reply, deferred_ephemeral=ephemeral)

    async def open_persona_form(self, interaction: Interaction, spec: CommandSpec) -> None:
        """The form holding the persona in force here; its submission sets it, answered to
        the submitter alone."""
        conversation = self.call_for(interaction, spec.name, "").conversation
        try:
            resolved = await self._handler.engine.settings.resolve(conversation)
        except Exception:
            log.exception("/settings persona failed in %s", conversation.key)
            await interaction.response.send_message(
                "/settings failed; the details are in the bot's log.", ephemeral=True
            )
            return

        async def submit(submitted: Interaction, text: str) -> None:
            await self.execute(submitted, spec, f"persona {text}", ephemeral=True)

        form = PersonaForm(current=resolved.settings.system_prompt, submit=submit)
        await interaction.response.send_modal(form)

    async def answer(
        self, interaction: Interaction, reply: Reply, *, deferred_ephemeral: bool
    ) -> None:
        """Follow up the deferred response; an ephemeral reply to a public deferral replaces it,
        and every part of a reply to an ephemeral deferral is ephemeral."""
        if reply.ephemeral and not deferred_ephemeral:
            await interaction.delete_original_response()
        ephemeral = reply.ephemeral or deferred_ephemeral
        parts = [part.text for part in split_message(reply.text)]
        last = parts.pop() if parts else ""
        for text in parts:
            await interaction.followup.send(text, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS)
        if reply.attachments:
            await self._with_files(interaction, reply, last, ephemeral=ephemeral)
        elif last:
            await interaction.followup.send(last, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS)

    async def _with_files(
        self, interaction: Interaction, reply: Reply, text: str, *, ephemeral: bool
    ) -> None:
        """A reply's last message, with its files; where Discord refuses them, without, and a
        line saying so."""
        try:
            await interaction.followup.send(
                text, files=files_of(reply), ephemeral=ephemeral, allowed_mentions=NO_MENTIONS
            )
            return
        except discord.HTTPException as exc:  # no Attach Files permission, too large
            log.warning("attaching files to a command's reply failed: %s %s", exc.status, exc.text)
            text = f"{text}\n{not_attached(reply, exc)}"
        await interaction.followup.send(text, ephemeral=ephemeral, allowed_mentions=NO_MENTIONS)

    async def pin_message(self, interaction: Interaction, message: discord.Message) -> None:
        text = prompt_text(
            message.content,
            {user.id: user.display_name for user in message.mentions},
            bot_id=interaction.client.user.id if interaction.client.user else 0,
        )
        if not text:
            await interaction.response.defer(thinking=True, ephemeral=True)
            error = Reply("That message has no text to pin.", kind=ReplyKind.ERROR, ephemeral=True)
            await self.answer(interaction, error, deferred_ephemeral=True)
            return
        pin = next(spec for spec in COMMANDS if spec.name == "pin")
        await self.run(interaction, pin, f"{message.author.display_name}: {text}")


class Option(NamedTuple):
    name: str
    required: bool


def _option(spec: CommandSpec) -> Option | None:
    """The command's one text option from its usage: ``/pin TEXT`` → required ``text``,
    ``/reset [all]`` → optional ``option``."""
    words = spec.usage.split()[1:]
    if not words:
        return None
    match = _OPTION.match(words[0])
    if match is None:
        return Option("argument", required=True)
    optional, word = match.groups()
    return Option("option" if optional else word.lower(), required=not optional)


Callback = Any  # discord.py inspects the signature; its own type is a union of shapes


def _callback(runner: CommandRunner, spec: CommandSpec, option: Option | None) -> Callback:
    if option is None:

        async def bare(interaction: discord.Interaction[Any]) -> None:
            await runner.run(interaction, spec, "")

        return bare
    if option.required:

        async def required(interaction: discord.Interaction[Any], argument: str) -> None:
            await runner.run(interaction, spec, argument)

        return required

    async def optional(interaction: discord.Interaction[Any], argument: str | None = None) -> None:
        await runner.run(interaction, spec, argument or "")

    return optional


def slash_command(runner: CommandRunner, spec: CommandSpec) -> app_commands.Command[Any, Any, None]:
    option = _option(spec)
    command: app_commands.Command[Any, Any, None] = app_commands.Command(
        name=spec.name, description=spec.description[:100], callback=_callback(runner, spec, option)
    )
    if option is not None:
        app_commands.rename(argument=option.name)(command)
        app_commands.describe(argument=f"{spec.usage} — {spec.description}"[:100])(command)
    if spec.admin:
        command.default_permissions = ADMIN_PERMISSIONS
    return command


def build_tree(client: discord.Client, runner: CommandRunner) -> app_commands.CommandTree[Any]:
    tree: app_commands.CommandTree[Any] = app_commands.CommandTree(client)
    for spec in COMMANDS:
        tree.add_command(slash_command(runner, spec))

    async def pin_to_memory(
        interaction: discord.Interaction[Any], message: discord.Message
    ) -> None:
        await runner.pin_message(interaction, message)

    tree.add_command(app_commands.ContextMenu(name=PIN_MENU, callback=pin_to_memory))
    return tree
