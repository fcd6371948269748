"""The health and metrics endpoint: ``/healthz`` follows the database and the platforms,
``/metrics`` counts what the engine and the models report, in the app's own registry."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import prometheus_client
import pytest

from bot.core.models import Conversation, IncomingMessage
from bot.ops.http_server import serve_http
from bot.telemetry.metrics import PrometheusObserver
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.support.fake_llm import FakeLLM, Reply

TEAM = Conversation.console("team")


class FakePlatform:
    """A platform whose connection the test switches."""

    name = "fake"

    def __init__(self) -> None:
        self.connected = False

    async def start(self) -> None:
        self.connected = True

    async def stop(self) -> None:
        self.connected = False


@pytest.fixture
async def http_app(make_config: ConfigFactory) -> AsyncIterator[App]:
    async with open_app(
        make_config(http={"host": "127.0.0.1", "port": 0}, llm={"max_retries": 0})
    ) as app:
        yield app


async def get(port: int, path: str) -> tuple[int, str, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{port}{path}") as response,
    ):
        return response.status, response.headers["Content-Type"], await response.text()


def sample(text: str, name: str) -> float:
    """The value of one sample line, e.g. ``bot_replies_out_total{platform="console"}``."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in metrics:\n{text}")


async def test_healthz_is_200_only_while_every_platform_is_connected(http_app: App) -> None:
    platform = FakePlatform()
    async with serve_http(http_app, [platform]) as port:
        assert port
        status, _, body = await get(port, "/healthz")
        assert (status, body) == (503, "database: ok\nfake: down\n")
        await platform.start()
        status, _, body = await get(port, "/healthz")
        assert (status, body) == (200, "database: ok\nfake: ok\n")


