"""``/usage chart`` and ``/stats chart`` in-process: the reply carries a PNG of the channel's
last 30 days (its threads' calls too, no other channel's) or of the prompt's layers, with alt
text stating the totals; the reply is for everyone in the channel; anything but ``chart`` is
refused in one line."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.charts.draw import LAYER_COLOURS, TOKENS_COLOUR, UNUSED_COLOUR, USAGE_SIZE
from bot.core.commands import COMMANDS, run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from bot.core.ports.spend import ModelCall
from tests.support.core import running_core, unit_config
from tests.support.pictures import bars, size, widths_in_busiest_row

GENERAL = Conversation("slack", "T1", "C1")
THREAD = Conversation("slack", "T1", "C1", "1700000000.000100")
ELSEWHERE = Conversation("slack", "T1", "C2")
NOW = datetime(2026, 12, 5, 15, 0, tzinfo=UTC).timestamp()


def _call(conversation: Conversation, day: str, tokens: int, cost: float) -> ModelCall:
    at = datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    return ModelCall(at, conversation, "U1", "gpt-4o-mini", "chat", tokens - 10, 0, 10, cost)


async def test_usage_chart_posts_the_channels_last_30_days_with_their_totals() -> None:
    async with running_core(unit_config()) as core:
        core.engine.clock = lambda: NOW
        for call in (
            _call(GENERAL, "2026-11-10", 20_000, 0.10),
            _call(THREAD, "2026-11-10", 10_000, 0.05),
            _call(GENERAL, "2026-12-01", 300_000, 0.90),  # the busiest day
            _call(ELSEWHERE, "2026-12-03", 900_000, 9.00),  # another channel's
            _call(GENERAL, "2026-11-05", 1_000, 0.01),  # before the 30 days
        ):
            await core.store.record_call(call=call)
        reply = await run_command(core.engine, CommandCall(GENERAL, "usage", "chart", "U1", "Ana"))
    assert not reply.ephemeral and reply.kind is ReplyKind.INFO
    (chart,) = reply.attachments
    assert (chart.filename, chart.mime_type) == ("usage.png", "image/png")
    assert (
        chart.alt_text
        == reply.text
        == (
            "Tokens and cost per day for this channel (and its threads), 2026-11-06 to 2026-12-05 "
            "(UTC): total 330k tokens, $1.05; busiest day 2026-12-01 with 300k tokens, $0.9; "
            "calls on 2 of 30 days."
        )
    )
    assert size(chart.data) == USAGE_SIZE
    found = bars(chart.data, TOKENS_COLOUR)
    assert len(found) == 2 and found[1].height > 9 * found[0].height


async def test_stats_chart_attaches_the_prompts_layers_as_a_bar() -> None:
    async with running_core(unit_config()) as core:
        await core.engine.handle_message(IncomingMessage(GENERAL, "U1", "Ana", "hello", True))
        plain = await run_command(core.engine, CommandCall(GENERAL, "stats", "", "U1", "Ana"))
        reply = await run_command(core.engine, CommandCall(GENERAL, "stats", "chart", "U1", "Ana"))
        preview = await core.engine.preview(GENERAL)
    assert plain.ephemeral and plain.attachments == ()
    assert not reply.ephemeral and reply.text.startswith("Context for slack:T1:C1")
    (chart,) = reply.attachments
    layers = preview.prompt.breakdown.as_dict()
    assert chart.filename == "prompt-layers.png"
    assert chart.alt_text.startswith(
        f"The prompt for this channel by layer, against its budget: "
        f"{sum(layers.values()):,} of {preview.prompt.budget:,} tokens"
    )
    assert f"system {layers['system']:,}, pins 0," in chart.alt_text
    colours = [LAYER_COLOURS[name] for name in layers] + [UNUSED_COLOUR]
    widths = dict(zip([*layers, "unused"], widths_in_busiest_row(chart.data, colours), strict=True))
    assert widths["system"] > 0 and widths["recent"] > 0 and widths["pins"] == 0
    assert widths["unused"] > widths["system"]


async def test_anything_but_chart_is_refused_in_one_line() -> None:
    expected = {
        "usage": "Usage: /usage, or /usage chart for this channel's last 30 days as a chart.",
        "stats": "Usage: /stats, or /stats chart to add the prompt's layers as a bar.",
    }
    async with running_core(unit_config()) as core:
        for name, text in expected.items():
            reply = await run_command(core.engine, CommandCall(GENERAL, name, "pie", "U1", "Ana"))
            assert reply.kind is ReplyKind.ERROR and reply.attachments == ()
            assert reply.text == text


def test_a_chart_is_answered_for_everyone_the_rest_for_the_caller() -> None:
    specs = {spec.name: spec for spec in COMMANDS}
    for name in ("usage", "stats"):
        assert specs[name].ephemeral_for("")
        assert not specs[name].ephemeral_for(" Chart ")
