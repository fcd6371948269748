"""The bot's commands: one table every platform registers from, one implementation each."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.core.background import SummaryBusy
from bot.core.engine import Engine
from bot.core.memory.digest import USAGE as DIGEST_USAGE
from bot.core.memory.digest import parse_span, span_messages
from bot.core.models import (
    CommandCall,
    Conversation,
    FactSource,
    Person,
    Pin,
    ProfileFact,
    Reply,
    ReplyKind,
    Role,
    utc_minute,
)
from bot.core.ports.llm import LLMError, clean_text
from bot.core.ports.store import StorageError, UsageTotals
from bot.core.prompt.assembler import PromptTooLarge, Speaker
from bot.core.prompt.layout import fit_profile, profile_cap, render_pins, render_profile
from bot.core.wording import counted

Handler = Callable[[Engine, CommandCall], Awaitable[Reply]]

MAX_PIN_SHARE = 0.5
"""System prompt and pins together may take at most this share of the budget."""


@dataclass(frozen=True)
class CommandSpec:
    name: str
    usage: str
    description: str
    handler: Handler
    admin: bool = False
    ephemeral: bool = False
    """Whether the answer is for the caller only (Slack and Discord)."""


def _info(text: str, *, ephemeral: bool = False) -> Reply:
    return Reply(text, kind=ReplyKind.INFO, ephemeral=ephemeral)


def _error(text: str) -> Reply:
    return Reply(text, kind=ReplyKind.ERROR, ephemeral=True)


async def pin(engine: Engine, call: CommandCall) -> Reply:
    text = clean_text(call.argument).strip()
    if not text:
        return _error("Usage: /pin TEXT — keeps TEXT in every prompt of this channel.")
    channel = call.conversation.channel_key
    name = clean_text(call.user_name)
    pins = list(await engine.store.pins(channel_key=channel))
    candidate = Pin(0, channel, text, 0, name, 0.0)
    settings = engine.settings_for(call.conversation)
    rendered = render_pins([*pins, candidate])
    pins_after = engine.tokenizer.count(rendered)
    needed = engine.tokenizer.count(settings.system_prompt) + pins_after
    # The budget for a prompt in the scripts of the system prompt and pins.
    head = engine.gauge.tokens([{"content": settings.system_prompt}, {"content": rendered}], needed)
    budget = engine.budget(settings, head)
    allowed = int(budget * MAX_PIN_SHARE)
    if needed > allowed:
        return _error(
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
    return _info(f"Pinned #{added.id}: {text}\nPins now take {pins_after:,} tokens.")


_PIN_ID = re.compile(r"^#?(\d{1,18})$")


async def unpin(engine: Engine, call: CommandCall) -> Reply:
    match = _PIN_ID.match(call.argument.strip())
    if match is None:
        return _error("Usage: /unpin ID — the number /pins shows, e.g. /unpin 3.")
    pin_id = int(match.group(1))
    channel = call.conversation.channel_key
    found = next((p for p in await engine.store.pins(channel_key=channel) if p.id == pin_id), None)
    if found is None:
        return _error(f"There is no pin #{pin_id} in this channel (/pins lists them).")
    if found.author_id != call.user_id and not call.can_manage:
        return _error(
            f"Only {found.author_name}, who pinned #{pin_id}, or a channel admin can unpin it."
        )
    if not await engine.store.remove_pin(channel_key=channel, pin_id=pin_id):
        return _error(f"There is no pin #{pin_id} in this channel (/pins lists them).")
    return _info(f"Unpinned #{pin_id}.")


PINS_LISTED_CHARS = 3000
"""``/pins`` lists pins up to about this many characters (one Slack or two Discord messages)."""


async def pins(engine: Engine, call: CommandCall) -> Reply:
    found = await engine.store.pins(channel_key=call.conversation.channel_key)
    if not found:
        return _info("No pins in this channel. /pin TEXT keeps a fact in every prompt.")
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
    return _info("\n".join(lines))


def _person(call: CommandCall) -> Person:
    return Person.of(call.conversation, call.user_id)


def _name(call: CommandCall) -> str:
    """The caller as messages name them (their id when the platform gave no name)."""
    return clean_text(call.user_name) or call.user_id


async def remember(engine: Engine, call: CommandCall) -> Reply:
    text = clean_text(call.argument).strip()
    if not text:
        return _error(
            "Usage: /remember TEXT — a fact about you (name, role, time zone, preferences) "
            "shown to the model whenever you talk to it in this workspace."
        )
    settings = engine.settings_for(call.conversation)
    cap = profile_cap(settings, engine.budget(settings))
    if cap == 0:
        return _error("Profiles are turned off here (memory.profile_tokens is 0).")
    person = _person(call)
    facts = list(await engine.store.profile_facts(person=person))
    same = next((f for f in facts if f.text.casefold() == text.casefold()), None)
    if same is not None:
        return _info(f"Already remembered as #{same.id}: {same.text}", ephemeral=True)
    own = [f for f in facts if f.source is FactSource.USER]
    candidate = ProfileFact(0, person, text, 0, FactSource.USER, 0.0)
    needed = engine.tokenizer.count(render_profile(_name(call), [*own, candidate]))
    if needed > cap:
        return _error(
            f"Not remembered: your facts would take {needed:,} tokens, more than the "
            f"{cap:,} a profile may take in a prompt. Shorten it, or /forget ID something "
            "first (/profile lists them)."
        )
    added = await engine.store.add_profile_fact(
        person=person, text=text, tokens=engine.tokenizer.count(text), source=FactSource.USER
    )
    return _info(
        f"Remembered #{added.id}: {text}\nThe model sees it whenever you talk to it in this "
        "workspace. /profile lists what is kept about you; /forget ID removes it.",
        ephemeral=True,
    )


async def profile(engine: Engine, call: CommandCall) -> Reply:
    person = _person(call)
    facts = await engine.store.profile_facts(person=person)
    if not facts:
        return _info(
            "Nothing is kept about you in this workspace. /remember TEXT adds a fact.",
            ephemeral=True,
        )
    settings = engine.settings_for(call.conversation)
    cap = profile_cap(settings, engine.budget(settings))
    _, shown = fit_profile(engine.tokenizer.count, _name(call), facts, cap)
    shown_ids = {f.id for f in shown}
    lines = [f"{counted(len(facts), 'fact')} kept about you in this workspace:"]
    for fact in facts:
        origin = "you set it" if fact.source is FactSource.USER else "inferred from conversation"
        left_out = "" if fact.id in shown_ids else "; not in prompts: the profile is full"
        lines.append(f"#{fact.id} ({origin}{left_out}): {fact.text}")
    lines.append("/forget ID removes one; /forget all removes everything.")
    return _info("\n".join(lines), ephemeral=True)


async def forget(engine: Engine, call: CommandCall) -> Reply:
    argument = call.argument.strip().lower()
    person = _person(call)
    if argument == "all":
        removed = await engine.store.remove_profile_facts(person=person, fact_id=None)
        if not removed:
            return _info("Nothing was kept about you in this workspace.", ephemeral=True)
        return _info(
            f"Forgot {counted(removed, 'fact')} kept about you in this workspace, inferred ones "
            "too.",
            ephemeral=True,
        )
    match = _PIN_ID.match(argument)
    if match is None:
        return _error("Usage: /forget ID (the number /profile shows), or /forget all.")
    fact_id = int(match.group(1))
    if not await engine.store.remove_profile_facts(person=person, fact_id=fact_id):
        return _error(f"There is no fact #{fact_id} in your profile (/profile lists them).")
    return _info(f"Forgot #{fact_id}.", ephemeral=True)


async def summarize(engine: Engine, call: CommandCall) -> Reply:
    if call.argument.strip():
        return await _digest(engine, call)
    settings = engine.settings_for(call.conversation)
    if not settings.uses_summary:
        return _error(
            f"The '{settings.strategy}' memory strategy keeps no summary; "
            "set memory.strategy to summary or hybrid."
        )
    try:
        summary = await engine.summarize(call.conversation)
    except LLMError as exc:
        return _error(
            f"The summary model failed ({exc.failure}); nothing was changed. {exc.user_message}"
        )
    except SummaryBusy:
        return _info(
            "Another bot process is summarizing this conversation right now; "
            "try /summarize again in a minute."
        )
    if summary is None:
        current = await engine.store.latest_summary(conversation_key=call.conversation.key)
        if current is None:
            return _info("Nothing to summarize yet: the conversation is still short.")
        return _info(
            f"Nothing new to fold in. Current summary ({counted(current.message_count, 'message')}"
            f"):\n"
            f"{current.content}"
        )
    kind = "rebuilt from the raw messages" if summary.rebuilt else "updated"
    return _info(
        f"Summary {kind}; it now covers {counted(summary.message_count, 'message')} "
        f"({counted(summary.tokens, 'token')}):\n{summary.content}"
    )


async def _digest(engine: Engine, call: CommandCall) -> Reply:
    """``/summarize since WHEN`` / ``last N``: a digest posted, the rolling summary left."""
    span = parse_span(call.argument, engine.clock())
    if span is None:
        return _error(DIGEST_USAGE)
    messages = await span_messages(engine.store, call.conversation.key, span)
    if not messages:
        return _info(f"Nothing was said here {span.describe()}.", ephemeral=True)
    settings = engine.settings_for(call.conversation)
    try:
        text, read = await engine.summarizer.digest(call.conversation, messages, settings=settings)
    except LLMError as exc:
        return _error(f"The summary model failed ({exc.failure}). {exc.user_message}")
    read_out = f"{counted(len(messages), 'message')}" if span.last is None else ""
    if read < len(messages):  # more than one call of the summary model reads
        read_out = f"the last {read:,} of {counted(len(messages), 'message')}"
    shown = f" ({read_out})" if read_out else ""
    return _info(f"Digest {span.describe()}{shown}:\n{text}")


SEARCH_SHOWN = 5
"""How many matches /search shows."""


async def search(engine: Engine, call: CommandCall) -> Reply:
    """``/search TEXT``: what the bot can find of this conversation, for the caller only."""
    text = clean_text(call.argument).strip()
    if not text:
        return _error(
            "Usage: /search TEXT — the messages of this conversation the bot finds for it."
        )
    if not engine.settings_for(call.conversation).recall.enabled:
        return _error("Search is off here: memory.recall_tokens is 0, so nothing is indexed.")
    found = (await engine.search(call.conversation, text))[:SEARCH_SHOWN]
    if not found:
        return _info(f"Nothing in this conversation matches “{text}”.", ephemeral=True)
    lines = [f"Best matches for “{text}” in this conversation:"]
    for message in found:
        when = utc_minute(message.created_at)
        who = "the bot" if message.role is Role.ASSISTANT else message.author_name
        said = message.content if len(message.content) <= 300 else message.content[:300] + "…"
        link = call.link_to(message.message_id) if call.link_to and message.message_id else None
        lines.append(f"• {when} UTC, {who}: {said}" + (f" ({link})" if link else ""))
    return _info("\n".join(lines), ephemeral=True)


def _usage_line(rows: list[UsageTotals], purpose: str) -> str | None:
    chosen = [row for row in rows if row.purpose == purpose]
    if not chosen:
        return None
    requests = sum(r.requests for r in chosen)
    prompt = sum(r.prompt_tokens for r in chosen)
    completion = sum(r.completion_tokens for r in chosen)
    estimated = sum(r.estimated for r in chosen)
    line = (
        f"  {purpose}: {counted(requests, 'request')}, {prompt:,} prompt + "
        f"{counted(completion, 'completion token')}"
    )
    if estimated:
        line += f" ({estimated:,} of the requests estimated: the server sent no usage)"
    return line


async def stats(engine: Engine, call: CommandCall) -> Reply:
    speaker = Speaker(_person(call), _name(call))
    return _info(await format_stats(engine, call.conversation, speaker=speaker), ephemeral=True)


async def format_stats(
    engine: Engine, conversation: Conversation, *, speaker: Speaker | None = None
) -> str:
    """The /stats text; ``speaker``'s profile is counted as if they wrote the next message."""
    try:
        preview = await engine.preview(conversation, speaker=speaker)
    except PromptTooLarge as exc:
        return f"Context for {conversation.key}: {exc}"
    prompt, settings = preview.prompt, preview.settings
    window_messages = len(prompt.window)
    summarized = prompt.summary.message_count if prompt.summary else 0
    notes = {
        "pins": counted(len(prompt.pins), "pin"),
        "profile": f"{counted(len(prompt.profile), 'fact')} about who speaks",
        "summary": f"covers {counted(summarized, 'message')}",
        "recall": (
            f"{counted(len(prompt.recalled), 'earlier message')} found by search"
            if settings.recall.enabled
            else "off (memory.recall_tokens: 0)"
        ),
        "recent": counted(window_messages, "message"),
    }
    lines = [
        f"Context for {conversation.key} ({settings.strategy} strategy)",
        f"Prompt: {prompt.tokens:,} / {prompt.budget:,} tokens ({prompt.fill:.1%}); by layer:",
    ]
    for layer, tokens in prompt.breakdown.as_dict().items():
        share = tokens / prompt.tokens if prompt.tokens else 0.0
        note = f"  ({notes[layer]})" if layer in notes else ""
        lines.append(f"  {layer:<8}{tokens:>7,}  {share:>6.1%}{note}")
    lines.append(
        f"Messages stored: {preview.stored_messages:,}; in the window: {window_messages:,}; "
        f"summarized: {summarized:,}"
    )
    usage = list(await engine.store.usage(conversation_key=conversation.key))
    purposes = ("chat", "summary", "digest")
    usage_lines = [line for p in purposes if (line := _usage_line(usage, p))]
    lines.append("Lifetime usage reported by the API:" if usage_lines else "No API usage yet.")
    lines.extend(usage_lines)
    lines.append(f"Chat model: {engine.tokenizer.describe()}")
    lines.extend(engine.calibrator.describe(engine.chat.model))
    lines.append(f"Summary model: {engine.summarizer.model}")
    if prompt.budget != settings.max_context_tokens:
        lines.append(f"Budget calibrated from {settings.max_context_tokens:,} tokens.")
    if prompt.fill > settings.summary.threshold:
        lines.append(
            f"Warning: the prompt is past {settings.summary.threshold:.0%} of the budget; "
            + (
                "older turns are being folded into the summary."
                if settings.uses_summary
                else "the oldest turns are being left out."
            )
        )
    return "\n".join(lines)


