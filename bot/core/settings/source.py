"""The settings in force in one conversation, and where each comes from.

The config gives the defaults (a platform's section the defaults of answering and recording
there); ``/settings`` stores values per channel or thread (:mod:`.keys`). A thread takes its
channel's values where it has none of its own; a DM is a channel of its own. Read from the
store at the start of every turn and command, so a change takes effect on the next message in
every process sharing the store.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from bot.config import Config
from bot.core.models import Conversation
from bot.core.ports.settings import SettingsStore
from bot.core.settings import keys
from bot.core.settings.values import Answering, Recording, Settings

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


class SettingsSource:
    """Decides the settings of each conversation (``store`` None: the config's alone)."""

    def __init__(self, config: Config, store: SettingsStore | None = None) -> None:
        self.config = config
        self._store = store
        self._defaults = Settings.from_config(config)
        self._platforms = config.platforms()

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
        values = {**inherited, **own}
        origins = {
            name: (
                (THREAD if own_key != channel else CHANNEL)
                if name in own
                else PARENT
                if name in inherited
                else CONFIG
            )
            for name in keys.BY_NAME
        }
        return Resolved(keys.apply(defaults, values, self.config), origins, dict(own))
