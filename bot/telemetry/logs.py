"""Logging set-up: one line per event, and no secret ever written."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, Mapping

SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "SUMMARY_API_KEY",
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "DISCORD_TOKEN",
)
_MIN_SECRET_LENGTH = 6
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s]*@")


def hide_credentials(text: str) -> str:
    """``https://user:pass@host/v1`` → ``https://***@host/v1``, wherever a URL is in ``text``."""
    return _URL_CREDENTIALS.sub(r"\1***@", text)


class RedactSecrets(logging.Filter):
    """Replaces every known secret value, and credentials in URLs, in a record's final text
    with ``***``."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = sorted(
            {s for s in secrets if len(s) >= _MIN_SECRET_LENGTH}, key=len, reverse=True
        )

    def redact(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return hide_credentials(text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        record.msg = self.redact(message)
        record.args = None
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, and the traceback if any.

    The record's text is taken after :class:`RedactSecrets` has run, so no secret appears.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            entry["exception"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """One line per event: a traceback's newlines are escaped, so a line is an event."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S")

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\n", "\\n")


def setup_logging(
    level: str, env: Mapping[str, str], fmt: str = "text", *, slack_sdk_debug: bool = False
) -> None:
    """Log to stderr at ``level``. slack_sdk's debug lines (Web API URLs, message texts) only
    with ``slack_sdk_debug``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(RedactSecrets(env[name] for name in SECRET_ENV_VARS if env.get(name)))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The HTTP libraries log request details at DEBUG; keep them out of ordinary logs.
    for noisy in ("httpx", "httpx2", "httpcore", "openai", "aiosqlite"):
        logging.getLogger(noisy).setLevel(max(logging.getLevelName(level), logging.WARNING))
    sdk_level = logging.getLevelName(level)
    logging.getLogger("slack_sdk").setLevel(
        sdk_level if slack_sdk_debug else max(sdk_level, logging.INFO)
    )
