"""The ``discord`` config section: keys in the file, the token only from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import ConfigError, load_config, require_platform_tokens
from tests.support.paths import ROOT

HEAD = "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD + text, encoding="utf-8")
    return path


def test_the_reference_config_keeps_discord_off() -> None:
    config = load_config(ROOT / "config.yaml", env={})
    assert not config.discord.enabled
    assert config.discord.record == "all"


def test_keys_are_read_and_the_token_comes_from_the_environment(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "discord:\n  enabled: true\n  record: addressed\n  answer_channels: [123456789012345678]\n"
        "  admin_user_ids: [42]\n  dev_guild_id: 99\n",
    )
    config = load_config(path, env={"DISCORD_TOKEN": "MTIz.secret-token"})
    discord = config.discord
    assert discord.enabled and discord.record == "addressed"
    assert discord.answer_channels == (123456789012345678,)
    assert discord.admin_user_ids == (42,) and discord.dev_guild_id == 99
    assert discord.token == "MTIz.secret-token"
    assert "secret-token" not in repr(config)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("discord: {enabled: true, token: abc}\n", "discord.token: secrets are read from the"),
        ("discord: {record: some}\n", "discord.record: Input should be 'all' or 'addressed'"),
        ("discord: {answer_channel: [1]}\n", "discord.answer_channel: unknown key"),
    ],
)
def test_bad_discord_settings_fail_with_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env={})
    assert message in str(caught.value)


def test_a_missing_token_is_named_when_connecting_not_when_loading(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "discord: {enabled: true}\n"), env={})
    with pytest.raises(ConfigError, match="discord: enabled, but DISCORD_TOKEN is not set"):
        require_platform_tokens(config)


def test_sharding_is_off_unless_configured(tmp_path: Path) -> None:
    discord = load_config(write(tmp_path, "discord: {enabled: true}\n"), env={}).discord
    assert (discord.shard_count, discord.shard_ids, discord.register_commands) == (None, None, True)
    text = "discord: {shard_count: 4, shard_ids: [2, 3], register_commands: false}\n"
    discord = load_config(write(tmp_path, text), env={}).discord
    assert (discord.shard_count, discord.shard_ids, discord.register_commands) == (4, (2, 3), False)
    discord = load_config(write(tmp_path, "discord: {shard_count: auto}\n"), env={}).discord
    assert discord.shard_count == "auto" and discord.shard_ids is None


@pytest.mark.parametrize(
    ("sharding", "message"),
    [
        ("shard_ids: [0]", "discord.shard_ids: needs discord.shard_count, the number of shards"),
        ("shard_count: 2, shard_ids: [2]", "discord.shard_ids: 2 is not a shard of discord."),
        ("shard_count: 2, shard_ids: [-1]", "discord.shard_ids: -1 is not a shard of discord."),
        ("shard_count: 3, shard_ids: [1, 1]", "discord.shard_ids: 1 is listed twice"),
        ("shard_count: 2, shard_ids: []", "discord.shard_ids: lists no shard"),
        ("shard_count: auto, shard_ids: [0]", "discord.shard_ids: needs a number in discord.sh"),
        ("shard_count: 0", "discord.shard_count: Input should be a whole number of shards (1 or"),
        ("shard_count: many", "discord.shard_count: Input should be a whole number of shards"),
        ("register_commands: maybe", "discord.register_commands: Input should be true or false"),
    ],
)
def test_a_bad_sharding_combination_fails_with_one_line_naming_the_key(
    tmp_path: Path, sharding: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, f"discord: {{enabled: true, {sharding}}}\n"), env={})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
