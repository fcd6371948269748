"""The platform registry: a platform added as one entry (and its config section) is built by
``bot run`` and probed by ``bot doctor`` without a change to either."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from bot import adapters
from bot.adapters import PlatformEntry
from bot.config import Config, PlatformSection
from bot.core.ports.platform import Platform
from bot.ops.doctor import run_checks
from bot.run import enabled_platforms
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory


class EchoSettings(PlatformSection):
    room: str = "lobby"
    token: str | None = None
    secret_variables: ClassVar = {"token": "ECHO_TOKEN"}

    def missing_secrets(self) -> str | None:
        return None if self.token else "echo: enabled, but ECHO_TOKEN is not set"


class EchoConfig(Config):
    """The bot's config with the third platform's section, as its one field in Config."""

    echo: EchoSettings = EchoSettings()


class EchoPlatform:
    def __init__(self, app: App, settings: EchoSettings) -> None:
        self.app, self.settings = app, settings
        self.connected = False

    @property
    def name(self) -> str:
        return "echo"

    async def start(self) -> None:
        self.connected = True

    async def stop(self) -> None:
        self.connected = False


def build(app: App, settings: EchoSettings) -> Platform:
    return EchoPlatform(app, settings)


async def probe(settings: EchoSettings) -> tuple[bool, str]:
    return True, f"echo: signed in to {settings.room}"


@pytest.fixture
def echo_registered() -> Iterator[None]:
    adapters.register(PlatformEntry("echo", EchoSettings, build=build, probe=probe))
    try:
        yield
    finally:
        adapters.unregister("echo")


def echo_config(make_config: ConfigFactory, **echo: object) -> EchoConfig:
    return EchoConfig.model_validate({**make_config().model_dump(), "echo": echo})


async def test_a_registered_platform_is_run_and_probed(
    make_config: ConfigFactory, echo_registered: None
) -> None:
    config = echo_config(make_config, enabled=True, room="hall", token="t")
    async with open_app(config) as app:
        (platform,) = enabled_platforms(app)
        assert isinstance(platform, EchoPlatform)
        assert platform.app is app and platform.settings is config.echo
        lines: list[str] = []
        assert await run_checks(app, Path("config.yaml"), lambda c: lines.append(c.line()))
        assert lines[-1] == "ok   platforms: echo: signed in to hall"


async def test_its_missing_secret_fails_the_doctor_without_probing(
    make_config: ConfigFactory, echo_registered: None
) -> None:
    async with open_app(echo_config(make_config, enabled=True)) as app:
        lines: list[str] = []
        assert not await run_checks(app, Path("config.yaml"), lambda c: lines.append(c.line()))
        assert lines[-1] == "FAIL platforms: echo: enabled, but ECHO_TOKEN is not set"


async def test_disabled_it_is_neither_run_nor_probed(
    make_config: ConfigFactory, echo_registered: None
) -> None:
    async with open_app(echo_config(make_config, room="hall")) as app:
        assert enabled_platforms(app) == []
        lines: list[str] = []
        await run_checks(app, Path("config.yaml"), lambda c: lines.append(c.line()))
        assert lines[-1].startswith("ok   platforms: none enabled")


def test_a_name_is_registered_once(echo_registered: None) -> None:
    with pytest.raises(ValueError, match="'echo' is registered already"):
        adapters.register(PlatformEntry("echo", EchoSettings, build=build, probe=probe))


def test_an_entry_without_its_config_section_is_named(
    make_config: ConfigFactory, echo_registered: None
) -> None:
    with pytest.raises(LookupError, match="no EchoSettings 'echo' section"):
        adapters.enabled(make_config())
