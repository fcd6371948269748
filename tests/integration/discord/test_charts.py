"""Charts on Discord, through discord.py's interaction code against the fake Discord:
``/usage chart`` and ``/stats chart`` are answered for everyone in the channel with a
multipart follow-up holding the PNG and its alt text as the attachment's description; where
Discord refuses the file, the text still comes, with one line saying so."""

from __future__ import annotations

import time

from bot.charts.draw import LAYERS_SIZE, TOKENS_COLOUR, USAGE_SIZE
from bot.core.models import Conversation
from bot.core.ports.spend import ModelCall
from bot.wiring import App
from tests.integration.discord.test_commands import DEFERRED_WITH_THINKING, flags
from tests.support.discord_bot import ANA, BO, GENERAL, GUILD, RELEASE_THREAD, StartBot
from tests.support.fake_discord import FakeDiscord
from tests.support.pictures import bars, size

CHANNEL = Conversation("discord", str(GUILD), str(GENERAL))


async def _spent(app: App, tokens: int, cost: float) -> None:
    call = ModelCall(time.time(), CHANNEL, str(ANA.id), "gpt-4o-mini", "chat", tokens, 0, 0, cost)
    await app.store.record_call(call=call)


async def test_usage_chart_follows_up_with_the_png_and_its_description(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with start_bot() as (app, _):
        await _spent(app, 12_000, 0.25)
        await fake.command(ANA, "usage", {"option": "chart"}, channel_id=GENERAL, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 1)
    assert [(c["type"], flags(c)) for c in fake.callbacks] == [(DEFERRED_WITH_THINKING, 0)]
    (answer,) = fake.followups
    assert flags(answer) == 0  # for everyone in the channel
    content = answer["content"]
    assert content.startswith("Tokens and cost per day for this channel (and its threads), ")
    assert " (UTC): total 12k tokens, $0.25; busiest day " in content
    assert content.endswith(" with 12k tokens, $0.25; calls on 1 of 30 days.")
    ((name, png),) = answer["files"]
    (attachment,) = answer["attachments"]
    assert name == attachment["filename"] == "usage.png"
    assert attachment["description"] == content
    assert size(png) == USAGE_SIZE
    (today,) = bars(png, TOKENS_COLOUR)
    assert today.last > 0.9 * USAGE_SIZE[0]


async def test_stats_chart_in_a_thread_attaches_the_layers_bar(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    async with start_bot():
        await fake.command(
            BO, "stats", {"option": "chart"}, channel_id=RELEASE_THREAD, guild_id=GUILD
        )
        await fake.until(lambda: len(fake.followups) == 1)
    (answer,) = fake.followups
    assert answer["content"].startswith(f"Context for discord:{GUILD}:{GENERAL}:{RELEASE_THREAD}")
    ((name, png),) = answer["files"]
    assert name == "prompt-layers.png" and size(png) == LAYERS_SIZE
    assert answer["attachments"][0]["description"].startswith(
        "The prompt for this thread by layer, against its budget: "
    )


async def test_a_refused_file_still_answers_with_the_text_and_a_line_saying_so(
    start_bot: StartBot, discord_fake: FakeDiscord
) -> None:
    fake = discord_fake
    fake.refuse_files = True
    async with start_bot():
        await fake.command(ANA, "usage", {"option": "chart"}, channel_id=GENERAL, guild_id=GUILD)
        await fake.until(lambda: len(fake.followups) == 1)
    (answer,) = fake.followups
    assert "files" not in answer
    text, note = answer["content"].rsplit("\n", 1)
    assert text.endswith(": no model calls in these 30 days.")
    assert note == "(usage.png could not be posted here: Discord said Missing Permissions.)"
