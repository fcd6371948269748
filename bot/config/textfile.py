"""Reading text the user hands the bot (config, exports, transcripts): bytes that are not
UTF-8 are reported with where they are, never as a traceback."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path


class NotUtf8(ValueError):
    """Bytes that are not UTF-8; the message names the source and the place."""


def _where(data: bytes, exc: UnicodeDecodeError, *, line: int | None = None) -> str:
    start = exc.start
    if line is None:
        line = data.count(b"\n", 0, start) + 1
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return f"byte 0x{data[start]:02x} at line {line}, column {column}"


def decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotUtf8(
            f"{name}: not UTF-8 text ({_where(data, exc)}, byte offset {exc.start});"
            " save it as UTF-8"
        ) from None


def read_text(path: Path) -> str:
    """The file's text (``OSError`` when it cannot be read, :class:`NotUtf8`)."""
    return decode(path.read_bytes(), str(path))


def utf8_lines(lines: Iterable[bytes], name: str) -> Iterator[str]:
    """Each line of a binary stream as text, read as it comes."""
    for number, raw in enumerate(lines, 1):
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotUtf8(
                f"{name}: not UTF-8 text ({_where(raw, exc, line=number)}); save it as UTF-8"
            ) from None
