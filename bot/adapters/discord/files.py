"""A reply's attachments (charts) as Discord files, each with its alt text as the file's
description, and the line saying they are missing when Discord refuses them."""

from __future__ import annotations

import io

import discord

from bot.core.models import Reply

_DESCRIPTION_LIMIT = 1024  # what Discord keeps of an attachment's description


def files_of(reply: Reply) -> list[discord.File]:
    return [
        discord.File(
            io.BytesIO(attachment.data),
            filename=attachment.filename,
            description=attachment.alt_text[:_DESCRIPTION_LIMIT],
        )
        for attachment in reply.attachments
    ]


def not_attached(reply: Reply, refused: discord.HTTPException) -> str:
    """The one line saying the reply's files are missing, and why."""
    names = ", ".join(attachment.filename for attachment in reply.attachments)
    why = refused.text or f"HTTP {refused.status}"
    return f"({names} could not be posted here: Discord said {why}.)"
