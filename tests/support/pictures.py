"""Reading charts back: a PNG opened with Pillow, and where a colour is on it (its bars, their
heights and widths), as someone looking at it would see them."""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from PIL import Image

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def pixels(png: bytes) -> NDArray[np.int16]:
    """The image's RGB pixels, rows by columns by 3; it must be a PNG."""
    assert png.startswith(PNG_SIGNATURE), "not a PNG"
    with Image.open(io.BytesIO(png)) as image:
        assert image.format == "PNG"
        return np.asarray(image.convert("RGB"), dtype=np.int16)


def size(png: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(png)) as image:
        return image.size


def mask(picture: NDArray[np.int16], colour: str, tolerance: int = 6) -> NDArray[np.bool_]:
    """Where ``colour`` (``#rrggbb``) is, to within ``tolerance`` a channel."""
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return np.all(np.abs(picture - rgb) <= tolerance, axis=2)


@dataclass(frozen=True)
class Bar:
    """A run of neighbouring columns holding a colour: a vertical bar."""

    first: int
    last: int
    height: int
    """The most pixels of the colour in one of its columns."""

    @property
    def centre(self) -> float:
        return (self.first + self.last) / 2


def bars(png: bytes, colour: str) -> list[Bar]:
    """The vertical bars of ``colour``, left to right."""
    counts = mask(pixels(png), colour).sum(axis=0)
    found: list[Bar] = []
    start: int | None = None
    for column, count in enumerate([*counts.tolist(), 0]):
        if count and start is None:
            start = column
        elif not count and start is not None:
            found.append(Bar(start, column - 1, int(counts[start:column].max())))
            start = None
    return found


def widths_in_busiest_row(png: bytes, colours: list[str]) -> list[int]:
    """How many pixels of each colour the row holding most of them all has: the lengths of
    a horizontal bar's segments."""
    picture = pixels(png)
    masks = [mask(picture, colour) for colour in colours]
    row = int(np.argmax(sum(m.sum(axis=1) for m in masks)))
    return [int(m[row].sum()) for m in masks]