async def test_metrics_count_messages_replies_requests_tokens_errors_and_fill(
    http_app: App, llm: FakeLLM
) -> None:
    engine = http_app.engine
    await engine.handle_message(IncomingMessage(TEAM, "u", "Ana", "noted", addressed=False))
    llm.script(Reply("hi", prompt_tokens=40, completion_tokens=3), Reply.server_error())
    await engine.handle_message(IncomingMessage(TEAM, "u", "Ana", "hello", addressed=True))
    await engine.handle_message(IncomingMessage(TEAM, "u", "Ana", "again", addressed=True))
    made = await engine.summarize(TEAM)
    async with serve_http(http_app, []) as port:
        assert port
        status, content_type, text = await get(port, "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert sample(text, 'bot_messages_in_total{platform="console"}') == 3
    assert sample(text, 'bot_replies_out_total{platform="console"}') == 1
    chat = 'model="gpt-4o-mini",purpose="chat"'
    assert sample(text, f"bot_llm_request_seconds_count{{{chat}}}") == 2
    assert sample(text, 'bot_llm_prompt_tokens_total{model="gpt-4o-mini"}') >= 40
    assert sample(text, 'bot_llm_completion_tokens_total{model="gpt-4o-mini"}') >= 3
    assert sample(text, 'bot_errors_total{kind="llm_unavailable"}') == 1
    assert sample(text, "bot_context_fill_ratio_count") == 1
    assert 0 < sample(text, "bot_context_fill_ratio_last") < 1
    assert made is not None
    assert sample(text, "bot_summaries_total") == 1


async def test_metrics_give_spend_by_workspace_and_model_never_by_channel(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    price = {"input": 2.0, "cached_input": 1.0, "output": 10.0}  # per million tokens
    config = make_config(
        http={"host": "127.0.0.1", "port": 0}, llm={"prices": {"gpt-4o-mini": price}}
    )
    llm.script(
        Reply("a", prompt_tokens=1_000, completion_tokens=100, cached_tokens=400),
        Reply("b", prompt_tokens=3_000, completion_tokens=200),
        Reply("c", prompt_tokens=500, completion_tokens=50),
    )
    here = Conversation("slack", "T1", "C1")
    there = Conversation("slack", "T1", "C2")
    other = Conversation("slack", "T2", "C1")
    async with open_app(config) as app:
        for conversation in (here, there, other):
            message = IncomingMessage(conversation, "u", "Ana", "hello", addressed=True)
            await app.engine.handle_message(message)
        async with serve_http(app, []) as port:
            assert port
            _, _, text = await get(port, "/metrics")
    t1 = 'model="gpt-4o-mini",workspace="slack:T1"'
    # (600 × 2 + 400 × 1 + 100 × 10) + (3,000 × 2 + 200 × 10), per million
    assert sample(text, f"bot_spend_dollars_total{{{t1}}}") == pytest.approx(0.0106)
    assert sample(text, f'bot_spend_tokens_total{{kind="prompt",{t1}}}') == 4_000
    assert sample(text, f'bot_spend_tokens_total{{kind="cached",{t1}}}') == 400
    assert sample(text, f'bot_spend_tokens_total{{kind="completion",{t1}}}') == 300
    t2 = 'model="gpt-4o-mini",workspace="slack:T2"'
    assert sample(text, f"bot_spend_dollars_total{{{t2}}}") == pytest.approx(0.0015)
    assert "C1" not in text and "C2" not in text


async def test_metrics_give_the_share_used_of_each_workspace_cap(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    price = {"input": 2.0, "output": 10.0}
    budgets = {"workspace": {"day": "$0.01", "month": "$0.10"}}
    config = make_config(
        http={"host": "127.0.0.1", "port": 0},
        llm={"prices": {"gpt-4o-mini": price}},
        budgets=budgets,
    )
    llm.script(
        Reply("a", prompt_tokens=1_500, completion_tokens=100),  # $0.004
        Reply("b", prompt_tokens=500, completion_tokens=100),  # $0.002
    )
    async with open_app(config) as app:
        for conversation in (Conversation("slack", "T1", "C1"), Conversation("slack", "T2", "C1")):
            message = IncomingMessage(conversation, "u", "Ana", "hello", addressed=True)
            await app.engine.handle_message(message)
        async with serve_http(app, []) as port:
            assert port
            _, _, text = await get(port, "/metrics")
    assert sample(text, 'bot_budget_used_ratio{period="day",workspace="slack:T1"}') == (
        pytest.approx(0.4)
    )
    assert sample(text, 'bot_budget_used_ratio{period="month",workspace="slack:T1"}') == (
        pytest.approx(0.04)
    )
    assert sample(text, 'bot_budget_used_ratio{period="day",workspace="slack:T2"}') == (
        pytest.approx(0.2)
    )


async def test_no_budget_gauge_without_a_workspace_cap(http_app: App, llm: FakeLLM) -> None:
    llm.script(Reply("a", prompt_tokens=100, completion_tokens=10))
    await http_app.engine.handle_message(IncomingMessage(TEAM, "u", "Ana", "hi", addressed=True))
    async with serve_http(http_app, []) as port:
        assert port
        _, _, text = await get(port, "/metrics")
    assert "bot_budget_used_ratio{" not in text


async def test_each_app_counts_in_its_own_registry(http_app: App) -> None:
    await http_app.engine.record(IncomingMessage(TEAM, "u", "Ana", "x", addressed=False))
    assert b'bot_messages_in_total{platform="console"} 1.0' in http_app.metrics.render()  # type: ignore[union-attr]
    assert b"bot_messages_in_total{" not in PrometheusObserver().render()
    assert b"bot_messages_in" not in prometheus_client.generate_latest()


async def test_no_endpoint_unless_configured(app: App) -> None:
    assert app.metrics is None
    async with serve_http(app, []) as port:
        assert port is None


async def test_healthz_is_503_when_the_database_does_not_answer(
    make_config: ConfigFactory,
) -> None:
    config = make_config(http={"host": "127.0.0.1", "port": 0})
    async with open_app(config) as app, serve_http(app, []) as port:
        assert port
        assert await get(port, "/healthz") == (200, "text/plain; charset=utf-8", "database: ok\n")
        await app.store.close()
        status, _, body = await get(port, "/healthz")
        assert (status, body) == (503, "database: down (does not answer)\n")


def listening_addresses() -> list[str]:
    """The kernel's IPv4 listening sockets, as ``ADDRESS:PORT`` in hex (``0100007F``:
    127.0.0.1, ``00000000``: every interface)."""
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return [row[1] for row in rows if row[3] == "0A"]  # 0A: LISTEN


async def test_the_endpoint_listens_on_loopback_only_unless_http_host_says(
    make_config: ConfigFactory,
) -> None:
    async with (
        open_app(make_config(http={"port": 0})) as app,
        serve_http(app, [FakePlatform()]) as port,
    ):
        assert port
        assert (await get(port, "/healthz"))[0] == 503
        listening = listening_addresses()
        assert f"0100007F:{port:04X}" in listening
        assert f"00000000:{port:04X}" not in listening


async def test_healthz_on_postgresql_reports_the_connection_pool(
    llm: FakeLLM, postgres_url: str, tmp_path: Path
) -> None:
    from bot.config import parse_config
    from tests.conftest import config_dict

    raw = config_dict(llm.url, tmp_path / "unused.sqlite3", http={"host": "127.0.0.1", "port": 0})
    raw["storage"]["pool_size"] = 3
    config = parse_config(raw, {"DATABASE_URL": postgres_url})
    platform = FakePlatform()
    await platform.start()
    async with open_app(config) as app, serve_http(app, [platform]) as port:
        assert port
        status, _, body = await get(port, "/healthz")
    assert (status, body) == (200, "database: ok, 0 of 3 connections in use\nfake: ok\n")
