"""``/pin``, ``/unpin``, ``/pins``: facts kept in every prompt of a channel."""

from __future__ import annotations

from bot.core.commands.common import NUMBER, error, info
from bot.core.engine import Engine
from bot.core.models import CommandCall, Pin, Reply
from bot.core.ports.llm import clean_text
from bot.core.prompt.layout import render_pins
from bot.core.wording import counted

MAX_PIN_SHARE = 0.5
"""System prompt and pins together may take at most this share of the budget."""


async def pin(engine: Engine, call: CommandCall) -> Reply:
    text = clean_text(call.argument).strip()
    if not text:
        return error("Usage: /pin TEXT — keeps TEXT in every prompt of this channel.")
    channel = call.conversation.channel_key
    name = clean_text(call.user_name)
    pins = list(await engine.store.pins(channel_key=channel))
    candidate = Pin(0, channel, text, 0, name, 0.0)
    settings = await engine.settings_for(call.conversation)
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
        channel_key=channel,
        text=text,
        tokens=engine.tokenizer.count(text),
        author_id=call.user_id,
        author_name=name,
    )
    return info(f"Pinned #{added.id}: {text}\nPins now take {pins_after:,} tokens.")


async def unpin(engine: Engine, call: CommandCall) -> Reply:
    match = NUMBER.match(call.argument.strip())
    if match is None:
        return error("Usage: /unpin ID — the number /pins shows, e.g. /unpin 3.")
    pin_id = int(match.group(1))
    channel = call.conversation.channel_key
    found = next((p for p in await engine.store.pins(channel_key=channel) if p.id == pin_id), None)
    if found is None:
        return error(f"There is no pin #{pin_id} in this channel (/pins lists them).")
    if found.author_id != call.user_id and not call.can_manage:
        return error(
            f"Only {found.author_name}, who pinned #{pin_id}, or a channel admin can unpin it."
        )
    if not await engine.store.remove_pin(channel_key=channel, pin_id=pin_id):
        return error(f"There is no pin #{pin_id} in this channel (/pins lists them).")
    return info(f"Unpinned #{pin_id}.")


PINS_LISTED_CHARS = 3000
"""``/pins`` lists pins up to about this many characters (one Slack or two Discord messages)."""


async def pins(engine: Engine, call: CommandCall) -> Reply:
    found = await engine.store.pins(channel_key=call.conversation.channel_key)
    if not found:
        return info("No pins in this channel. /pin TEXT keeps a fact in every prompt.")
    lines = [f"{counted(len(found), 'pinned fact')}, in every prompt of this channel:"]
    size = len(lines[0])
    for shown, p in enumerate(found):
        line = f"#{p.id} ({p.author_name}): {p.text}"
        if size + len(line) > PINS_LISTED_CHARS and shown:
            rest = found[shown:]
            ids = f"#{rest[0].id}" if len(rest) == 1 else f"#{rest[0].id} to #{rest[-1].id}"
            lines.append(f"… and {len(rest):,} more ({ids}).")
            break
        lines.append(line if len(line) <= PINS_LISTED_CHARS else line[:PINS_LISTED_CHARS] + "…")
        size += len(line) + 1
    return info("\n".join(lines))
