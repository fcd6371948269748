"""bench/soak.py end to end at a small size: signed requests into ``bot run``'s Slack HTTP
endpoint, nothing lost, every message answered (the figures themselves are the script's)."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.slack.test_run import ROOT

SMALL = ("--messages", "40", "--rate", "40", "--channels", "4", "--warmup", "2")


def test_the_soak_script_loses_nothing_and_prints_its_figures() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "soak.py"),
            "--messages",
            "40",
            "--rate",
            "40",
            "--channels",
            "4",
            "--warmup",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "messages accepted:   42 (refused 0)" in lines
    assert "replies delivered:   42" in lines
    assert "lost:                0 not stored, 0 not answered" in lines
    assert any(line.startswith("overhead (ms):       p50 ") for line in lines)
    assert any(line.startswith("peak memory (bot):   ") for line in lines)
