"""The config file: read once, validated, secrets only from the environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import (
    ConfigError,
    SlackAssistantConfig,
    Strategy,
    config_path,
    load_config,
    require_platform_tokens,
)
from tests.support.paths import ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_reference_config_is_valid_and_documents_the_defaults() -> None:
    config = load_config(ROOT / "config.yaml", env={})
    assert config.memory.strategy is Strategy.HYBRID
    assert config.memory.summary_threshold == 0.7
    assert config.memory.profile_tokens == 300
    assert config.llm.chat_model and config.llm.summary_model
    assert config.llm.api_key is None
    assert (config.catch_up.hours, config.catch_up.max_messages) == (24, 200)
    assert config.slack.assistant == SlackAssistantConfig()  # the file spells the defaults out


def test_environment_supplies_secrets_and_overrides_the_base_url(tmp_path: Path) -> None:
    path = write(tmp_path, "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n")
    config = load_config(
        path, env={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"}
    )
    assert config.llm.api_key == "sk-test"
    assert config.llm.base_url == "http://127.0.0.1:1/v1"
    assert "sk-test" not in repr(config)


@pytest.mark.parametrize(("memory", "recall"), [("{}", 1600), ("{max_context_tokens: 1500}", 300)])
def test_recall_by_default_takes_a_share_any_budget_has_room_for(
    tmp_path: Path, memory: str, recall: int
) -> None:
    text = f"system_prompt: hi\nllm: {{chat_model: a, summary_model: b}}\nmemory: {memory}\n"
    assert load_config(write(tmp_path, text), env={}).memory.recall_tokens == recall


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("llm: {chat_model: a, summary_model: b}\n", "system_prompt: Field required"),
        ("system_prompt: hi\nllm: {summary_model: b}\n", "llm.chat_model: Field required"),
        (
            "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"
            "memory: {max_context_tokens: 0}\n",
            "memory.max_context_tokens: Input should be greater than or equal to 256",
        ),
        (
            "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\nmemory: {strategy: all}\n",
            "memory.strategy: Input should be 'full', 'window', 'summary' or 'hybrid'",
        ),
        (
            "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\nmemroy: {}\n",
            "memroy: unknown key",
        ),
        (
            "system_prompt: hi\nllm: {chat_model: a, summary_model: b, api_key: sk-x}\n",
            "llm.api_key: secrets are read from the environment, not the config file",
        ),
        (
            "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"
            "catch_up: {max_messages: 0}\n",
            "catch_up.max_messages: Input should be greater than or equal to 1",
        ),
        ("system_prompt: hi\nllm: [unclosed\n", "not valid YAML at line 2, column 6"),
        ("- a list\n", "the top level must be a mapping"),
    ],
)
def test_a_bad_config_fails_with_one_line_naming_the_key(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), env={})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)
    assert "sk-x" not in str(caught.value)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file not found: .*nope\.yaml"):
        load_config(tmp_path / "nope.yaml", env={})


def test_config_path_precedence() -> None:
    assert config_path("a.yaml", {"BOT_CONFIG": "b.yaml"}) == Path("a.yaml")
    assert config_path(None, {"BOT_CONFIG": "b.yaml"}) == Path("b.yaml")
    assert config_path(None, {}) == Path("config.yaml")


SLACK_BASE = "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"


def test_slack_secrets_come_from_the_environment(tmp_path: Path) -> None:
    path = write(tmp_path, SLACK_BASE + "slack: {enabled: true, admin_user_ids: [U1]}\n")
    env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_APP_TOKEN": "xapp-test"}
    config = load_config(path, env=env)
    assert config.slack.enabled and config.slack.mode == "socket"
    assert (config.slack.bot_token, config.slack.app_token) == ("xoxb-test", "xapp-test")
    assert config.slack.admin_user_ids == ("U1",)
    assert "xoxb-test" not in repr(config)
    assert not load_config(ROOT / "config.yaml", env=env).slack.enabled


@pytest.mark.parametrize(
    ("slack", "env", "message"),
    [
        ("{enabled: true}", {}, "slack: socket mode needs SLACK_BOT_TOKEN and SLACK_APP_TOKEN"),
        (
            "{enabled: true, mode: http}",
            {"SLACK_BOT_TOKEN": "xoxb-1"},
            "slack: http mode needs SLACK_SIGNING_SECRET in the environment",
        ),
    ],
)
def test_missing_slack_secrets_are_named_when_connecting(
    tmp_path: Path, slack: str, env: dict[str, str], message: str
) -> None:
    config = load_config(write(tmp_path, SLACK_BASE + f"slack: {slack}\n"), env=env)
    with pytest.raises(ConfigError) as caught:
        require_platform_tokens(config)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("slack", "env", "message"),
    [
        ("{signing_secret: abc}", {}, "slack.signing_secret: secrets are read from the"),
        ("{bot_token: xoxb-1}", {}, "slack.bot_token: secrets are read from the environment"),
        ("{mode: rtm}", {}, "slack.mode: Input should be 'socket' or 'http'"),
        ("{chanels: []}", {}, "slack.chanels: unknown key"),
        (
            "{assistant: {suggested_prompts: [{title: a, message: b}, {title: c, message: d},"
            " {title: e, message: f}, {title: g, message: h}, {title: i, message: j}]}}",
            {},
            "slack.assistant.suggested_prompts: lists 5 prompts: Slack shows at most 4",
        ),
        (
            "{assistant: {suggested_prompts: [{title: Plan}]}}",
            {},
            "slack.assistant.suggested_prompts[0].message: Field required",
        ),
        ("{assistant: {greeting: [hi]}}", {}, "slack.assistant.greeting: Input should be text"),
    ],
)
def test_a_bad_slack_section_is_named(
    tmp_path: Path, slack: str, env: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, SLACK_BASE + f"slack: {slack}\n"), env=env)
    assert message in str(caught.value)


def test_storage_url_selects_postgresql_and_database_url_carries_the_password(
    tmp_path: Path,
) -> None:
    base = "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"
    plain = load_config(write(tmp_path, base), env={})
    assert plain.storage.postgres_url is None  # SQLite, the default
    named = load_config(
        write(tmp_path, base + "storage: {url: 'postgresql://bot@db:5432/bot', pool_size: 4}\n"),
        env={},
    )
    assert named.storage.postgres_url == "postgresql://bot@db:5432/bot"
    assert named.storage.pool_size == 4
    secret = "postgresql://bot:s3cret@db:5432/bot"
    from_env = load_config(write(tmp_path, base), env={"DATABASE_URL": secret})
    assert from_env.storage.postgres_url == secret
    assert from_env.storage.name == "postgresql://bot:***@db:5432/bot"
    assert "s3cret" not in repr(from_env)


@pytest.mark.parametrize(
    ("storage", "error"),
    [
        (
            "{url: 'postgresql://bot:pw@db/bot'}",
            "storage.url: holds a password: secrets are read from the environment;"
            " set DATABASE_URL",
        ),
        (
            "{url: 'mysql://db/bot'}",
            "storage.url: must start with postgresql:// (storage.path is for SQLite)",
        ),
        (
            "{database_url: 'postgresql://db/bot'}",
            "storage.database_url: secrets are read from the environment, not the config file",
        ),
        ("{pool_size: 0}", "storage.pool_size: Input should be greater than or equal to 1"),
    ],
)
def test_a_bad_postgresql_setting_names_its_key(tmp_path: Path, storage: str, error: str) -> None:
    base = "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"
    path = write(tmp_path, f"{base}storage: {storage}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert str(caught.value) == error
    assert "pw@" not in str(caught.value)


@pytest.mark.parametrize(
    ("llm", "memory", "on"),
    [
        ("{chat_model: a, summary_model: b}", "{}", False),
        ("{chat_model: a, summary_model: b, embedding_model: e}", "{}", True),
        (
            "{chat_model: a, summary_model: b, embedding_model: e}",
            "{recall_embeddings: false}",
            False,
        ),
    ],
    ids=["no model", "a model named", "turned off"],
)
def test_naming_an_embeddings_model_turns_recall_by_meaning_on(
    tmp_path: Path, llm: str, memory: str, on: bool
) -> None:
    path = write(tmp_path, f"system_prompt: hi\nllm: {llm}\nmemory: {memory}\n")
    assert load_config(path, env={}).memory.recall_embeddings is on


def test_the_page_token_comes_from_the_environment_only(tmp_path: Path) -> None:
    base = "system_prompt: hi\nllm: {chat_model: a, summary_model: b}\n"
    path = write(tmp_path, f"{base}http: {{port: 8080, page: {{enabled: true}}}}\n")
    config = load_config(path, env={"BOT_PAGE_TOKEN": "op-s3cret"})
    assert config.http.page.token == "op-s3cret"
    assert "op-s3cret" not in repr(config)
    assert load_config(path, env={}).http.page.token is None
    bad = write(tmp_path, f"{base}http: {{port: 8080, page: {{token: x}}}}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(bad, env={})
    assert str(raised.value) == (
        "http.page.token: secrets are read from the environment, not the config file"
    )
