"""Shared fixtures: tiktoken's encodings offline, a local OpenAI-compatible server, real
SQLite files in a temporary folder, and the bot's own wiring; and the two tiers of the suite."""

from __future__ import annotations

import copy
import inspect
import os
import platform
import sys
import types
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from bot.config import Config, parse_config
from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS
from bot.core.memory.tokens import install_encodings
from bot.wiring import App, open_app
from tests.support.fake_llm import FakeLLM, echo
from tests.support.postgres import PostgresMissing, PostgresServer
from tests.support.postgres import required as postgres_required
from tests.support.stores import BOT_KINDS, StoreKind, kind_params

ConfigFactory = Callable[..., Config]
Storage = Callable[[str], dict[str, str]]
"""``fresh_storage``: the ``storage`` settings of a new, empty database, by name."""

# The slow tier, left out by --fast (scripts/test --fast): the tests that start processes
# (found by following their code, fixtures and helpers), and the load, soak and crash tests.
# A test can also join it with @pytest.mark.slow. The fast tier also tries fewer examples of each
# property test.
_SLOW_NAMES = ("load", "soak", "crash")
_SPAWNING_NAMES = {
    "subprocess",
    "multiprocessing",
    "create_subprocess_exec",
    "create_subprocess_shell",
}
_SPAWNING_MODULES = ("subprocess", "multiprocessing", "asyncio.subprocess")
_SPAWN_EVENTS = ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.system")
_spawned: list[str] = []
_FAST_EXAMPLES = 10


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help="leave out the slow tier: tests that start processes, load, soak and crash tests",
    )


def _starts_processes(obj: object, seen: set[int]) -> bool:
    """Whether a test function, fixture, helper or class of the tests names a way to start a
    process, itself or through the tests' own helpers it names."""
    if id(obj) in seen:
        return False
    seen.add(id(obj))
    module = getattr(obj, "__module__", None) or ""
    if module.startswith(_SPAWNING_MODULES):
        return True
    if not module.startswith("tests"):
        return False
    if isinstance(obj, type):
        return any(_starts_processes(member, seen) for member in vars(obj).values())
    code = getattr(inspect.unwrap(obj), "__code__", None) if callable(obj) else None
    return code is not None and _code_starts_processes(code, obj, seen)


def _code_starts_processes(code: types.CodeType, owner: object, seen: set[int]) -> bool:
    names = set(code.co_names)
    if names & _SPAWNING_NAMES or {"sys", "executable"} <= names:
        return True
    nested = (c for c in code.co_consts if isinstance(c, types.CodeType))
    if any(_code_starts_processes(c, owner, seen) for c in nested):
        return True
    scope = getattr(inspect.unwrap(owner), "__globals__", {})  # type: ignore[arg-type]
    return any(_starts_processes(scope[name], seen) for name in names if name in scope)


def _in_slow_tier(item: pytest.Item) -> bool:
    if any(word in item.path.stem for word in _SLOW_NAMES):
        return True
    fixtures = getattr(item, "_fixtureinfo", None)
    defs = [d for ds in fixtures.name2fixturedefs.values() for d in ds] if fixtures else []
    seen: set[int] = set()
    used = [getattr(item, "obj", None), *(d.func for d in defs)]
    return any(_starts_processes(f, seen) for f in used if f is not None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _in_slow_tier(item):
            item.add_marker(pytest.mark.slow)
    if config.getoption("fast"):
        slow = [item for item in items if item.get_closest_marker("slow")]
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if not item.get_closest_marker("slow")]
        for item in items:
            _fewer_examples(item)


def _fewer_examples(item: pytest.Item) -> None:
    """In the fast tier, a property test tries at most _FAST_EXAMPLES examples."""
    test = getattr(item, "obj", None)
    chosen = getattr(test, "_hypothesis_internal_use_settings", None)  # hypothesis keeps it so
    if chosen is not None and chosen.max_examples > _FAST_EXAMPLES:
        fewer = settings(chosen, max_examples=_FAST_EXAMPLES)
        test._hypothesis_internal_use_settings = fewer  # type: ignore[union-attr]


def _note_spawn(event: str, args: tuple[Any, ...]) -> None:
    if event in _SPAWN_EVENTS:
        what = args[1] if event == "subprocess.Popen" else args[0]
        _spawned.append(f"{event} {os.fsdecode(what) if isinstance(what, bytes) else what!r}")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("fast"):
        platform.processor()  # runs `uname -p` once and keeps it (discord.py asks for it)
        sys.addaudithook(_note_spawn)  # for the check below; it cannot be removed


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _spawned.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """With --fast, a test that started a process fails, naming it: the fast tier stays so."""
    report = yield
    if call.when == "teardown" and _spawned and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"started a process in the fast tier ({_spawned[0]}): mark the test @pytest.mark.slow"
        )
    return report


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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test under ``@pytest.mark.stores(*kinds)`` (on it or its module) that opens the bot
    runs once per store kind; one leaving PostgreSQL out says why (``reason=``)."""
    marker = metafunc.definition.get_closest_marker("stores")
    if marker is None or "store_kind" not in metafunc.fixturenames:
        return
    kinds = marker.args
    if unknown := set(kinds) - set(BOT_KINDS):
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: no store kind {unknown}")
    if "postgres" not in kinds and not marker.kwargs.get("reason"):
        raise pytest.UsageError(
            f"{metafunc.definition.nodeid}: say why it runs on {', '.join(kinds)} only (reason=)"
        )
    metafunc.parametrize("store_kind", kind_params(kinds), indirect=True)


@pytest.fixture
def store_kind(request: pytest.FixtureRequest) -> StoreKind:
    """The store the bot runs on: each of the ``stores`` marker's kinds in turn, else SQLite."""
    kind: StoreKind = getattr(request, "param", "sqlite")
    return kind


@pytest.fixture
def fresh_storage(store_kind: StoreKind, tmp_path: Path, request: pytest.FixtureRequest) -> Storage:
    """``storage`` settings for a new, empty database of the test's store kind, named ``name``
    (SQLite: a file in the test's folder; PostgreSQL: a database on the session's server,
    dropped after the test)."""

    def fresh(name: str) -> dict[str, str]:
        if store_kind == "sqlite":
            return {"path": str(tmp_path / f"{name}.sqlite3")}
        server = request.getfixturevalue("postgres_server")
        url: str = server.create_database()
        request.addfinalizer(lambda: server.drop_database(url))
        return {"url": url}

    return fresh


@pytest.fixture
def make_config(tmp_path: Path, llm: FakeLLM, fresh_storage: Storage) -> ConfigFactory:
    """Configs for the test's bot, all on one database of the test's store kind (a test
    restarting the bot finds its data); ``storage=`` settings are merged over it."""
    database = fresh_storage("bot")

    def make(**sections: Any) -> Config:
        sections["storage"] = {**database, **sections.get("storage", {})}
        return parse_config(config_dict(llm.url, tmp_path / "bot.sqlite3", **sections), {})

    return make


@pytest.fixture
async def app(make_config: ConfigFactory) -> AsyncIterator[App]:
    async with open_app(make_config()) as opened:
        yield opened


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server per test process; skipped (failed where required)
    when this machine has none."""
    try:
        server = PostgresServer.start()
    except PostgresMissing as exc:
        if postgres_required():
            pytest.fail(f"PostgreSQL is required here (BOT_TEST_REQUIRE_POSTGRES, CI): {exc}")
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database on the test server, dropped afterwards."""
    url = postgres_server.create_database()
    try:
        yield url
    finally:
        postgres_server.drop_database(url)
