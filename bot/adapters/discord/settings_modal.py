"""``/settings persona`` opens a form: a slash command's option is one line, a persona is
often several. Submitting it runs ``/settings persona TEXT`` as the person who submitted."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import discord

PERSONA_INPUT_CHARS = 4000
"""The most a Discord text input takes (the longest persona a channel may set, too)."""
FORM_SECONDS = 3600.0
"""How long an opened form waits for its submission (the bot forgets it after that, and
after a restart: Discord then tells the person the interaction failed)."""

Submit = Callable[[discord.Interaction[Any], str], Awaitable[None]]


def opens_persona_form(command: str, argument: str) -> bool:
    """``/settings persona`` with no text: the form, rather than the persona shown."""
    return command == "settings" and argument.strip().lower() == "persona"


class PersonaForm(discord.ui.Modal):
    """One paragraph input holding the persona in force, to edit."""

    def __init__(self, *, current: str, submit: Submit) -> None:
        super().__init__(title="Persona in this channel", timeout=FORM_SECONDS)
        self.text: discord.ui.TextInput[PersonaForm] = discord.ui.TextInput(
            style=discord.TextStyle.paragraph,
            default=current[:PERSONA_INPUT_CHARS] or None,
            max_length=PERSONA_INPUT_CHARS,
            required=True,
        )
        self.add_item(
            discord.ui.Label(
                text="Persona",
                description="The system prompt: who the bot is and how it answers here.",
                component=self.text,
            )
        )
        self._submit = submit

    async def on_submit(self, interaction: discord.Interaction[Any], /) -> None:
        await self._submit(interaction, self.text.value)
