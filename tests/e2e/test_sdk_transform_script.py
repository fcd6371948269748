"""bench/sdk_transform.py end to end at a small size: both ways of sending run against the
server process and print their figures (the figures themselves are the script's)."""

from __future__ import annotations

import subprocess
import sys

from tests.support.paths import ROOT


def test_the_sdk_transform_bench_prints_a_row_per_length_and_way() -> None:
    result = subprocess.run(
        [sys.executable, "bench/sdk_transform.py", "--lengths", "3", "12", "--requests", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[2:]]
    assert [(row[0], " ".join(row[1:3])) for row in rows] == [
        ("3", "typed parameter"),
        ("3", "bot client"),
        ("12", "typed parameter"),
        ("12", "bot client"),
    ]
    assert all(float(row[3]) > 0 and float(row[4]) >= 0 for row in rows)
