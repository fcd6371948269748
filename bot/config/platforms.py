"""The chat platforms' config sections: keys from the file, secrets from the environment.

Only pydantic models, so that the config (which the core imports) can validate them without
importing a platform library. The platform registry (``bot.adapters``) pairs each with its
adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import ClassVar, Literal

from pydantic import Field, ValidationInfo, field_validator

from bot.config.section import Section


class PlatformSection(Section):
    """A platform's section: off unless enabled; its secrets come only from the environment."""

    enabled: bool = False
    secret_variables: ClassVar[Mapping[str, str]] = {}
    """Each secret field and the environment variable it is read from."""

    def missing_secrets(self) -> str | None:
        """What connecting needs and the environment lacks, in one line; None when ready."""
        return None

    def records_everything(self) -> bool:
        """Whether the bot keeps every message it sees, not only what is addressed to it (the
        default of a channel's ``/settings record``)."""
        return True

    def answers_everything_in(self) -> frozenset[str]:
        """Channel ids where the bot answers every message by default (``/settings answer``)."""
        return frozenset()


class SlackMode(StrEnum):
    SOCKET = "socket"
    HTTP = "http"


class SlackStreaming(StrEnum):
    AUTO = "auto"
    """Slack's streaming API for answers in threads, where the workspace takes it; updates
    of a message otherwise."""
    UPDATE = "update"
    """Always updates of a message (``chat.update``), about once a second."""


class SlackRecord(StrEnum):
    ALL = "all"
    ADDRESSED = "addressed"


MAX_SUGGESTED_PROMPTS = 4
"""Slack shows at most four suggested prompts in an assistant thread."""
DEFAULT_GREETING = (
    "Hi! I remember everything said in this conversation, so you can come back to it any"
    " time; a new chat starts with a clean slate. In a channel, mention me, and /pin a fact"
    " to keep it in every answer there."
)


class SuggestedPrompt(Section):
    """A prompt offered when an assistant thread opens: its button, and what it sends."""

    title: str = Field(min_length=1)
    message: str = Field(min_length=1)


DEFAULT_PROMPTS = (
    SuggestedPrompt(title="What can you do?", message="What can you do, and what do you remember?"),
    SuggestedPrompt(
        title="Think it through with me",
        message="Help me think a problem through: ask me what it is, then one question at a time.",
    ),
    SuggestedPrompt(
        title="Summarize a text",
        message="I will paste a text: summarize it in a few bullet points.",
    ),
)


class SlackAssistantConfig(Section):
    """Slack's assistant pane (the app's "Agents & AI Apps" feature)."""

    enabled: bool = True
    """Greet new assistant threads, title them, and show a status line while answering in
    them; false: DM threads are answered as before, with a thinking message."""
    greeting: str = DEFAULT_GREETING
    """Posted (as Markdown) when a person opens an assistant thread; empty: no greeting."""
    suggested_prompts: tuple[SuggestedPrompt, ...] = DEFAULT_PROMPTS
    """Offered under the greeting (at most four); empty: none."""

    @field_validator("suggested_prompts")
    @classmethod
    def _at_most_four(cls, prompts: tuple[SuggestedPrompt, ...]) -> tuple[SuggestedPrompt, ...]:
        if len(prompts) > MAX_SUGGESTED_PROMPTS:
            raise ValueError(
                f"lists {len(prompts)} prompts: Slack shows at most {MAX_SUGGESTED_PROMPTS}"
            )
        return prompts


