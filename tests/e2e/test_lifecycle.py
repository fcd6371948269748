"""``bot run`` as a process while a platform cannot connect: each failed attempt is one log
line that says why and when the next one is, the delays grow, and SIGTERM or SIGINT stops the
bot within the grace period whatever it is doing (connecting, waiting to retry, reconnecting).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import config_dict
from tests.support.fake_discord import FakeDiscord
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import FakeSlack
from tests.support.paths import ROOT

GRACE = 30.0  # docker-compose.yml: stop_grace_period
LOG_LINE = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (DEBUG|INFO|WARNING|ERROR|CRITICAL) ([\w.]+): "
)
SLACK_ATTEMPT = re.compile(
    r"WARNING bot\.adapters\.slack\.socket: slack: cannot connect to Socket Mode \((?P<cause>.+)\);"
    r" retrying in (?P<delay>[\d.]+) s \(attempt (?P<attempt>\d+)\)$"
)
DISCORD_ATTEMPT = re.compile(
    r"WARNING bot\.adapters\.discord\.platform: discord: cannot connect to the gateway \S+"
    r" \((?P<cause>.+)\); retrying in (?P<delay>[\d.]+) s \(attempt (?P<attempt>\d+)\)$"
)
DISCORD_RECONNECT = re.compile(
    r"WARNING discord\.client: discord: gateway connection failed \((?P<cause>.+)\);"
    r" reconnecting in (?P<delay>[\d.]+) s$"
)
SLACK_TOKENS = {"SLACK_BOT_TOKEN": "xoxb-lifecycle-bot", "SLACK_APP_TOKEN": "xapp-lifecycle-app"}


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class BotProcess:
    """``bot run`` with its stderr read line by line as it comes."""

    def __init__(self, tmp_path: Path, llm: FakeLLM, env: dict[str, str], **sections: Any):
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(config_dict(llm.url, tmp_path / "bot.db", **sections)))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(config)],
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, condition: Callable[[list[str]], bool], what: str) -> None:
        deadline = time.monotonic() + 60
        while not condition(list(self.lines)):
            assert self.process.poll() is None, "\n".join(self.lines)
            assert time.monotonic() < deadline, f"timed out waiting for {what}:\n" + "\n".join(
                self.lines
            )
            time.sleep(0.05)

    def stop(self, sig: signal.Signals) -> float:
        """Send ``sig``; the seconds until the process ended (killed after the grace period)."""
        self.process.send_signal(sig)
        sent = time.monotonic()
        try:
            self.process.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join(timeout=10)
        return time.monotonic() - sent

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def matching(pattern: re.Pattern[str]) -> Callable[[list[str]], list[re.Match[str]]]:
    def found(lines: list[str]) -> list[re.Match[str]]:
        return [m for m in (pattern.search(line) for line in lines) if m]

    return found


def assert_one_line_an_attempt(lines: list[str], attempts: list[re.Match[str]]) -> None:
    """No traceback, every line a log record, attempts numbered 1, 2, ... with delays that
    double from about 1 s (each drawn from its upper half)."""
    text = "\n".join(lines)
    assert "Traceback" not in text and "\\n" not in text, text
    assert all(LOG_LINE.match(line) for line in lines), text
    assert [int(m["attempt"]) for m in attempts] == list(range(1, len(attempts) + 1)), text
    for match in attempts:
        ceiling = 2.0 ** (int(match["attempt"]) - 1)
        assert ceiling / 2 - 0.05 <= float(match["delay"]) <= ceiling + 0.05, match[0]
        assert len(match.string) < 300, match.string


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    fake = FakeSlack.start_in_thread({"U1": "Ana"})
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def fake_discord() -> Iterator[FakeDiscord]:
    fake = FakeDiscord.start_in_thread()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.mark.parametrize(
    ("sig", "refused", "cause"),
    [
        (signal.SIGTERM, None, "Cannot connect to host 127.0.0.1:"),
        (signal.SIGINT, 403, "HTTP 403 Invalid response status"),
    ],
    ids=["sigterm-closed-port", "sigint-refused-websocket"],
)
def test_a_signal_stops_bot_run_while_socket_mode_cannot_connect(
    tmp_path: Path,
    llm_thread: FakeLLM,
    fake_slack: FakeSlack,
    sig: signal.Signals,
    refused: int | None,
    cause: str,
) -> None:
    if refused is None:
        fake_slack.socket_url = f"ws://127.0.0.1:{closed_port()}/socket"
    fake_slack.refuse_socket = refused
    bot = BotProcess(
        tmp_path,
        llm_thread,
        SLACK_TOKENS,
        slack={"enabled": True, "api_base_url": fake_slack.api_url},
    )
    attempts = matching(SLACK_ATTEMPT)
    try:
        bot.wait_for(lambda lines: len(attempts(lines)) >= 3, "three attempts")
        took = bot.stop(sig)
    finally:
        bot.kill()
    assert bot.process.returncode == 0, "\n".join(bot.lines)
    assert took < GRACE
    found = attempts(bot.lines)
    assert_one_line_an_attempt(bot.lines, found)
    assert all(cause in m["cause"] for m in found), found[0].string
    assert "ticket" not in "\n".join(bot.lines)  # websocket URLs are not logged
    # Each attempt asks for a fresh websocket URL.
    assert len(fake_slack.called("apps.connections.open")) >= len(found)


def test_slack_reconnects_in_one_line_an_attempt_and_a_signal_stops_it(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack: FakeSlack
) -> None:
    bot = BotProcess(
        tmp_path,
        llm_thread,
        SLACK_TOKENS,
        slack={"enabled": True, "api_base_url": fake_slack.api_url},
    )
    attempts = matching(SLACK_ATTEMPT)
    try:
        bot.wait_for(lambda lines: any("slack connected" in line for line in lines), "connected")
        fake_slack.refuse_socket = 503
        fake_slack.call(fake_slack.drop_sockets())
        bot.wait_for(lambda lines: len(attempts(lines)) >= 2, "two attempts to reconnect")
        took = bot.stop(signal.SIGTERM)
    finally:
        bot.kill()
    assert bot.process.returncode == 0, "\n".join(bot.lines)
    assert took < GRACE
    found = attempts(bot.lines)
    assert_one_line_an_attempt(bot.lines, found)
    assert all(m["cause"] == "HTTP 503 Invalid response status" for m in found), found[0].string


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_stops_bot_run_while_the_discord_gateway_cannot_be_reached(
    tmp_path: Path, llm_thread: FakeLLM, fake_discord: FakeDiscord, sig: signal.Signals
) -> None:
    gateway = f"ws://127.0.0.1:{closed_port()}/gateway"
    discord = {"enabled": True, "api_base_url": fake_discord.api_base, "gateway_url": gateway}
    bot = BotProcess(tmp_path, llm_thread, {"DISCORD_TOKEN": fake_discord.token}, discord=discord)
    attempts = matching(DISCORD_ATTEMPT)
    try:
        bot.wait_for(lambda lines: len(attempts(lines)) >= 3, "three attempts")
        took = bot.stop(sig)
    finally:
        bot.kill()
    assert bot.process.returncode == 0, "\n".join(bot.lines)
    assert took < GRACE
    found = attempts(bot.lines)
    assert_one_line_an_attempt(bot.lines, found)
    assert all("Cannot connect to host 127.0.0.1:" in m["cause"] for m in found)


def test_discord_py_reconnects_in_one_line_an_attempt_and_a_signal_stops_it_mid_retry(
    tmp_path: Path, llm_thread: FakeLLM, fake_discord: FakeDiscord
) -> None:
    discord = {
        "enabled": True,
        "api_base_url": fake_discord.api_base,
        "gateway_url": fake_discord.gateway_url,
    }
    bot = BotProcess(tmp_path, llm_thread, {"DISCORD_TOKEN": fake_discord.token}, discord=discord)
    reconnects = matching(DISCORD_RECONNECT)
    try:
        bot.wait_for(lambda lines: any("discord connected" in line for line in lines), "ready")
        fake_discord.refuse_gateway = 503
        fake_discord.call(fake_discord.drop_gateway())
        bot.wait_for(lambda lines: len(reconnects(lines)) >= 2, "two attempts to reconnect")
        took = bot.stop(signal.SIGTERM)
    finally:
        bot.kill()
    assert bot.process.returncode == 0, "\n".join(bot.lines)
    assert took < GRACE
    text = "\n".join(bot.lines)
    assert "Traceback" not in text and "\\n" not in text, text
    assert all(LOG_LINE.match(line) for line in bot.lines), text
    found = reconnects(bot.lines)
    assert all(m["cause"] == "HTTP 503 Invalid response status" for m in found), text
