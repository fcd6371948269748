"""bench/soak.py end to end at a small size: signed requests into ``bot run``'s Slack HTTP
endpoint, nothing lost or doubled, every message answered (the figures themselves are the
script's); on SQLite with one process, and on PostgreSQL with two replicas sharing the events."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.slack.test_run import ROOT
from tests.support.postgres import PostgresServer

SMALL = ("--messages", "40", "--channels", "4", "--warmup", "2")


def soak(*options: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), *SMALL, *options],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.splitlines()


def test_the_soak_script_loses_nothing_and_prints_its_figures() -> None:
    lines = soak("--rate", "40")
    assert "messages sent:       40 at 40/s over 4 channels, 1 sqlite replica" in lines
    assert "messages accepted:   42 (refused 0)" in lines
    assert "replies delivered:   42" in lines
    assert "lost:                0 not stored, 0 not answered" in lines
    assert "doubled:             0 (stored, answered or delivered twice)" in lines
    assert any(line.startswith("overhead (ms):       p50 ") for line in lines)
    assert any(line.startswith("CPU ms per message:  bots ") for line in lines)
    assert any(line.startswith("peak memory (bot):   ") for line in lines)


def test_two_replicas_on_postgres_step_through_rates(postgres_server: PostgresServer) -> None:
    lines = soak(
        "--rates",
        "20,40",
        "--store",
        "postgres",
        "--replicas",
        "2",
        "--server-url",
        postgres_server.admin_url,
    )
    for rate in (20, 40):
        assert f"messages sent:       40 at {rate}/s over 4 channels, 2 postgres replicas" in lines
    assert lines.count("messages accepted:   42 (refused 0)") == 2
    assert lines.count("replies delivered:   42") == 2
    assert lines.count("lost:                0 not stored, 0 not answered") == 2
    assert lines.count("doubled:             0 (stored, answered or delivered twice)") == 2
    rows = [
        line
        for line in lines
        if line.startswith(
            ("| postgres ×2 | 20/s | 42 | 0 | 0 |", "| postgres ×2 | 40/s | 42 | 0 | 0 |")
        )
    ]
    assert len(rows) == 2
    assert any(line.startswith("sustained (2 postgres replicas, p99 < 50 ms") for line in lines)
