"""Logs: one line per event, text or JSON, and never a secret."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest

from bot.telemetry.logs import setup_logging

SECRET = "xoxb-secret-0123456789"


@pytest.fixture
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def emit() -> None:
    log = logging.getLogger("bot.test")
    log.info("token is %s", SECRET)
    try:
        raise RuntimeError(f"failed with {SECRET}\nsecond line")
    except RuntimeError:
        log.exception("it broke")


@pytest.mark.usefixtures("restore_logging")
def test_json_logs_are_one_object_a_line_without_secrets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup_logging("INFO", {"SLACK_BOT_TOKEN": SECRET}, "json")
    emit()
    err = capsys.readouterr().err
    assert SECRET not in err
    lines = [json.loads(line) for line in err.splitlines()]
    assert [(e["level"], e["logger"], e["message"]) for e in lines] == [
        ("INFO", "bot.test", "token is ***"),
        ("ERROR", "bot.test", "it broke"),
    ]
    assert "RuntimeError: failed with ***\nsecond line" in lines[1]["exception"]


@pytest.mark.usefixtures("restore_logging")
def test_text_logs_keep_a_traceback_on_its_event_line(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("INFO", {"SLACK_BOT_TOKEN": SECRET}, "text")
    emit()
    err = capsys.readouterr().err
    assert SECRET not in err
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("INFO bot.test: token is ***")
    assert "ERROR bot.test: it broke\\nTraceback" in lines[1]
