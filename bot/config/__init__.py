"""Configuration: read once from YAML and the environment into frozen objects.

``model`` and ``platforms`` hold the sections, ``load`` reads files and the environment into
them, ``messages`` words what is wrong, one line per problem naming the dotted key.
"""

from bot.config.budgets import CAP_FORMS, BudgetsConfig, Cap, parse_cap
from bot.config.load import (
    DEFAULT_CONFIG_PATH,
    config_files,
    config_path,
    load_config,
    parse_config,
    read_config_file,
    require_platform_tokens,
)
from bot.config.messages import describe_errors
from bot.config.model import (
    CatchUpConfig,
    Config,
    HttpConfig,
    LLMConfig,
    LoggingConfig,
    MemoryConfig,
    ModelPrice,
    StorageConfig,
    Strategy,
)
from bot.config.platforms import (
    DiscordConfig,
    PlatformSection,
    SlackAssistantConfig,
    SlackConfig,
    SlackMode,
    SlackRecord,
    SlackStreaming,
    SuggestedPrompt,
)
from bot.config.section import ConfigError

__all__ = [
    "CAP_FORMS",
    "DEFAULT_CONFIG_PATH",
    "BudgetsConfig",
    "Cap",
    "CatchUpConfig",
    "Config",
    "ConfigError",
    "DiscordConfig",
    "HttpConfig",
    "LLMConfig",
    "LoggingConfig",
    "MemoryConfig",
    "ModelPrice",
    "PlatformSection",
    "SlackAssistantConfig",
    "SlackConfig",
    "SlackMode",
    "SlackRecord",
    "SlackStreaming",
    "StorageConfig",
    "Strategy",
    "SuggestedPrompt",
    "config_files",
    "config_path",
    "describe_errors",
    "load_config",
    "parse_cap",
    "parse_config",
    "read_config_file",
    "require_platform_tokens",
]
