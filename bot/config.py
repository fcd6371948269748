"""Configuration: read once from YAML and the environment into frozen objects.

A bad file fails fast with one line per problem naming the dotted key at fault, e.g.
``memory.max_context_tokens: Input should be greater than 0`` or
``lm: unknown key (did you mean llm?)``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from bot.textfile import NotUtf8, read_text

DEFAULT_CONFIG_PATH = Path("config.yaml")

_SECRET_KEYS = {
    "api_key",
    "summary_api_key",
    "token",
    "bot_token",
    "app_token",
    "signing_secret",
}


class ConfigError(Exception):
    """The configuration is unusable: one line per problem, each naming the key."""

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class Strategy(StrEnum):
    FULL = "full"
    WINDOW = "window"
    SUMMARY = "summary"
    HYBRID = "hybrid"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LLMConfig(_Section):
    base_url: str = "https://api.openai.com/v1"
    chat_model: str = Field(min_length=1)
    summary_model: str = Field(min_length=1)
    summary_base_url: str | None = None
    timeout_seconds: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    reply_deadline_seconds: float = Field(default=90.0, gt=0)
    """The most one answer may take, all its retries and Retry-After waits included."""
    max_reply_tokens: int = Field(default=1024, gt=0)
    max_reply_chars: int = Field(default=8000, ge=500)
    """The most of a reply posted as messages; a longer one's whole text is attached as a
    file (servers may ignore max_reply_tokens)."""
    summary_max_tokens: int = Field(default=800, gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    embedding_model: str | None = Field(default=None, min_length=1)
    """The endpoint's embeddings model, for memory.recall_embeddings."""
    # Filled from the environment only, never from the file.
    api_key: str | None = Field(default=None, exclude=True, repr=False)
    summary_api_key: str | None = Field(default=None, exclude=True, repr=False)


