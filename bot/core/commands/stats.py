"""``/stats``: the prompt against the budget, by layer, and the tokens spent; ``/stats chart``
adds the layers as a bar (:mod:`.charts`)."""

from __future__ import annotations

from bot.core.commands.charts import wants_chart, with_layers_chart
from bot.core.commands.common import error, info, name_of, person_of
from bot.core.commands.page_link import page_lines
from bot.core.engine import Engine, Preview
from bot.core.models import CommandCall, Conversation, Reply
from bot.core.ports.store import UsageTotals
from bot.core.prompt.assembler import PromptTooLarge, Speaker
from bot.core.settings.keys import KEYS
from bot.core.settings.source import CONFIG
from bot.core.wording import counted


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


USAGE = "Usage: /stats, or /stats chart to add the prompt's layers as a bar."


async def stats(engine: Engine, call: CommandCall) -> Reply:
    chart = wants_chart(call)
    if chart is None:
        return error(USAGE)
    speaker = Speaker(person_of(call), name_of(call))
    conversation = call.conversation
    try:
        preview = await engine.preview(conversation, speaker=speaker)
    except PromptTooLarge as exc:
        return info(f"Context for {conversation.key}: {exc}", ephemeral=True)
    text = await describe(engine, conversation, preview)
    if chart:  # posted for the channel: the admin's page link stays out of it
        return await with_layers_chart(engine, conversation, text, preview.prompt)
    return info("\n".join([text, *await page_lines(engine, call)]), ephemeral=True)


async def format_stats(
    engine: Engine, conversation: Conversation, *, speaker: Speaker | None = None
) -> str:
    """The /stats text; ``speaker``'s profile is counted as if they wrote the next message."""
    try:
        preview = await engine.preview(conversation, speaker=speaker)
    except PromptTooLarge as exc:
        return f"Context for {conversation.key}: {exc}"
    return await describe(engine, conversation, preview)


async def describe(engine: Engine, conversation: Conversation, preview: Preview) -> str:
    """The /stats text for the prompt ``preview`` holds."""
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
    lines.append(f"Chat model: {engine.tokenizer.describe(settings.chat_model)}")
    lines.extend(engine.calibrator.describe(settings.chat_model))
    lines.append(f"Summary model: {settings.summary_model}")
    resolved = await engine.settings.resolve(conversation)
    own = [
        f"{key.name} {key.show(resolved.settings)} ({resolved.origins[key.name]})"
        for key in KEYS
        if resolved.origins[key.name] != CONFIG
    ]
    lines.append(
        ("Set here: " + "; ".join(own) if own else "Every setting is the config's")
        + " (/settings lists them)."
    )
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
