"""The settings in force in one conversation, and where each comes from.

The config gives the defaults (a platform's section the defaults of answering and recording
there); ``/settings`` stores values per channel or thread (:mod:`.keys`). A thread takes its
channel's values where it has none of its own; a DM is a channel of its own. Read from the
store at the start of every turn and command, so a change takes effect on the next message in
every process sharing the store.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bot.config import Config
from bot.core.models import Conversation
from bot.core.ports.settings import SettingsStore
from bot.core.settings import keys
from bot.core.settings.values import Answering, Recording, Settings

log = logging.getLogger(__name__)
CONFIG = "config"
CHANNEL = "this channel"
THREAD = "this thread"
PARENT = "the channel (thread's parent)"


@dataclass(frozen=True)
class Resolved:
    """A conversation's settings, with where each ``/settings`` key's value comes from."""

    settings: Settings
    origins: Mapping[str, str]
    """Key name: :data:`CONFIG`, :data:`CHANNEL`, :data:`THREAD` or :data:`PARENT`."""
    own: Mapping[str, str]
    """The values stored for the conversation itself (what ``/settings reset`` clears)."""
    refused: Mapping[str, Refused] = field(default_factory=dict)
    """Key name: a stored value the config no longer allows (a model taken out of
    ``llm.allowed_models``, say), not in force: the value below it is."""


@dataclass(frozen=True)
class Refused:
    value: str
    origin: str
    """Where it is stored: :data:`CHANNEL`, :data:`THREAD` or :data:`PARENT`."""
    reason: str
    """Why it is not allowed, one line naming the key."""


class SettingsSource:
    """Decides the settings of each conversation (``store`` None: the config's alone)."""

    def __init__(self, config: Config, store: SettingsStore | None = None) -> None:
        self.config = config
        self._store = store
        self._defaults = Settings.from_config(config)
        self._platforms = config.platforms()
        self._warned: set[tuple[str, str, str]] = set()

    def defaults(self, conversation: Conversation) -> Settings:
        """The config's settings for ``conversation``: its platform section says whether the
        bot answers every message in its channel and records what is not addressed to it."""
        section = self._platforms.get(conversation.platform)
        if section is None:
            return self._defaults
        answers_all = conversation.channel in section.answers_everything_in()
        return replace(
            self._defaults,
            answer=Answering.ALL if answers_all else Answering.MENTIONS,
            record=Recording.ALL if section.records_everything() else Recording.ADDRESSED,
        )

    async def for_conversation(self, conversation: Conversation) -> Settings:
        return (await self.resolve(conversation)).settings

    async def preview(self, conversation: Conversation, own: Mapping[str, str]) -> Settings:
        """The settings ``conversation`` would have with ``own`` as its own values."""
        return (await self.resolve(conversation, own=own)).settings

    async def resolve(
        self, conversation: Conversation, *, own: Mapping[str, str] | None = None
    ) -> Resolved:
        """``own``: instead of the values stored for the conversation itself."""
        defaults = self.defaults(conversation)
        channel, own_key = conversation.channel_key, conversation.key
        scopes = list(dict.fromkeys((channel, own_key)))
        stored = {} if self._store is None else await self._store.settings_of(scopes=scopes)
        inherited = stored.get(channel, {}) if own_key != channel else {}
        own = stored.get(own_key, {}) if own is None else own
        here = THREAD if own_key != channel else CHANNEL
        refused: dict[str, Refused] = {}
        valid_inherited = self._allowed(channel, inherited, PARENT, refused)
        valid_own = self._allowed(own_key, own, here, refused)
        values = {**valid_inherited, **valid_own}
        origins = {
            name: here if name in valid_own else PARENT if name in valid_inherited else CONFIG
            for name in keys.BY_NAME
        }
        settings = keys.apply(defaults, values, self.config)
        # A parent's value the thread overrides anyway is not worth telling.
        refused = {name: r for name, r in refused.items() if name not in valid_own}
        return Resolved(settings, origins, dict(own), refused)

    def _allowed(
        self, scope: str, values: Mapping[str, str], origin: str, refused: dict[str, Refused]
    ) -> dict[str, str]:
        """The stored values the config still allows; each other one goes into ``refused``,
        and is logged once a process (the config changed since it was set)."""
        allowed: dict[str, str] = {}
        for name, value in values.items():
            key = keys.BY_NAME.get(name)
            if key is None:
                continue
            try:
                allowed[name] = key.parse(value, self.config)
            except keys.BadValue as exc:
                refused[name] = Refused(value, origin, str(exc).removeprefix(f"{name}: "))
                if (scope, name, value) not in self._warned:
                    self._warned.add((scope, name, value))
                    log.warning(
                        "%s: %s %s, set there, is not in force: the config no longer allows "
                        "it (%s); /settings reset %s clears it",
                        scope,
                        name,
                        value,
                        exc,
                        name,
                    )
        return allowed
