"""Shared fixtures: tiktoken's encodings offline, a local OpenAI-compatible server, real
SQLite files in a temporary folder, and the bot's own wiring."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App, open_app
from bot.config import Config, parse_config
from bot.summarizer import SUMMARY_INSTRUCTIONS
from bot.tokens import install_encodings
from tests.support.fake_llm import FakeLLM, echo

ConfigFactory = Callable[..., Config]


@pytest.fixture(scope="session", autouse=True)
def tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seed tiktoken's cache from the bundled files: the tests never touch the network."""
    return install_encodings(tmp_path_factory.mktemp("tiktoken"))


def fake_summary(body: dict[str, Any]) -> str:
    """What the local server's summary model writes: every line mentioning FACT, carried
    forward from the previous summary and taken from the new messages, and a count."""
    text = body["messages"][-1]["content"]
    facts: list[str] = []
    for line in text.splitlines():
        if "FACT" in line:
            fact = line.split("FACT", 1)[1].strip(" :-")
            if f"- FACT {fact}" not in facts:
                facts.append(f"- FACT {fact}")
    new = text.split("New messages:", 1)[-1].count("\n[")
    return "Facts:\n" + "\n".join(facts) + f"\nNarrative:\n{new} more messages were folded."


def is_summary_request(body: dict[str, Any]) -> bool:
    return bool(body["messages"]) and body["messages"][0]["content"] == SUMMARY_INSTRUCTIONS


def respond(body: dict[str, Any]) -> str:
    return fake_summary(body) if is_summary_request(body) else str(echo(body))


@pytest.fixture
async def llm() -> AsyncIterator[FakeLLM]:
    async with FakeLLM() as server:
        server.responder = respond
        yield server


@pytest.fixture
def llm_thread() -> Iterator[FakeLLM]:
    """The same server in its own thread, for tests that run the CLI as a process."""
    server = FakeLLM.start_in_thread()
    server.responder = respond
    try:
        yield server
    finally:
        server.stop()


BASE_CONFIG: dict[str, Any] = {
    "system_prompt": "You are a test assistant.",
    "llm": {
        "chat_model": "gpt-4o-mini",
        "summary_model": "gpt-4o-mini",
        "timeout_seconds": 5,
        "max_retries": 2,
    },
    "memory": {"max_context_tokens": 8000, "recall_tokens": 0},
}


def config_dict(base_url: str, db_path: Path, **sections: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE_CONFIG)
    data["llm"]["base_url"] = base_url
    data["storage"] = {"path": str(db_path)}
    for name, values in sections.items():
        if isinstance(values, dict):
            data.setdefault(name, {}).update(values)
        else:
            data[name] = values
    return data


@pytest.fixture
def make_config(tmp_path: Path, llm: FakeLLM) -> ConfigFactory:
    def make(**sections: Any) -> Config:
        return parse_config(config_dict(llm.url, tmp_path / "bot.sqlite3", **sections), {})

    return make


@pytest.fixture
async def app(make_config: ConfigFactory) -> AsyncIterator[App]:
    async with open_app(make_config()) as opened:
        yield opened