async def reset(engine: Engine, call: CommandCall) -> Reply:
    argument = call.argument.strip().lower()
    if argument not in ("", "all", "pins"):
        return _error("Usage: /reset, or /reset all to remove this channel's pins as well.")
    include_pins = argument in ("all", "pins")
    deleted = await engine.reset(call.conversation, include_pins=include_pins)
    tail = "Pins removed too." if include_pins else "Pins kept (/reset all removes them too)."
    return _info(
        f"Forgot {counted(deleted, 'message')} and the summary of this conversation. {tail}"
    )


async def help_(engine: Engine, call: CommandCall) -> Reply:
    lines = ["Commands:"]
    lines.extend(f"  {spec.usage} — {spec.description}" for spec in COMMANDS)
    return _info("\n".join(lines), ephemeral=True)


COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec("pin", "/pin TEXT", "keep a fact in every prompt of this channel", pin),
    CommandSpec("unpin", "/unpin ID", "remove a pinned fact", unpin),
    CommandSpec("pins", "/pins", "list the pinned facts", pins),
    CommandSpec(
        "remember",
        "/remember TEXT",
        "keep a fact about you, shown to the model when you speak",
        remember,
        ephemeral=True,
    ),
    CommandSpec("profile", "/profile", "list what is kept about you", profile, ephemeral=True),
    CommandSpec(
        "forget",
        "/forget ID",
        "remove a fact about you (/forget all: every one)",
        forget,
        ephemeral=True,
    ),
    CommandSpec(
        "summarize",
        "/summarize [since WHEN]",
        "fold older messages into the summary now; since WHEN (or last N): a digest of that part",
        summarize,
    ),
    CommandSpec(
        "search",
        "/search TEXT",
        "what the bot finds in this conversation's memory for TEXT",
        search,
        ephemeral=True,
    ),
    CommandSpec(
        "stats", "/stats", "tokens in the prompt against the budget", stats, ephemeral=True
    ),
    CommandSpec(
        "reset", "/reset [all]", "forget this conversation (all: pins too)", reset, admin=True
    ),
    CommandSpec("help", "/help", "list the commands", help_, ephemeral=True),
)
_BY_NAME = {spec.name: spec for spec in COMMANDS}


async def run_command(engine: Engine, call: CommandCall) -> Reply:
    spec = _BY_NAME.get(call.name.lower())
    if spec is None:
        names = ", ".join(f"/{s.name}" for s in COMMANDS)
        return _error(f"Unknown command /{call.name}. Commands: {names}.")
    if spec.admin and not call.can_manage:
        return _error(f"Only channel admins can use /{spec.name}.")
    try:
        return await spec.handler(engine, call)
    except StorageError:  # the store logged the cause; the person learns nothing was kept
        return _error(
            f"/{spec.name} could not be saved: the bot's storage is failing; "
            "an operator has been told."
        )


_COMMAND_LINE = re.compile(r"/(?!/)(\S*)\s*(.*)", re.DOTALL)


def parse_command_line(line: str) -> tuple[str, str] | None:
    """``"/pin some text"`` → ``("pin", "some text")``, the name ending at any whitespace
    (``/pin<TAB>text`` too); None when it is not a command."""
    match = _COMMAND_LINE.match(line)
    return None if match is None else (match[1], match[2])
