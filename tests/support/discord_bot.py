"""A running Discord adapter against the local fake Discord and the local model server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.adapters.discord.platform import DiscordPlatform
from bot.config import Config, parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_discord import FakeDiscord, FakeGuild, Person
from tests.support.fake_llm import FakeLLM

TOKEN = "fake.bot.token"
GUILD = 5001
GENERAL, RANDOM, RELEASE_THREAD = 6001, 6002, 6101
ARCHIVED_THREAD = 6102  # archived: not in discord.py's cache
ANA = Person(7001, "Ana", nick="Ana N")
BO = Person(7002, "Bo")
OTHER_BOT = Person(7003, "Helper", bot=True)
BOT = Person(900, "Memory Bot", bot=True)

Running = tuple[App, DiscordPlatform]
StartBot = Callable[..., AbstractAsyncContextManager[Running]]


def team_guild() -> FakeGuild:
    return FakeGuild(
        GUILD,
        "Team",
        channels={GENERAL: "general", RANDOM: "random"},
        threads={RELEASE_THREAD: (GENERAL, "release")},
        archived_threads={ARCHIVED_THREAD: (GENERAL, "last quarter")},
    )


@pytest.fixture
async def discord_fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord(guilds=[team_guild()], bot=BOT, token=TOKEN) as fake:
        with fake.pointed_at():
            yield fake


def discord_config(
    llm: FakeLLM,
    tmp_path: Path,
    memory: dict[str, Any] | None = None,
    *,
    models: dict[str, Any] | None = None,
    **settings: Any,
) -> Config:
    """``memory`` and ``models`` (the ``llm`` section) over the tests' base config."""
    data = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        discord={"enabled": True, **settings},
        memory=memory or {},
        llm=models or {},
    )
    return parse_config(data, {"DISCORD_TOKEN": TOKEN})


@pytest.fixture
def start_bot(llm: FakeLLM, tmp_path: Path, discord_fake: FakeDiscord) -> StartBot:
    @asynccontextmanager
    async def start(
        memory: dict[str, Any] | None = None,
        *,
        models: dict[str, Any] | None = None,
        **settings: Any,
    ) -> AsyncIterator[Running]:
        config = discord_config(llm, tmp_path, memory, models=models, **settings)
        async with open_app(config) as app:
            platform = DiscordPlatform(
                engine=app.engine, settings=app.config.discord, guild_ready_timeout=0.05
            )
            await platform.start()
            try:
                yield app, platform
            finally:
                await platform.stop()

    return start
