"""The ``bot`` command as a process: piped chat, run, doctor, stats, config errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from bot import __version__
from bot.core.memory.tokens import ChatTokenizer
from bot.core.models import Pin
from bot.core.prompt.layout import render_pins
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM, Reply


def write_config(tmp_path: Path, base_url: str, **sections: Any) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config_dict(base_url, tmp_path / "bot.sqlite3", **sections)))
    return path


def bot(*args: str, stdin: str = "", env: dict[str, str] | None = None, cwd: Path | None = None):
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


def pins_tokens(*texts: str) -> int:
    pins = [Pin(i, "c", text, 0, "ana", 0.0) for i, text in enumerate(texts, 1)]
    return ChatTokenizer.for_model("gpt-4o-mini").count(render_pins(pins))


def test_piped_chat_answers_each_line_and_continues_next_time(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = write_config(tmp_path, llm_thread.url)
    first = bot(
        "chat",
        "--config",
        str(config),
        "--channel",
        "team",
        "--user",
        "ana",
        stdin="my name is Ana\n/pin Ana owns the billing service\n\n/pins\n",
    )
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines() == [
        "echo: [ana] my name is Ana",
        "Pinned #1: Ana owns the billing service",
        f"Pins now take {pins_tokens('Ana owns the billing service')} tokens.",
        "1 pinned fact, in every prompt of this channel:",
        "#1 (ana): Ana owns the billing service",
    ]
    second = bot(
        "chat", "--config", str(config), "--channel", "team", "--user", "bo",
        stdin="what is her name?\n",
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert second.stdout == "echo: [bo] what is her name?\n"
    sent = llm_thread.chat_requests[-1]["messages"]
    assert "Ana owns the billing service" in sent[0]["content"]
    assert [m["content"] for m in sent[1:]] == [
        "[ana] my name is Ana",
        "echo: [ana] my name is Ana",
        "[bo] what is her name?",
    ]
    other = bot("chat", "--config", str(config), "--channel", "other", stdin="hi\n")
    assert other.returncode == 0
    assert [m["content"] for m in llm_thread.chat_requests[-1]["messages"][1:]] == [
        f"[{os.environ.get('USER') or 'you'}] hi"
    ]


def test_chat_reports_model_failures_and_keeps_going(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = write_config(tmp_path, llm_thread.url, llm={"max_retries": 0})
    llm_thread.script(Reply.server_error())
    result = bot("chat", "--config", str(config), stdin="first\nsecond\n/stats\n/nope\n")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("I could not reach the model right now.")
    assert lines[1].startswith("echo: [")
    assert any(line.startswith("Prompt: ") for line in lines)
    assert lines[-1].startswith("Unknown command /nope.")


def test_a_bad_config_exits_with_one_line_naming_the_key(tmp_path: Path) -> None:
    path = write_config(tmp_path, "http://127.0.0.1:9/v1", memory={"summary_threshold": 3})
    result = bot("doctor", "--config", str(path))
    assert result.returncode == 78
    assert result.stderr == (
        "bot: memory.summary_threshold: Input should be less than or equal to 1\n"
    )


def test_config_comes_from_bot_config_then_the_working_directory(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    path = write_config(tmp_path, llm_thread.url)
    via_env = bot("stats", env={"BOT_CONFIG": str(path)}, cwd=tmp_path.parent)
    assert via_env.returncode == 0, via_env.stderr
    in_cwd = bot("stats", cwd=tmp_path)
    assert in_cwd.returncode == 0, in_cwd.stderr
    missing = bot("stats", cwd=tmp_path.parent, env={"BOT_CONFIG": ""})
    assert missing.returncode == 78
    assert "config file not found: config.yaml" in missing.stderr


def test_run_says_no_platform_is_enabled_and_exits(tmp_path: Path) -> None:
    result = bot("run", "--config", str(write_config(tmp_path, "http://127.0.0.1:9/v1")))
    assert result.returncode == 78
    assert "no chat platform is enabled" in result.stderr


def test_doctor_checks_everything_and_reports_each_line(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    ok = bot("doctor", "--config", str(write_config(tmp_path, llm_thread.url)))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    lines = ok.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "ok   config",
        "ok   database",
        "ok   tokens",
        "ok   chat endpoint",
        "ok   summary endpoint",
        "ok   memory",
        "ok   recall",
        "ok   spend",
        "ok   page",
        "ok   platforms",
    ]
    assert "ok   recall: off (memory.recall_tokens: 0)" in lines
    on = write_config(
        tmp_path,
        llm_thread.url,
        memory={"recall_tokens": 500, "recall_embeddings": True},
        llm={"embedding_model": "embed-small"},
    )
    checked = bot("doctor", "--config", str(on))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (
        "ok   recall: up to 500 tokens of earlier messages; keyword search (SQLite FTS5) and by "
        "meaning (embed-small, 16 dims)"
    ) in checked.stdout.splitlines()


def test_doctor_catches_a_misspelt_model_a_server_answers_under_any_name(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    """The local server answers whatever model is asked for (as llama.cpp's does), but its
    ``/v1/models`` lists only what it serves."""
    config = write_config(tmp_path, llm_thread.url, llm={"summary_model": "gpt-4o-mnii"})
    result = bot("doctor", "--config", str(config))
    assert result.returncode == 1, result.stdout
    lines = result.stdout.splitlines()
    assert any(line.startswith("ok   chat endpoint: gpt-4o-mini at") for line in lines), lines
    (summary,) = [line for line in lines if "summary endpoint" in line]
    assert summary.startswith("FAIL summary endpoint: gpt-4o-mnii at the same endpoint as chat")
    assert summary.endswith(
        "but the server lists only gpt-4o-mini, gpt-4o, local-model: check llm.summary_model"
    )


def test_doctor_warns_when_the_sizes_cannot_fit_the_context_the_server_tells(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    """The server's ``/v1/models`` tells each model's window (vLLM's ``max_model_len``): a
    budget and reply that overflow it are a warning, one line each, and the exit stays 0."""
    llm_thread.context_window = {"gpt-4o-mini": 4096, "gpt-4o": 8192}
    config = write_config(tmp_path, llm_thread.url, llm={"summary_model": "gpt-4o"})
    result = bot("doctor", "--config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert (
        "warn chat context: memory.max_context_tokens 8,000 + llm.max_reply_tokens 1,024 = "
        "9,024 tokens, more than gpt-4o-mini's 4,096-token context (the server's /models: "
        "max_model_len): set memory.max_context_tokens to at most 3,072"
    ) in lines
    assert (
        "warn summary context: memory.summary_max_input_tokens 12,000 + llm.summary_max_tokens "
        "800 = 12,800 tokens, more than gpt-4o's 8,192-token context (the server's /models: "
        "max_model_len): set memory.summary_max_input_tokens to at most 7,392"
    ) in lines
    fitting = write_config(
        tmp_path,
        llm_thread.url,
        llm={"summary_model": "gpt-4o", "max_reply_tokens": 512},
        memory={"max_context_tokens": 3000, "summary_max_input_tokens": 7000},
    )
    result = bot("doctor", "--config", str(fitting))
    assert result.returncode == 0, result.stdout + result.stderr
    assert not [line for line in result.stdout.splitlines() if line.startswith("warn")]
    assert (
        "ok   chat context: 3,512 tokens (memory.max_context_tokens + llm.max_reply_tokens) "
        "fit gpt-4o-mini's 4,096 (the server's /models: max_model_len)"
    ) in result.stdout.splitlines()


def test_doctor_warns_from_the_window_a_context_length_error_stated(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    """A server whose ``/v1/models`` tells no window (llama-cpp-python's): the window its
    context-length error stated during a chat is kept, and doctor compares the sizes with it."""
    llm_thread.lists_window = False
    llm_thread.context_window = {"gpt-4o-mini": 3000}
    config = write_config(tmp_path, llm_thread.url)
    before = bot("doctor", "--config", str(config))
    assert "context:" not in before.stdout, before.stdout
    lines = "".join(
        f"part {i}: " + " ".join(f"word{n}" for n in range(250)) + "\n" for i in range(3)
    )
    chatted = bot("chat", "--config", str(config), stdin=lines)
    assert chatted.returncode == 0, chatted.stderr
    result = bot("doctor", "--config", str(config))
    assert result.returncode == 0, result.stdout + result.stderr
    told = "learned from the server's context-length error"
    assert (
        "warn chat context: memory.max_context_tokens 8,000 + llm.max_reply_tokens 1,024 = "
        f"9,024 tokens, more than gpt-4o-mini's 3,000-token context ({told}): "
        "set memory.max_context_tokens to at most 1,976"
    ) in result.stdout.splitlines()
    assert (
        "warn summary context: memory.summary_max_input_tokens 12,000 + llm.summary_max_tokens "
        f"800 = 12,800 tokens, more than gpt-4o-mini's 3,000-token context ({told}): "
        "set memory.summary_max_input_tokens to at most 2,200"
    ) in result.stdout.splitlines()


def test_doctor_names_an_endpoint_that_does_not_answer(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        "http://127.0.0.1:9/v1",
        llm={"max_retries": 0, "summary_model": "other-model"},
    )
    result = bot("doctor", "--config", str(config))
    assert result.returncode == 1
    assert "FAIL chat endpoint: gpt-4o-mini at http://127.0.0.1:9/v1/: unavailable" in result.stdout
    assert "FAIL summary endpoint: other-model" in result.stdout


def test_stats_lists_conversations_and_one_in_detail(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    bot("chat", "--config", config, "--channel", "team", stdin="hello\n")
    listing = bot("stats", "--config", config)
    assert listing.returncode == 0
    assert "console:local:team" in listing.stdout and "2" in listing.stdout
    detail = bot("stats", "--config", config, "--channel", "team")
    assert "Prompt: " in detail.stdout and "Messages stored: 2" in detail.stdout


def test_secrets_never_reach_the_logs(tmp_path: Path, llm_thread: FakeLLM) -> None:
    secret = "sk-test-abcdef0123456789"
    config = write_config(tmp_path, llm_thread.url, logging={"level": "DEBUG"})
    llm_thread.script(
        Reply(status=401, error={"error": {"message": f"Incorrect API key provided: {secret}"}})
    )
    result = bot("chat", "--config", str(config), stdin="hi\n", env={"OPENAI_API_KEY": secret})
    assert result.returncode == 0
    assert "credentials" in result.stdout
    assert secret not in result.stdout + result.stderr
    assert llm_thread.requests[-1].headers["authorization"] == f"Bearer {secret}"


def test_version() -> None:
    result = bot("--version")
    assert result.stdout.strip() == f"bot {__version__}"


def test_a_channel_name_that_could_collide_with_a_thread_is_refused(tmp_path: Path) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9/v1")
    result = bot("chat", "--config", str(config), "--channel", "alpha:t1", stdin="hi\n")
    assert result.returncode == 2
    assert "a channel name is non-empty, without ':'" in result.stderr


def test_doctor_never_prints_credentials_in_a_url(tmp_path: Path) -> None:
    secret_url = "http://ana:pa55w0rd-in-url@127.0.0.1:9"
    config = write_config(
        tmp_path,
        f"{secret_url}/v1",
        llm={
            "max_retries": 0,
            "summary_model": "other-model",
            "summary_base_url": f"{secret_url}/summary/v1",
            "embedding_model": "embed-small",
        },
        memory={"recall_tokens": 500, "recall_embeddings": True},
        slack={"enabled": True, "mode": "http", "api_base_url": f"{secret_url}/api/"},
    )
    env = {"SLACK_BOT_TOKEN": "xoxb-doctor", "SLACK_SIGNING_SECRET": "doctor-secret"}
    result = bot("doctor", "--config", str(config), env=env)
    assert result.returncode == 1
    printed = result.stdout + result.stderr
    assert "pa55w0rd" not in printed and "ana:" not in printed
    assert "FAIL chat endpoint: gpt-4o-mini at http://***@127.0.0.1:9/v1/" in printed
    assert "FAIL summary endpoint: other-model at http://***@127.0.0.1:9/summary/v1/" in printed
    assert "slack: cannot reach http://***@127.0.0.1:9/api/" in printed


def test_doctor_names_the_postgresql_database_and_its_pool(
    tmp_path: Path, llm_thread: FakeLLM, postgres_url: str
) -> None:
    config = write_config(tmp_path, llm_thread.url, storage={"pool_size": 4})
    result = bot("doctor", "--config", str(config), env={"DATABASE_URL": postgres_url})
    assert result.returncode == 0, result.stdout + result.stderr
    database = next(line for line in result.stdout.splitlines() if "database" in line)
    assert database.startswith("ok   database: postgresql://"), database
    assert database.endswith("of 4 pooled connections in use"), database