class SlackConfig(PlatformSection):
    mode: SlackMode = SlackMode.SOCKET
    host: str = "0.0.0.0"  # HTTP mode: where Slack (or the load balancer) reaches the bot
    port: int = Field(default=3000, ge=0, le=65535)
    api_base_url: str | None = None
    record: SlackRecord = SlackRecord.ALL
    answer_channels: tuple[str, ...] = ()
    """Channel ids where the bot answers every message, not only mentions."""
    admin_user_ids: tuple[str, ...] = ()
    """User ids who may run admin commands (/reset, /settings changes)."""
    assistant: SlackAssistantConfig = SlackAssistantConfig()
    streaming: SlackStreaming = SlackStreaming.AUTO
    """How an answer is shown as the model writes it (when ``llm.stream``)."""
    status_reaction: str | None = Field(default=None, pattern=r"^:?[a-z0-9_+'-]+:?$")
    """An emoji's name ("eyes") put on a question while it is answered, removed once the
    answer is sent (needs the ``reactions:write`` scope); not in the assistant pane, which
    has a status line. None: no reaction."""
    bot_token: str | None = Field(default=None, exclude=True, repr=False)
    app_token: str | None = Field(default=None, exclude=True, repr=False)
    signing_secret: str | None = Field(default=None, exclude=True, repr=False)
    secret_variables: ClassVar[Mapping[str, str]] = {
        "bot_token": "SLACK_BOT_TOKEN",
        "app_token": "SLACK_APP_TOKEN",
        "signing_secret": "SLACK_SIGNING_SECRET",
    }

    @field_validator("status_reaction")
    @classmethod
    def _a_name(cls, name: str | None) -> str | None:
        """``:eyes:`` as typed in Slack is the emoji ``eyes``."""
        return None if name is None else name.strip(":")

    def records_everything(self) -> bool:
        return self.record is SlackRecord.ALL

    def answers_everything_in(self) -> frozenset[str]:
        return frozenset(self.answer_channels)

    def missing_secrets(self) -> str | None:
        missing = [] if self.bot_token else ["SLACK_BOT_TOKEN"]
        if self.mode is SlackMode.SOCKET and not self.app_token:
            missing.append("SLACK_APP_TOKEN")
        if self.mode is SlackMode.HTTP and not self.signing_secret:
            missing.append("SLACK_SIGNING_SECRET")
        if not missing:
            return None
        return f"slack: {self.mode.value} mode needs {' and '.join(missing)} in the environment"


class DiscordConfig(PlatformSection):
    record: Literal["all", "addressed"] = "all"
    """all: remember every message the bot can see; addressed: only what is addressed to it."""
    answer_channels: tuple[int, ...] = ()
    """Channel ids where the bot answers every message, not only mentions and replies."""
    admin_user_ids: tuple[int, ...] = ()
    """Users who may run admin commands (/reset, /settings changes) without the Manage
    Channels permission."""
    admin_role_ids: tuple[int, ...] = ()
    """Roles whose members may run admin commands without the Manage Channels permission."""
    dev_guild_id: int | None = None
    """Sync slash commands to this one server (instantly) instead of globally."""
    api_base_url: str | None = Field(default=None, pattern=r"^https?://")
    """Discord's REST API (a proxy, or a local test server); None: discord.py's default."""
    gateway_url: str | None = Field(default=None, pattern=r"^wss?://")
    """Discord's gateway websocket; None: discord.py's default."""
    shard_count: int | Literal["auto"] | None = None
    """The bot's shards in all, across its processes; "auto": as many as Discord recommends;
    None: one connection, unsharded."""
    shard_ids: tuple[int, ...] | None = None
    """The shards this process runs; None: every shard of ``shard_count``."""
    register_commands: bool = True
    """This process syncs the slash commands: with several processes, exactly one does."""
    status_reaction: str | None = Field(default=None, min_length=1)
    """An emoji ("👀", or a server's own as ``name:id``) put on a question while it is
    answered, removed once the answer is sent (needs Add Reactions). None: no reaction."""
    token: str | None = Field(default=None, exclude=True, repr=False)
    secret_variables: ClassVar[Mapping[str, str]] = {"token": "DISCORD_TOKEN"}

    @field_validator("shard_count", mode="before")
    @classmethod
    def _a_count_or_auto(cls, value: object) -> object:
        """One plain message rather than one per member of the union."""
        if value is None or value == "auto":
            return value
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        raise ValueError(
            f'Input should be a whole number of shards (1 or more) or "auto", not {value!r}'
        )

    @field_validator("shard_ids")
    @classmethod
    def _shards_of_the_count(
        cls, ids: tuple[int, ...] | None, info: ValidationInfo
    ) -> tuple[int, ...] | None:
        if ids is None or "shard_count" not in info.data:  # a bad count is named already
            return ids
        count = info.data["shard_count"]
        if count is None:
            raise ValueError("needs discord.shard_count, the number of shards in all")
        if count == "auto":
            raise ValueError('needs a number in discord.shard_count, not "auto"')
        if not ids:
            raise ValueError("lists no shard (leave it out to run every shard)")
        for shard in ids:
            if not 0 <= shard < count:
                raise ValueError(
                    f"{shard} is not a shard of discord.shard_count {count} "
                    f"(the ids run from 0 to {count - 1})"
                )
            if ids.count(shard) > 1:
                raise ValueError(f"{shard} is listed twice")
        return ids

    def records_everything(self) -> bool:
        return self.record == "all"

    def answers_everything_in(self) -> frozenset[str]:
        return frozenset(str(channel) for channel in self.answer_channels)

    def missing_secrets(self) -> str | None:
        return (
            None
            if self.token
            else "discord: enabled, but DISCORD_TOKEN is not set in the environment"
        )
