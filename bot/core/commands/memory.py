"""``/summarize``, ``/search``, ``/reset``: the conversation's memory."""

from __future__ import annotations

from bot.core.background import SummaryBusy
from bot.core.caps import CapReached
from bot.core.commands.common import error, info
from bot.core.engine import Engine
from bot.core.memory.digest import USAGE as DIGEST_USAGE
from bot.core.memory.digest import parse_span, span_messages
from bot.core.models import CommandCall, Conversation, Reply, Role, StoredMessage, utc_minute
from bot.core.ports.llm import LLMError, clean_text
from bot.core.wording import counted


async def summarize(engine: Engine, call: CommandCall) -> Reply:
    if call.argument.strip():
        return await _digest(engine, call)
    settings = await engine.settings_for(call.conversation)
    if not settings.uses_summary:
        return error(
            f"The '{settings.strategy}' memory strategy keeps no summary; "
            "set memory.strategy to summary or hybrid."
        )
    try:
        summary = await engine.summarize(call.conversation)
    except LLMError as exc:
        return error(
            f"The summary model failed ({exc.failure}); nothing was changed. {exc.user_message}"
        )
    except SummaryBusy:
        return info(
            "Another bot process is summarizing this conversation right now; "
            "try /summarize again in a minute."
        )
    except CapReached as exc:
        return info(f"No summary now. {exc}")
    if summary is None:
        current = await engine.store.latest_summary(conversation_key=call.conversation.key)
        if current is None:
            return info("Nothing to summarize yet: the conversation is still short.")
        return info(
            f"Nothing new to fold in. Current summary ({counted(current.message_count, 'message')}"
            f"):\n"
            f"{current.content}"
        )
    kind = "rebuilt from the raw messages" if summary.rebuilt else "updated"
    return info(
        f"Summary {kind}; it now covers {counted(summary.message_count, 'message')} "
        f"({counted(summary.tokens, 'token')}):\n{summary.content}"
    )


async def _digest(engine: Engine, call: CommandCall) -> Reply:
    """``/summarize since WHEN`` / ``last N``: a digest posted, the rolling summary left."""
    span = parse_span(call.argument, engine.clock())
    if span is None:
        return error(DIGEST_USAGE)
    messages = await span_messages(engine.store, call.conversation.key, span)
    if not messages:
        return info(f"Nothing was said here {span.describe()}.", ephemeral=True)
    settings = await engine.settings_for(call.conversation)
    check = await engine.caps.check(call.conversation, call.user_id, settings)
    if check.refusal is not None:
        return check.refusal
    try:
        text, read = await engine.summarizer.digest(
            call.conversation, messages, settings=settings, person=call.user_id
        )
    except LLMError as exc:
        return error(f"The summary model failed ({exc.failure}). {exc.user_message}")
    read_out = f"{counted(len(messages), 'message')}" if span.last is None else ""
    if read < len(messages):  # more than one call of the summary model reads
        read_out = f"the last {read:,} of {counted(len(messages), 'message')}"
    shown = f" ({read_out})" if read_out else ""
    return info(f"Digest {span.describe()}{shown}:\n{text}")


SEARCH_SHOWN = 5
"""How many matches /search shows."""


async def search(engine: Engine, call: CommandCall) -> Reply:
    """``/search TEXT``: what the bot can find of this conversation, for the caller only."""
    text = clean_text(call.argument).strip()
    if not text:
        return error(
            "Usage: /search TEXT — the messages of this conversation the bot finds for it."
        )
    if not (await engine.settings_for(call.conversation)).recall.enabled:
        return error("Search is off here: memory.recall_tokens is 0, so nothing is indexed.")
    found = (await _search(engine, call.conversation, text))[:SEARCH_SHOWN]
    if not found:
        return info(f"Nothing in this conversation matches “{text}”.", ephemeral=True)
    lines = [f"Best matches for “{text}” in this conversation:"]
    for message in found:
        when = utc_minute(message.created_at)
        who = "the bot" if message.role is Role.ASSISTANT else message.author_name
        said = message.content if len(message.content) <= 300 else message.content[:300] + "…"
        link = call.link_to(message.message_id) if call.link_to and message.message_id else None
        lines.append(f"• {when} UTC, {who}: {said}" + (f" ({link})" if link else ""))
    return info("\n".join(lines), ephemeral=True)


async def _search(engine: Engine, conversation: Conversation, text: str) -> list[StoredMessage]:
    """The conversation's messages that best match ``text``, best first, as recall would
    find them for a message saying it, whatever is in the window."""
    settings = await engine.settings_for(conversation)
    newest = await engine.store.last_message_id(conversation_key=conversation.key)
    if newest is None:
        return []
    query = StoredMessage(0, 0, Role.USER, "", "", text, 0, engine.clock())
    return await engine.recaller.search(
        conversation_key=conversation.key,
        query=query,
        before_id=newest + 1,
        pins=(),
        settings=settings.recall,
    )


async def reset(engine: Engine, call: CommandCall) -> Reply:
    argument = call.argument.strip().lower()
    if argument not in ("", "all", "pins"):
        return error("Usage: /reset, or /reset all to remove this channel's pins as well.")
    include_pins = argument in ("all", "pins")
    deleted = await engine.reset(call.conversation, include_pins=include_pins)
    tail = "Pins removed too." if include_pins else "Pins kept (/reset all removes them too)."
    return info(
        f"Forgot {counted(deleted, 'message')} and the summary of this conversation. {tail}"
    )
