"""Reading the configuration: the files (merged one over another), the secrets from the
environment, and the checks ``bot run`` adds. A bad file fails fast with one line per problem
naming the dotted key at fault, e.g. ``memory.max_context_tokens: Input should be greater than
0`` or ``lm: unknown key (did you mean llm?)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from bot.config.messages import describe_errors, yaml_where
from bot.config.model import Config
from bot.config.section import ConfigError
from bot.config.textfile import NotUtf8, read_text

DEFAULT_CONFIG_PATH = Path("config.yaml")

_SECRET_KEYS = frozenset(
    {"api_key", "summary_api_key", "database_url"}.union(
        *(section.secret_variables for section in Config.platform_sections().values())
    )
)
"""Keys never read from a file, wherever they appear in it."""


def require_platform_tokens(config: Config) -> None:
    """``bot run``: every enabled platform has its secrets. Only connecting needs them, so
    the operator commands (backup, export, stats...) run without them."""
    for platform in config.platforms().values():
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
        raise ConfigError(f"{path}: not valid YAML{yaml_where(exc, text)}") from None
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


_SECTIONS = frozenset(
    name
    for name, field in Config.model_fields.items()
    if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
)


def parse_config(raw: Mapping[str, Any], env: Mapping[str, str]) -> Config:
    """The config from a file's (merged) mapping, with the secrets ``env`` holds."""
    # An empty section (every key commented out) is all defaults.
    data = {k: v for k, v in raw.items() if not (k in _SECTIONS and v is None)}
    llm = dict(data.get("llm") or {}) if isinstance(data.get("llm", {}), dict) else data["llm"]
    if isinstance(llm, dict):
        if env.get("OPENAI_BASE_URL"):
            llm["base_url"] = env["OPENAI_BASE_URL"]
        llm["api_key"] = env.get("OPENAI_API_KEY") or None
        llm["summary_api_key"] = env.get("SUMMARY_API_KEY") or None
    data["llm"] = llm
    storage = data.get("storage") or {}
    if isinstance(storage, dict) and env.get("DATABASE_URL"):
        data["storage"] = {**storage, "database_url": env["DATABASE_URL"]}
    http = data.get("http") or {}
    if isinstance(http, dict) and isinstance(http.get("page") or {}, dict):
        page = {**(http.get("page") or {}), "token": env.get("BOT_PAGE_TOKEN") or None}
        data["http"] = {**http, "page": page}
    for name, section in Config.platform_sections().items():
        settings = data.get(name) or {}
        if isinstance(settings, dict):
            secrets = {key: env.get(var) or None for key, var in section.secret_variables.items()}
            data[name] = {**settings, **secrets}
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(*describe_errors(exc.errors(), raw)) from None


def _reject_secrets(raw: Mapping[str, Any], prefix: str) -> None:
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        if key in _SECRET_KEYS:
            raise ConfigError(
                f"{dotted}: secrets are read from the environment, not the config file"
            )
        if isinstance(value, dict):
            _reject_secrets(value, prefix=f"{dotted}.")
