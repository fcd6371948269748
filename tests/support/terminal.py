"""A command on a pseudo-terminal, and the screen a person would see.

``Terminal`` runs a process with stdin, stdout and stderr on one pty (as in a terminal
window), types lines into it and keeps everything it wrote. ``screen`` replays that output
the way a terminal draws it (carriage returns, erased lines, cursor moves), enough for a
spinner that redraws one line and then clears itself.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from collections.abc import Sequence
from typing import Self

ROWS, COLUMNS = 40, 200
_CSI = re.compile(r"\x1b\[([0-9;?]*)([ -/]*)([@-~])")
_OTHER_ESCAPE = re.compile(r"\x1b[^\[]")


class Terminal:
    def __init__(self, command: Sequence[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
        self._master = master
        self.process = subprocess.Popen(
            command, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.output = ""
        self._seen = 0

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    def wait_for(self, text: str, timeout: float = 30) -> str:
        """Read until ``text`` has been written after what the last wait found; the output."""
        deadline = time.monotonic() + timeout
        while (found := self.output.find(text, self._seen)) < 0:
            if not self._read(deadline - time.monotonic()):
                raise AssertionError(f"{text!r} never came; the screen:\n" + self.screen_text())
        self._seen = found + len(text)
        return self.output

    def read_for(self, seconds: float) -> None:
        """Keep reading what the process writes for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self._read(deadline - time.monotonic())

    def finish(self, timeout: float = 30) -> int:
        """Read to the end and wait for the process; its exit code."""
        deadline = time.monotonic() + timeout
        while self._read(deadline - time.monotonic()):
            pass
        return self.process.wait(timeout=max(0.1, deadline - time.monotonic()))

    def _read(self, timeout: float) -> bool:
        if timeout <= 0:
            return False
        ready, _, _ = select.select([self._master], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self._master, 65536)
        except OSError:  # the process ended and closed the terminal
            return False
        if not chunk:
            return False
        self.output += chunk.decode("utf-8", "replace")
        return True

    def screen(self) -> list[str]:
        return render(self.output)

    def screen_text(self) -> str:
        return "\n".join(self.screen())

    def close(self) -> None:
        """Stop the process if it still runs (twice is fine)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self._master >= 0:
            os.close(self._master)
            self._master = -1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def render(output: str) -> list[str]:
    """The lines a terminal shows after drawing ``output`` (no scrolling limit)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    i = 0
    while i < len(output):
        char = output[i]
        csi = _CSI.match(output, i) if char == "\x1b" else None
        if csi is not None:
            row, col = _control(lines, row, col, csi[1], csi[3])
            i = csi.end()
            continue
        other = _OTHER_ESCAPE.match(output, i) if char == "\x1b" else None
        if other is not None:
            i = other.end()
            continue
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            while len(lines) <= row:
                lines.append([])
        elif char == "\b":
            col = max(0, col - 1)
        elif char == "\t":
            col = (col // 8 + 1) * 8
        elif char >= " ":
            line = lines[row]
            line.extend(" " * (col - len(line) + 1))
            line[col] = char
            col += 1
        i += 1
    return ["".join(line).rstrip() for line in lines]


def _control(
    lines: list[list[str]], row: int, col: int, params: str, final: str
) -> tuple[int, int]:
    count = int(params) if params.isdigit() else 1
    if final == "A":
        row = max(0, row - count)
    elif final == "B":
        row += count
        while len(lines) <= row:
            lines.append([])
    elif final == "G":
        col = count - 1
    elif final == "K":
        line = lines[row]
        if params == "2":
            line.clear()
        elif params in ("", "0"):
            del line[col:]
        else:  # 1: up to the cursor
            line[: col + 1] = " " * min(len(line), col + 1)
    return row, col