class MemoryConfig(_Section):
    strategy: Strategy = Strategy.HYBRID
    max_context_tokens: int = Field(default=8000, ge=256)
    summary_threshold: float = Field(default=0.8, gt=0, le=1)
    summary_target: float = Field(default=0.5, gt=0, lt=1)
    window_turns: int = Field(default=20, ge=1)
    keep_recent_turns: int = Field(default=2, ge=1)
    summary_rebuild_every: int = Field(default=5, ge=0)
    summary_max_input_tokens: int = Field(default=12000, ge=1000)
    summary_retry_seconds: float = Field(default=60.0, ge=0)
    recall_tokens: int = Field(default=1000, ge=0)
    """The most tokens of earlier messages found by search per prompt (0: no recall)."""
    recall_messages: int = Field(default=8, ge=1, le=50)
    recall_embeddings: bool = False
    recall_vector_limit: int = Field(default=2000, ge=1, le=100_000)
    recall_min_similarity: float = Field(default=0.3, ge=-1, le=1)

    @model_validator(mode="before")
    @classmethod
    def _recall_default_fits_the_budget(cls, data: Any) -> Any:
        """Unset, recall_tokens is 1,000 or an eighth of a smaller budget, so a small budget
        never needs recall_tokens spelled out."""
        if isinstance(data, dict) and "recall_tokens" not in data:
            budget = data.get("max_context_tokens", 8000)
            if isinstance(budget, int) and not isinstance(budget, bool):
                return {**data, "recall_tokens": min(1000, max(budget, 0) // 8)}
        return data

    profile_tokens: int = Field(default=300, ge=0)
    """The most a speaker's profile may take in a prompt (and at most a tenth of the budget);
    0 leaves profiles out of prompts."""

    @model_validator(mode="after")
    def _target_below_threshold(self) -> MemoryConfig:
        if self.summary_target >= self.summary_threshold:
            raise ValueError("summary_target must be below summary_threshold")
        if self.recall_tokens > self.max_context_tokens // 2:
            raise ValueError(
                f"recall_tokens must be at most half of max_context_tokens "
                f"({self.max_context_tokens // 2}); 0 turns recall off"
            )
        return self


class StorageConfig(_Section):
    path: str = "data/bot.sqlite3"
    busy_timeout_ms: int = Field(default=5000, ge=0)
    synchronous: Literal["full", "normal"] = "full"
    """full: each commit reaches the disk before it is acknowledged; normal: faster, but a
    power loss can drop the last commits (WAL)."""


class LoggingConfig(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Any case: ``debug`` is ``DEBUG``."""
    format: Literal["text", "json"] = "text"
    """text: one readable line per event; json: one JSON object per line."""
    slack_sdk_debug: bool = False
    """At DEBUG, also slack_sdk's own debug lines (request URLs, message texts); off: kept at
    INFO and above whatever the level."""

    @field_validator("level", mode="before")
    @classmethod
    def _any_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class HttpConfig(_Section):
    """The optional health and metrics endpoint (``/healthz``, ``/metrics``)."""

    host: str = "127.0.0.1"
    """Only this machine by default: the numbers are for operators, not the internet."""
    port: int | None = Field(default=None, ge=0, le=65535)
    """None: no endpoint; 0: any free port (tests)."""


class CatchUpConfig(_Section):
    """On start, what was written while the bot was stopped is fetched and stored, unanswered."""

    hours: float = Field(default=24, ge=0)
    """Conversations with a message stored in the last this many hours are caught up; 0: off."""
    max_messages: int = Field(default=200, ge=1)
    """At most this many messages per conversation (the most recent)."""


class SlackMode(StrEnum):
    SOCKET = "socket"
    HTTP = "http"


class SlackRecord(StrEnum):
    ALL = "all"
    ADDRESSED = "addressed"


class SlackConfig(_Section):
    enabled: bool = False
    mode: SlackMode = SlackMode.SOCKET
    host: str = "0.0.0.0"  # HTTP mode: where Slack (or the load balancer) reaches the bot
    port: int = Field(default=3000, ge=0, le=65535)
    api_base_url: str | None = None
    record: SlackRecord = SlackRecord.ALL
    answer_channels: tuple[str, ...] = ()
    """Channel ids where the bot answers every message, not only mentions."""
    admin_user_ids: tuple[str, ...] = ()
    """User ids who may run admin commands (/reset)."""
    # Filled from the environment only, never from the file.
    bot_token: str | None = Field(default=None, exclude=True, repr=False)
    app_token: str | None = Field(default=None, exclude=True, repr=False)
    signing_secret: str | None = Field(default=None, exclude=True, repr=False)

    def missing_secrets(self) -> str | None:
        """What connecting needs and the environment lacks, in one line; None when ready."""
        missing = [] if self.bot_token else ["SLACK_BOT_TOKEN"]
        if self.mode is SlackMode.SOCKET and not self.app_token:
            missing.append("SLACK_APP_TOKEN")
        if self.mode is SlackMode.HTTP and not self.signing_secret:
            missing.append("SLACK_SIGNING_SECRET")
        if not missing:
            return None
        return f"slack: {self.mode.value} mode needs {' and '.join(missing)} in the environment"


class DiscordConfig(_Section):
    enabled: bool = False
    record: Literal["all", "addressed"] = "all"
    """all: remember every message the bot can see; addressed: only what is addressed to it."""
    answer_channels: tuple[int, ...] = ()
    """Channel ids where the bot answers every message, not only mentions and replies."""
    admin_user_ids: tuple[int, ...] = ()
    """Users who may run admin commands (/reset) without the Manage Messages permission."""
    dev_guild_id: int | None = None
    """Sync slash commands to this one server (instantly) instead of globally."""
    api_base_url: str | None = Field(default=None, pattern=r"^https?://")
    """Discord's REST API (a proxy, or a local test server); None: discord.py's default."""
    gateway_url: str | None = Field(default=None, pattern=r"^wss?://")
    """Discord's gateway websocket; None: discord.py's default."""
    # Filled from the environment (DISCORD_TOKEN) only, never from the file.
    token: str | None = Field(default=None, exclude=True, repr=False)

    def missing_secrets(self) -> str | None:
        """What connecting needs and the environment lacks, in one line; None when ready."""
        return (
            None
            if self.token
            else "discord: enabled, but DISCORD_TOKEN is not set in the environment"
        )


class Config(_Section):
    system_prompt: str = Field(min_length=1)
    llm: LLMConfig
    memory: MemoryConfig = MemoryConfig()
    storage: StorageConfig = StorageConfig()
    logging: LoggingConfig = LoggingConfig()
    http: HttpConfig = HttpConfig()
    catch_up: CatchUpConfig = CatchUpConfig()
    slack: SlackConfig = SlackConfig()
    discord: DiscordConfig = DiscordConfig()

    @model_validator(mode="after")
    def _embedding_model_for_recall(self) -> Config:
        if self.memory.recall_embeddings and not self.llm.embedding_model:
            raise ValueError("memory.recall_embeddings needs llm.embedding_model")
        return self

    @property
    def summary_base_url(self) -> str:
        return self.llm.summary_base_url or self.llm.base_url


def require_platform_tokens(config: Config) -> None:
    """``bot run``: every enabled platform has its secrets. Only connecting needs them, so
    the operator commands (backup, export, stats...) run without them."""
    for platform in (config.slack, config.discord):
        problem = platform.missing_secrets() if platform.enabled else None
        if problem:
            raise ConfigError(problem)


def config_path(cli_value: str | None, env: Mapping[str, str]) -> Path:
    """``--config`` wins, then ``BOT_CONFIG``, then ``./config.yaml``."""
    if cli_value:
        return Path(cli_value)
    if env.get("BOT_CONFIG"):
        return Path(env["BOT_CONFIG"])
    return DEFAULT_CONFIG_PATH


def config_files(path: Path) -> list[Path]:
    """The files read, each merged over the one before: ``path`` may list several, separated
    by ``:`` (the image's reference, then its own settings); then the untracked
    ``config.local.yaml`` beside the first (``<name>.local.yaml`` beside ``<name>.yaml``),
    when there is one: the user's settings, which ``git pull`` never touches."""
    files = [Path(part) for part in str(path).split(os.pathsep) if part] or [DEFAULT_CONFIG_PATH]
    local = files[0].with_name(f"{files[0].stem}.local{files[0].suffix}")
    return [*files, local] if local.exists() and local not in files else files


def load_config(path: Path, env: Mapping[str, str] | None = None) -> Config:
    """Read :func:`config_files`, merge them, validate and complete the config with secrets
    from ``env``. An error that a file merged over the first brings in names that file."""
    env = os.environ if env is None else env
    first, *overlays = config_files(path)
    raw = read_config_file(first)
    _reject_secrets(raw, prefix="")
    layers = [raw]
    for overlay in overlays:
        layer = read_config_file(overlay)
        try:
            _reject_secrets(layer, prefix="")
        except ConfigError as exc:
            raise ConfigError(*(f"{overlay}: {problem}" for problem in exc.problems)) from None
        layers.append(layer)
        raw = _merged(raw, layer)
    try:
        config = parse_config(raw, env)
    except ConfigError as exc:
        culprit = _bringer(layers, env, str(exc))
        if culprit == 0:
            raise
        culprit_file = overlays[culprit - 1]
        raise ConfigError(*(f"{culprit_file}: {problem}" for problem in exc.problems)) from None
    return _relative_to(config, first.absolute().parent)


def _bringer(layers: list[dict[str, Any]], env: Mapping[str, str], error: str) -> int:
    """The index of the layer that brought ``error``: the last one setting the dotted key it
    names, else the first whose merge gives it."""
    key = error.partition(":")[0].split(".")
    for index in reversed(range(len(layers))):
        if _sets(layers[index], key):
            return index
    raw: dict[str, Any] = {}
    for index, layer in enumerate(layers):
        raw = _merged(raw, layer)
        try:
            parse_config(raw, env)
        except ConfigError as exc:
            if str(exc) == error:
                return index
    return len(layers) - 1


def _sets(layer: Any, key: list[str]) -> bool:
    for part in key:
        if isinstance(layer, dict) and part in layer:
            layer = layer[part]
        elif isinstance(layer, list) and part.isdigit() and int(part) < len(layer):
            layer = layer[int(part)]
        else:
            return False
    return True


def _merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` merged into ``base``: mappings key by key, anything else replaced."""
    merged = dict(base)
    for key, value in over.items():
        below = merged.get(key)
        if isinstance(value, dict) and isinstance(below, dict):
            merged[key] = _merged(below, value)
        else:
            merged[key] = value
    return merged


def read_config_file(path: Path) -> dict[str, Any]:
    """One config file's top-level mapping (empty for an empty file)."""
    try:
        text = read_text(path)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"config file unreadable: {path}: {exc.strerror}") from None
    except NotUtf8 as exc:
        raise ConfigError(str(exc)) from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML{_yaml_where(exc, text)}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys")
    return raw


def _relative_to(config: Config, folder: Path) -> Config:
    """A relative ``storage.path`` is taken from ``folder`` (the config file's), so that the bot
    uses the same database whichever folder it is started from."""
    path = Path(config.storage.path).expanduser()
    if not path.is_absolute():
        path = folder / path
    storage = config.storage.model_copy(update={"path": str(path)})
    return config.model_copy(update={"storage": storage})


def _yaml_where(exc: yaml.YAMLError, text: str) -> str:
    """`` at line 3, column 7: <what>: '<the line>'``, from the parser's marks; the line is
    quoted as Python would, so a tab or a stray quote shows."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return ""
    mark = exc.problem_mark
    what = exc.problem or "unreadable"
    lines = text.splitlines()
    # Past the end (an unclosed bracket or quote), the place it was opened says more.
    if (mark.line >= len(lines) or not lines[mark.line].strip()) and exc.context_mark:
        what = f"{exc.context} started here, {what}"
        mark = exc.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}: {what}"
    if mark.line < len(lines) and lines[mark.line].strip():
        where += f": {_short(lines[mark.line])}"
    return where


def _short(value: object, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


_SECTIONS = frozenset(
    name
    for name, field in Config.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
)


def parse_config(raw: Mapping[str, Any], env: Mapping[str, str]) -> Config:
    # An empty section (every key commented out) is all defaults.
    data = {k: v for k, v in raw.items() if not (k in _SECTIONS and v is None)}
    llm = dict(data.get("llm") or {}) if isinstance(data.get("llm", {}), dict) else data["llm"]
    if isinstance(llm, dict):
        if env.get("OPENAI_BASE_URL"):
            llm["base_url"] = env["OPENAI_BASE_URL"]
        llm["api_key"] = env.get("OPENAI_API_KEY") or None
        llm["summary_api_key"] = env.get("SUMMARY_API_KEY") or None
    data["llm"] = llm
    slack = data.get("slack") or {}
    if isinstance(slack, dict):
        data["slack"] = {
            **slack,
            "bot_token": env.get("SLACK_BOT_TOKEN") or None,
            "app_token": env.get("SLACK_APP_TOKEN") or None,
            "signing_secret": env.get("SLACK_SIGNING_SECRET") or None,
        }
    discord = data.get("discord") or {}
    if isinstance(discord, dict):
        data["discord"] = {**discord, "token": env.get("DISCORD_TOKEN") or None}
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(*describe_errors(exc.errors(), raw)) from None


Loc = tuple[int | str, ...]


def describe_errors(errors: Iterable[ErrorDetails], raw: Mapping[str, Any]) -> list[str]:
    """One line per problem. A misspelt key is named with the closest known one; what its
    absence then breaks (``lm:`` leaves ``llm.chat_model`` unset) is the same problem."""
    errors = list(errors)
    suggested: dict[Loc, Loc] = {}
    for err in errors:
        if err["type"] == "extra_forbidden":
            near = _closest_key(err["loc"])
            if near is not None:
                suggested[err["loc"]] = near
    covered = [near for near in suggested.values() if not _present(raw, near)]
    order = {str(key): index for index, key in enumerate(raw)}
    errors.sort(key=lambda err: order.get(str(err["loc"][0]), len(order)) if err["loc"] else -1)
    lines: list[str] = []
    for err in errors:
        loc = err["loc"]
        if loc not in suggested and any(loc[: len(c)] == c for c in covered):
            continue
        line = f"{_dotted(loc) or 'config'}: {_plain(err)}"
        if loc in suggested:
            line += f" (did you mean {_dotted(suggested[loc])}?)"
        if line not in lines:
            lines.append(line)
    return lines


def _dotted(loc: Loc) -> str:
    """``("discord", "answer_channels", 0)`` → ``discord.answer_channels[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _closest_key(loc: Loc) -> Loc | None:
    """The known key nearest to an unknown one at the same depth, if one is close."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        if field is None or not (
            isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        ):
            return None
        model = field.annotation
    known = [name for name, field in model.model_fields.items() if not field.exclude]
    match = difflib.get_close_matches(str(loc[-1]).lower(), known, n=1, cutoff=0.6)
    return (*loc[:-1], match[0]) if match else None


def _present(raw: Mapping[str, Any], loc: Loc) -> bool:
    node: Any = raw
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


_PLAIN_WORDS = {
    "tuple_type": "Input should be a list, such as [a, b]",
    "list_type": "Input should be a list, such as [a, b]",
    "int_parsing": "Input should be a whole number",
    "int_type": "Input should be a whole number",
    "int_from_float": "Input should be a whole number",
    "float_parsing": "Input should be a number",
    "float_type": "Input should be a number",
    "bool_parsing": "Input should be true or false",
    "bool_type": "Input should be true or false",
    "string_type": "Input should be text",
    "model_type": "Input should be a section of keys (key: value lines, indented below it)",
    "model_attributes_type": "Input should be a section of keys (key: value lines, indented)",
}
"""pydantic's messages that read badly in a YAML file ("a valid tuple", "a valid dictionary
or instance of LLMConfig"), in plain words."""


def _plain(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "string_too_short" and (err.get("ctx") or {}).get("min_length") == 1:
        return "Input should not be empty"
    if kind in _PLAIN_WORDS:
        given = err.get("input")
        if isinstance(given, dict | list) or given is None:
            return _PLAIN_WORDS[kind] + ("" if given is not None else ", not empty")
        return f"{_PLAIN_WORDS[kind]}, not {_short(given)}"
    return err["msg"].removeprefix("Value error, ")


def _reject_secrets(raw: Mapping[str, Any], prefix: str) -> None:
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        if key in _SECRET_KEYS:
            raise ConfigError(
                f"{dotted}: secrets are read from the environment, not the config file"
            )
        if isinstance(value, dict):
            _reject_secrets(value, prefix=f"{dotted}.")
