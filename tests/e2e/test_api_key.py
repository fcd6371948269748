"""A missing or wrong API key is named, with its variable, before and when it fails; doctor
probes one endpoint and key once and reports it once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.e2e.test_cli import write_config
from tests.support.fake_llm import FakeLLM

KEY_VARIABLES = ("OPENAI_API_KEY", "SUMMARY_API_KEY", "OPENAI_BASE_URL")


def bot(*args: str, stdin: str = "", env: dict[str, str] | None = None):
    """``bot`` as a process, with no key in its environment but those in ``env``."""
    clean = {k: v for k, v in os.environ.items() if k not in KEY_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
    )


def through_proxy(llm: FakeLLM) -> dict[str, str]:
    """The environment that sends a cloud-looking endpoint's requests to the local server
    (as an HTTP proxy), so the endpoint is not a local one."""
    proxy = llm.url.removesuffix("/v1")
    return {"HTTP_PROXY": proxy, "http_proxy": proxy, "NO_PROXY": "", "no_proxy": ""}


def test_chat_to_a_cloud_endpoint_without_a_key_says_so_at_start_and_in_the_reply(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    llm_thread.api_key = "sk-right-key-123"
    config = str(write_config(tmp_path, "http://api.example.com/v1", llm={"max_retries": 0}))
    result = bot("chat", "--config", config, stdin="hello\n", env=through_proxy(llm_thread))
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.endswith(
        " WARNING bot.cli: OPENAI_API_KEY is not set, and the chat endpoint "
        "http://api.example.com/v1 is not a local server: it will probably refuse every "
        "request. Set OPENAI_API_KEY, or point llm.base_url at a local server (Ollama, "
        "llama.cpp) that needs none."
    ), result.stderr
    assert result.stdout == (
        "The model endpoint refused the request: no API key is set; an operator needs to set "
        "OPENAI_API_KEY. Your message is saved.\n"
    )
    assert "auth: HTTP 401; OPENAI_API_KEY is not set" in result.stderr
    assert llm_thread.chat_records[-1].headers["host"] == "api.example.com"

    keyed = bot(
        "chat", "--config", config, stdin="hello again\n",
        env={**through_proxy(llm_thread), "OPENAI_API_KEY": "sk-right-key-123"},
    )  # fmt: skip
    assert keyed.returncode == 0, keyed.stderr
    assert "OPENAI_API_KEY" not in keyed.stderr
    assert keyed.stdout.startswith("echo: ")


def test_a_local_endpoint_needs_no_key_and_a_refusal_names_the_variable(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = str(write_config(tmp_path, llm_thread.url, llm={"max_retries": 0}))
    keyless = bot("chat", "--config", config, stdin="hi\n")
    assert keyless.returncode == 0, keyless.stderr
    assert keyless.stderr == ""
    assert keyless.stdout.startswith("echo: ")

    llm_thread.api_key = "sk-right-key-123"
    wrong = bot("chat", "--config", config, stdin="hi\n", env={"OPENAI_API_KEY": "sk-wrong-456"})
    assert wrong.returncode == 0, wrong.stderr
    assert wrong.stdout == (
        "The model endpoint refused the bot's credentials; an operator needs to check the key "
        "in OPENAI_API_KEY. Your message is saved.\n"
    )
    assert "auth: HTTP 401; check the key in OPENAI_API_KEY" in wrong.stderr
    assert "sk-wrong-456" not in wrong.stdout + wrong.stderr


def doctor_lines(config: Path, env: dict[str, str] | None = None) -> tuple[int, list[str]]:
    result = bot("doctor", "--config", str(config), env=env)
    lines = [line for line in result.stdout.splitlines() if " endpoint: " in line]
    return result.returncode, lines


def test_doctor_names_the_key_and_reports_one_endpoint_once(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    llm_thread.api_key = "sk-right-key-123"
    url = llm_thread.url
    config = write_config(tmp_path, url, llm={"max_retries": 0})
    code, lines = doctor_lines(config)
    assert code == 1
    assert lines == [
        f"FAIL chat endpoint: gpt-4o-mini at {url}/: auth (HTTP 401; OPENAI_API_KEY is not set)",
        "FAIL summary endpoint: same model, endpoint and key as chat",
    ]
    assert len(llm_thread.chat_records) == 1

    other = write_config(tmp_path, url, llm={"max_retries": 0, "summary_model": "gpt-4o"})
    code, lines = doctor_lines(other, {"OPENAI_API_KEY": "sk-wrong-456"})
    assert code == 1
    assert lines == [
        f"FAIL chat endpoint: gpt-4o-mini at {url}/: auth (HTTP 401; check the key in "
        "OPENAI_API_KEY)",
        "FAIL summary endpoint: gpt-4o at the same endpoint as chat, with the same key: see chat",
    ]
    assert len(llm_thread.chat_records) == 2

    code, lines = doctor_lines(other, {"OPENAI_API_KEY": "sk-right-key-123"})
    assert code == 0
    assert lines[0].startswith(f"ok   chat endpoint: gpt-4o-mini at {url}/ answered in ")
    assert lines[1].startswith(
        "ok   summary endpoint: gpt-4o at the same endpoint as chat answered"
    )
    assert len(llm_thread.chat_records) == 4


def test_doctor_names_the_summary_key_of_another_endpoint(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    llm_thread.api_key = "sk-right-key-123"
    elsewhere = llm_thread.url.replace("127.0.0.1", "localhost")
    config = write_config(
        tmp_path, llm_thread.url, llm={"max_retries": 0, "summary_base_url": elsewhere}
    )
    code, lines = doctor_lines(config, {"OPENAI_API_KEY": "sk-right-key-123"})
    assert code == 1
    assert lines[0].startswith("ok   chat endpoint: ")
    assert lines[1] == (
        f"FAIL summary endpoint: gpt-4o-mini at {elsewhere}/: auth (HTTP 401; SUMMARY_API_KEY "
        "is not set)"
    )
    code, lines = doctor_lines(
        config, {"OPENAI_API_KEY": "sk-right-key-123", "SUMMARY_API_KEY": "sk-other-789"}
    )
    assert lines[1] == (
        f"FAIL summary endpoint: gpt-4o-mini at {elsewhere}/: auth (HTTP 401; check the key in "
        "SUMMARY_API_KEY)"
    )
