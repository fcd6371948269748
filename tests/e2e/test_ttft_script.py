"""bench/ttft.py end to end at a small size, on each platform: every question is answered in
full, its text shown before the model finished, in a few API calls (the figures themselves are
the script's)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.support.paths import ROOT


@pytest.mark.parametrize("platform", ["slack", "slack --threads", "discord"])
def test_the_time_to_first_text_bench_answers_every_question_and_prints_its_figures(
    platform: str,
) -> None:
    command = [sys.executable, "bench/ttft.py", "--platform", *platform.split(), "--messages", "6"]
    command += ["--rate", "6", "--channels", "3", "--words", "40"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "answered in full: 6 of 6" in result.stdout
    median = re.search(r"median (\d+\.\d) ms", result.stdout)
    calls = re.search(r"API calls per answer: (\d+\.\d+)", result.stdout)
    assert median is not None and calls is not None, result.stdout
    # 41 tokens at 30 a second: shown in several updates, but far fewer than one a token
    assert 2 <= float(calls.group(1)) <= 7, result.stdout
