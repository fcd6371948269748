"""The package's shape: small modules and functions, so each can be read whole."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import ROOT

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted((ROOT / "bot").rglob("*.py"))


def test_no_module_of_the_package_is_over_500_lines() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert not long, long


def test_no_function_of_the_package_is_over_80_lines() -> None:
    long: dict[str, int] = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, long
