"""The chat platforms, by name: each one's config section, how its :class:`Platform` is built
from the wiring's :class:`App`, and how ``bot doctor`` probes it.

``bot run`` and ``bot doctor`` iterate this table rather than naming platforms. An adapter is
imported only when its platform is enabled, by the functions of its entry: the table itself
imports no platform library. A section's model lives in :mod:`bot.config.platforms`, where the
config (which the core imports) reads it without importing the adapter.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from bot.config import Config, DiscordConfig, PlatformSection, SlackConfig

if TYPE_CHECKING:
    from bot.core.ports.platform import Platform
    from bot.wiring import App

S = TypeVar("S", bound=PlatformSection)

Probe = tuple[bool, str]
"""``bot doctor``'s verdict on one platform: ok, and one line saying why."""


@dataclass(frozen=True)
class PlatformEntry(Generic[S]):
    name: str
    """The platform's name, which is also its config section's."""
    settings: type[S]
    build: Callable[[App, S], Platform]
    probe: Callable[[S], Awaitable[Probe]]
    """Whether the platform takes the bot's credentials, without connecting for events."""

    def section(self, config: Config) -> S:
        """This platform's settings in ``config``."""
        settings = config.platforms().get(self.name)
        if not isinstance(settings, self.settings):
            raise LookupError(f"the config has no {self.settings.__name__} {self.name!r} section")
        return settings

    async def diagnose(self, settings: S) -> Probe:
        """The probe, or what the environment lacks for it."""
        missing = settings.missing_secrets()
        return (False, missing) if missing else await self.probe(settings)


_ENTRIES: dict[str, PlatformEntry[Any]] = {}


def register(entry: PlatformEntry[Any]) -> None:
    """Add a platform; its name must be new."""
    if entry.name in _ENTRIES:
        raise ValueError(f"platform {entry.name!r} is registered already")
    _ENTRIES[entry.name] = entry


def unregister(name: str) -> None:
    del _ENTRIES[name]


def entries() -> list[PlatformEntry[Any]]:
    """Every registered platform, in the order registered."""
    return list(_ENTRIES.values())


def enabled(config: Config) -> list[tuple[PlatformEntry[Any], PlatformSection]]:
    """The platforms ``config`` enables, each with its settings."""
    sections = [(entry, entry.section(config)) for entry in _ENTRIES.values()]
    return [(entry, settings) for entry, settings in sections if settings.enabled]


def _slack(app: App, settings: SlackConfig) -> Platform:
    from bot.adapters.slack.platform import SlackPlatform

    return SlackPlatform(engine=app.engine, settings=settings)


async def _probe_slack(settings: SlackConfig) -> Probe:
    from bot.adapters.slack.platform import probe

    return await probe(settings)


def _discord(app: App, settings: DiscordConfig) -> Platform:
    from bot.adapters.discord.platform import DiscordPlatform

    return DiscordPlatform(engine=app.engine, settings=settings)


async def _probe_discord(settings: DiscordConfig) -> Probe:
    from bot.adapters.discord.diagnose import diagnose

    return await diagnose(settings)


register(PlatformEntry("slack", SlackConfig, build=_slack, probe=_probe_slack))
register(PlatformEntry("discord", DiscordConfig, build=_discord, probe=_probe_discord))
