"""``/usage chart`` and ``/stats chart``: the reply's words with the chart as a PNG whose alt
text says the same. A chart is posted for everyone in the channel to see (Slack cannot attach
a file to a reply only its asker sees)."""

from __future__ import annotations

from bot.core.charts import layers_chart, usage_chart
from bot.core.engine import Engine
from bot.core.models import CommandCall, Conversation, Reply, ReplyKind
from bot.core.prompt.assembler import Prompt

CHART = "chart"
USAGE_FILE = "usage.png"
LAYERS_FILE = "prompt-layers.png"


def wants_chart(call: CommandCall) -> bool | None:
    """Whether the argument asks for the chart (``chart``): True; none given: False; anything
    else: None (not understood)."""
    argument = call.argument.strip().lower()
    if not argument:
        return False
    return True if argument == CHART else None


def _where(conversation: Conversation) -> str:
    return "this thread" if conversation.thread else "this channel"


async def usage_with_chart(engine: Engine, call: CommandCall) -> Reply:
    """The channel's (and its threads') tokens and cost a day over the last 30 days: the
    chart, and its alt text as the reply."""
    chart = await usage_chart(
        engine.store,
        engine.charts,
        channel_key=call.conversation.channel_key,
        now=engine.clock(),
        where="this channel (and its threads)",
    )
    return Reply(chart.alt_text, kind=ReplyKind.INFO, attachments=(chart.attachment(USAGE_FILE),))


async def with_layers_chart(
    engine: Engine, conversation: Conversation, text: str, prompt: Prompt
) -> Reply:
    """``text`` (what ``/stats`` says), with the prompt's layers as a bar against its budget."""
    chart = await layers_chart(
        engine.charts,
        breakdown=prompt.breakdown.as_dict(),
        budget=prompt.budget,
        where=_where(conversation),
    )
    return Reply(text, kind=ReplyKind.INFO, attachments=(chart.attachment(LAYERS_FILE),))
