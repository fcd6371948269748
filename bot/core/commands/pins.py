"""``/pin``, ``/unpin``, ``/pins``: facts kept in every prompt of a channel, and (``/pin
--everywhere``, by admins) in every prompt of its workspace or server."""

from __future__ import annotations

import re
from collections.abc import Sequence

from bot.core.commands.common import NUMBER, error, info
from bot.core.engine import Engine
from bot.core.models import CommandCall, Conversation, Pin, Reply
from bot.core.ports.llm import clean_text
from bot.core.prompt.layout import render_pins
from bot.core.wording import counted

MAX_PIN_SHARE = 0.5
"""System prompt and pins together may take at most this share of the budget."""
_EVERYWHERE = re.compile(r"^(?:--|—|–)everywhere(?:\s+|$)", re.IGNORECASE)
"""``/pin --everywhere TEXT`` (the dashes as a keyboard may have turned them into a dash)."""


async def prompt_pins(engine: Engine, conversation: Conversation) -> Sequence[Pin]:
    """The pins the conversation's prompts carry: its channel's and its workspace's."""
    pins, _ = await engine.store.pins_and_profile(channel_keys=conversation.pin_keys, person=None)
    return pins


def _everywhere_refused(call: CommandCall, share_private: bool) -> Reply | None:
    """Why this call may not pin for the whole workspace, if it may not."""
    if not call.can_manage:
        return error(
            "Only admins can pin for every channel (/pin --everywhere); /pin TEXT keeps a "
            "fact in this channel."
        )
    if not call.conversation.shares_workspace:
        return error("/pin --everywhere: this DM is in no server; /pin TEXT keeps a fact here.")
    if call.private and not share_private:
        return error(
            "/pin --everywhere: this channel is private (or a DM); an admin of it opts in "
            "first with /settings share-private on, or pins it from a public channel."
        )
    return None


async def pin(engine: Engine, call: CommandCall) -> Reply:
    argument = call.argument.strip()
    everywhere = _EVERYWHERE.match(argument)
    text = clean_text(argument[everywhere.end() :] if everywhere else argument).strip()
    if not text:
        return error(
            "Usage: /pin TEXT — keeps TEXT in every prompt of this channel "
            "(admins: /pin --everywhere TEXT, in every channel of the workspace)."
        )
    conversation = call.conversation
    settings = await engine.settings_for(conversation)
    if everywhere and (refusal := _everywhere_refused(call, settings.share_private)):
        return refusal
    key = conversation.workspace_key if everywhere else conversation.channel_key
    name = clean_text(call.user_name)
    pins = list(await prompt_pins(engine, conversation))
    candidate = Pin(0, key, text, 0, name, 0.0)
    rendered = render_pins([*pins, candidate])
    pins_after = engine.tokenizer.count(rendered)
    needed = engine.tokenizer.count(settings.system_prompt) + pins_after
    # The budget for a prompt in the scripts of the system prompt and pins.
    shown = [{"content": settings.system_prompt}, {"content": rendered}]
    head = engine.gauge(settings.chat_model).tokens(shown, needed)
    budget = engine.budget(settings, head)
    allowed = int(budget * MAX_PIN_SHARE)
    if needed > allowed:
        return error(
            f"Not pinned: the system prompt and pins would take {needed:,} tokens, more than "
            f"half of the {budget:,}-token budget ({allowed:,}), leaving too little room for "
            "the conversation. Shorten it, or /unpin something first (/pins lists them)."
        )
    added = await engine.store.add_pin(
        channel_key=key,
        text=text,
        tokens=engine.tokenizer.count(text),
        author_id=call.user_id,
        author_name=name,
    )
    where = " in every channel of this workspace" if everywhere else ""
    return info(f"Pinned #{added.id}{where}: {text}\nPins now take {pins_after:,} tokens.")


async def unpin(engine: Engine, call: CommandCall) -> Reply:
    match = NUMBER.match(call.argument.strip())
    if match is None:
        return error("Usage: /unpin ID — the number /pins shows, e.g. /unpin 3.")
    pin_id = int(match.group(1))
    pins = await prompt_pins(engine, call.conversation)
    found = next((p for p in pins if p.id == pin_id), None)
    missing = error(f"There is no pin #{pin_id} in this channel (/pins lists them).")
    if found is None:
        return missing
    if found.everywhere and not call.can_manage:
        return error(f"Only admins can unpin #{pin_id}: it is kept in every channel.")
    if found.author_id != call.user_id and not call.can_manage:
        return error(
            f"Only {found.author_name}, who pinned #{pin_id}, or a channel admin can unpin it."
        )
    if not await engine.store.remove_pin(channel_key=found.channel_key, pin_id=pin_id):
        return missing
    return info(f"Unpinned #{pin_id}" + (" from every channel." if found.everywhere else "."))


PINS_LISTED_CHARS = 3000
"""``/pins`` lists pins up to about this many characters (one Slack or two Discord messages)."""


async def pins(engine: Engine, call: CommandCall) -> Reply:
    found = await prompt_pins(engine, call.conversation)
    own = [p for p in found if not p.everywhere]
    everywhere = [p for p in found if p.everywhere]
    if not found:
        return info("No pins in this channel. /pin TEXT keeps a fact in every prompt.")
    lines: list[str] = []
    if own:
        lines.append(f"{counted(len(own), 'pinned fact')}, in every prompt of this channel:")
    else:
        lines.append("No pins of this channel's own.")
    size = len(lines[0])
    size = _listed(own, lines, size)
    if everywhere:
        heading = f"In every channel of this workspace ({counted(len(everywhere), 'pinned fact')}):"
        lines.append(heading)
        _listed(everywhere, lines, size + len(heading) + 1, first=not own)
    return info("\n".join(lines))


def _listed(found: Sequence[Pin], lines: list[str], size: int, *, first: bool = True) -> int:
    """Add a line per pin to ``lines`` until they reach :data:`PINS_LISTED_CHARS` (the rest
    counted on one line; ``first``: the first is listed whatever its length); the size they
    reach."""
    for shown, p in enumerate(found):
        line = f"#{p.id} ({p.author_name}): {p.text}"
        if size + len(line) > PINS_LISTED_CHARS and (shown or not first):
            rest = found[shown:]
            ids = f"#{rest[0].id}" if len(rest) == 1 else f"#{rest[0].id} to #{rest[-1].id}"
            lines.append(f"… and {len(rest):,} more ({ids}).")
            return size
        lines.append(line if len(line) <= PINS_LISTED_CHARS else line[:PINS_LISTED_CHARS] + "…")
        size += len(line) + 1
    return size
