"""Search by meaning does not stall the event loop: ``bench/loop_lag.py`` run small (2,000
stored 1,536-dimension vectors in a real SQLite file, a few answered turns), its bound loose.

A shared machine stalls a loop now and then by itself, so the best of a few runs is taken;
a search on the loop (about half a second over these vectors) misses the bound in every run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.paths import ROOT

BENCH = ROOT / "bench" / "loop_lag.py"
BOUND_MS = 100.0
RUNS = 3


@pytest.fixture(scope="module")
def loop_lag() -> ModuleType:
    spec = importlib.util.spec_from_file_location("loop_lag", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("loop_lag", module)
    spec.loader.exec_module(module)
    return module


async def test_recall_by_meaning_over_2000_vectors_keeps_the_loop_responsive(
    loop_lag: ModuleType, tmp_path: Path, tiktoken_cache: Path
) -> None:
    worst: list[float] = []
    for run in range(RUNS):
        lag = await loop_lag.measure(tmp_path / str(run), vectors=2000, turns=5)
        assert lag.turns == 5 and lag.recalled == 5, "each question recalled its note by meaning"
        worst.append(lag.max_ms)
        if lag.max_ms < BOUND_MS:
            break
    assert min(worst) < BOUND_MS, f"the loop stalled {worst} ms"
