"""Progress of long work, on stderr so that stdout (an export) stays clean.

On a terminal, a rich bar with counts and an estimate; otherwise (piped, a log file, cron) a
plain line every few seconds and one when done. Work the bot does in the background logs
its start, periodic counts and totals instead (:func:`logged`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from bot.core.wording import counted, noun_for

if TYPE_CHECKING:  # rich is imported only where a bar may be drawn (commands, not the core)
    from rich.console import Console
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

EVERY_SECONDS = 5.0
"""Between two plain or log lines; the environment's ``BOT_PROGRESS_SECONDS`` changes it."""


def _every(env: dict[str, str] | os._Environ[str]) -> float:
    try:
        return max(0.0, float(env.get("BOT_PROGRESS_SECONDS", EVERY_SECONDS)))
    except ValueError:
        return EVERY_SECONDS


class Progress:
    """Counts done of ``total`` (None: unknown), shown as a bar, plain lines or log lines.

    ``advance`` may be called from another thread (SQLite's backup calls back from one).
    """

    def __init__(
        self,
        what: str,
        *,
        total: int | None,
        unit: str,
        say: Callable[[str], None],
        every: float,
        bar: Console | None = None,
        final: bool = True,
    ) -> None:
        self.what, self.unit, self.total = what, unit, total
        self._final = final
        self.done = 0
        self._say, self._every = say, every
        self._lock = threading.Lock()
        self._started = self._last = time.monotonic()
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        if bar is not None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(noun_for(2, unit)),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=bar,
                redirect_stdout=False,
                redirect_stderr=False,
            )

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task(self.what, total=self.total)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._bar is not None:
            self._bar.stop()
        elif kind is None and self._final:
            seconds = time.monotonic() - self._started
            self._say(f"{self.what}: {counted(self.done, self.unit)} in {seconds:.1f} s")

    def set_total(self, total: int) -> None:
        self.total = total
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=total)

    def advance(self, count: int = 1) -> None:
        with self._lock:
            self.done += count
            if self._bar is not None and self._task is not None:
                self._bar.update(self._task, completed=self.done)
                return
            now = time.monotonic()
            if now - self._last < self._every:
                return
            self._last = now
            self._say(self._line(now))

    def _line(self, now: float) -> str:
        if not self.total:
            return f"{self.what}: {counted(self.done, self.unit)} so far"
        share = min(self.done / self.total, 1.0)
        line = f"{self.what}: {self.done:,}/{counted(self.total, self.unit)} ({share:.0%})"
        if 0 < share < 1:
            left = (now - self._started) * (1 - share) / share
            line += f", about {_duration(left)} left"
        return line


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def shown(
    what: str,
    *,
    total: int | None,
    unit: str,
    stream: TextIO | None = None,
    final: bool = False,
) -> Progress:
    """For a command: a bar on a terminal, plain lines otherwise (``final``: and a last one
    with the count and time), on stderr."""
    from rich.console import Console

    out = stream or sys.stderr
    console = Console(file=out)
    bar = console if console.is_terminal and not console.is_dumb_terminal else None

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    every = _every(os.environ)
    return Progress(what, total=total, unit=unit, say=say, every=every, bar=bar, final=final)


def logged(
    what: str,
    *,
    total: int | None,
    unit: str,
    logger: logging.Logger,
    final: bool = True,
) -> Progress:
    """For background work: a log line at the start, every few seconds, and (``final``) at
    the end."""
    started = f" ({counted(total, unit)})" if total else ""
    logger.info("%s: started%s", what, started)
    every = _every(os.environ)
    return Progress(what, total=total, unit=unit, say=logger.info, every=every, final=final)
