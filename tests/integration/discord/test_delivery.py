"""Replies as Discord gets them: split, balanced, rate limits survived; start-up failures."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.discord.platform import MISSING_INTENT, SHARDING_REQUIRED, DiscordPlatform
from bot.adapters.discord.render import MESSAGE_LIMIT, split_message
from bot.core.ports.platform import PlatformError
from bot.run import enabled_platforms
from bot.wiring import open_app
from tests.support.discord_bot import BO, BOT, GENERAL, GUILD, TOKEN, StartBot, discord_config
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM

FENCES = re.compile(r"^```", re.MULTILINE)


def long_answer() -> str:
    code = "\n".join(f"    total += item_{i}  # keep a running sum" for i in range(40))
    sentence = " ".join(["explain the change carefully."] * 12)
    prose = "\n\n".join(f"Step {i}: {sentence}" for i in range(8))
    return f"{prose}\n\n```python\ndef total():\n{code}\n```\n\nThat is all.\n\n{prose}"


async def test_a_long_reply_arrives_in_balanced_parts_despite_a_429(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    fake = discord_fake
    text = long_answer()
    assert len(text) > 3 * MESSAGE_LIMIT
    llm.responder = lambda body: text
    expected = split_message(text)
    async with start_bot():
        fake.rate_limit_once("POST", f"/channels/{GENERAL}/messages")
        await fake.say(
            BO, f"<@{BOT.id}> explain", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,)
        )
        wanted = [p.text for p in expected]
        await fake.until(lambda: [s.content for s in fake.shown()] == wanted)  # streamed, settled
        sent = await fake.sent_count(len(expected))
    assert fake.rate_limited == [f"POST /channels/{GENERAL}/messages"]
    assert [s.content for s in sent] == wanted
    assert "".join(p.body for p in expected) == text
    for part in sent:
        assert len(part.content) <= MESSAGE_LIMIT
        assert len(FENCES.findall(part.content)) % 2 == 0
        assert part.allowed_mentions == {"parse": []}
    assert any(s.content.startswith("```python\n") for s in sent[1:])


async def test_model_output_cannot_ping_everyone(
    start_bot: StartBot, discord_fake: FakeDiscord, llm: FakeLLM
) -> None:
    llm.responder = lambda body: "@everyone @here <@&123> look"
    async with start_bot():
        await discord_fake.say(
            BO, f"<@{BOT.id}> ping", channel_id=GENERAL, guild_id=GUILD, mentions=(BOT,)
        )
        (sent,) = await discord_fake.sent_count(1)
    assert sent.content == "@everyone @here <@&123> look"
    assert sent.allowed_mentions == {"parse": []}


async def test_a_missing_message_content_intent_says_how_to_fix_it(
    llm: FakeLLM, tmp_path: Path
) -> None:
    async with FakeDiscord(grant_message_content=False, token=TOKEN) as fake:
        with fake.pointed_at():
            async with open_app(discord_config(llm, tmp_path)) as app:
                platform = DiscordPlatform(engine=app.engine, settings=app.config.discord)
                with pytest.raises(PlatformError) as caught:
                    await platform.start()
    assert str(caught.value) == MISSING_INTENT
    assert "Message Content Intent" in MISSING_INTENT
    assert not platform.connected


async def test_a_bot_that_must_shard_is_told_which_setting_to_set(
    llm: FakeLLM, tmp_path: Path
) -> None:
    async with FakeDiscord(token=TOKEN) as fake:
        fake.sharding_required = True
        with fake.pointed_at():
            async with open_app(discord_config(llm, tmp_path)) as app:
                platform = DiscordPlatform(engine=app.engine, settings=app.config.discord)
                with pytest.raises(PlatformError) as caught:
                    await platform.start()
            async with open_app(discord_config(llm, tmp_path, shard_count=2)) as app:
                sharded = DiscordPlatform(
                    engine=app.engine, settings=app.config.discord, guild_ready_timeout=0.05
                )
                await sharded.start()
                connected = sharded.connected
                await sharded.stop()
    assert str(caught.value) == SHARDING_REQUIRED and "discord.shard_count" in SHARDING_REQUIRED
    assert connected  # with shards, the same server takes it


async def test_a_wrong_token_is_reported(llm: FakeLLM, tmp_path: Path) -> None:
    async with FakeDiscord(token="another.token") as fake:
        with fake.pointed_at():
            async with open_app(discord_config(llm, tmp_path)) as app:
                with pytest.raises(PlatformError, match="Discord rejected DISCORD_TOKEN"):
                    await DiscordPlatform(engine=app.engine, settings=app.config.discord).start()


async def test_enabled_platforms_builds_the_discord_adapter(llm: FakeLLM, tmp_path: Path) -> None:
    async with open_app(discord_config(llm, tmp_path)) as app:
        platforms: list[Any] = list(enabled_platforms(app))
        assert [p.name for p in platforms] == ["discord"]
        assert isinstance(platforms[0], DiscordPlatform)
        await platforms[0].client.close()


async def test_doctor_check_names_a_missing_intent_and_a_bad_token(
    llm: FakeLLM, tmp_path: Path
) -> None:
    from bot.adapters.discord.diagnose import diagnose

    async with FakeDiscord(grant_message_content=False, token=TOKEN) as fake:
        config = discord_config(llm, tmp_path, api_base_url=fake.api_base)
        with fake.pointed_at():  # restores what the config's api_base_url changes
            ok, detail = await diagnose(config.discord)
            assert not ok and detail.startswith("the Message Content intent is off")
            assert "turn on 'Message Content Intent'" in detail
            fake.token = "another.token"
            ok, detail = await diagnose(config.discord)
            assert not ok and detail.startswith("Discord rejected DISCORD_TOKEN")
        assert fake.command_syncs == []
