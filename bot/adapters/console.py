"""``bot chat``: a conversation on a local channel, one message per line of standard input.

The console is a platform like the others (``console:local:NAME``): same handler and engine,
same memory, same commands. It reads until end of input, so it works piped as well as typed.
On a terminal it shows a spinner while the model works and keeps log lines (on stderr) on
lines of their own: those written while the prompt waits are shown once the line is entered.
A reply's charts are written to files in the temporary folder, their paths printed with what
they show.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager, nullcontext
from typing import TextIO

from rich.console import Console
from rich.text import Text

from bot.core.commands import parse_command_line
from bot.core.engine import Engine
from bot.core.handler import Handler
from bot.core.models import Attachment, CommandCall, Conversation, IncomingMessage, Reply
from bot.core.ports.store import StorageError

THINKING = "thinking…"


def visible(text: str) -> str:
    """``text`` safe to print on a terminal: control characters but newline and tab shown as
    their Unicode pictures (ESC as ␛, NUL as ␀), C1 controls as U+FFFD, never sent raw."""
    return text.translate(_VISIBLE)


_VISIBLE = {
    **{code: 0x2400 + code for code in range(0x20) if chr(code) not in "\n\t"},
    0x7F: 0x2421,
    **dict.fromkeys(range(0x80, 0xA0), 0xFFFD),
}


def to_incoming(line: str, *, channel: str, user: str) -> IncomingMessage | CommandCall:
    """One line of input as the core sees it."""
    conversation = Conversation.console(channel)
    command = parse_command_line(line)
    if command is not None:
        name, argument = command
        return CommandCall(
            conversation=conversation,
            name=name,
            argument=argument,
            user_id=user,
            user_name=user,
            can_manage=True,
        )
    text = line[1:] if line.startswith("//") else line  # "//" escapes a leading slash
    return IncomingMessage(
        conversation=conversation,
        author_id=user,
        author_name=user,
        text=text,
        addressed=True,
    )


class LogGate(io.TextIOBase):
    """The log handlers' stream while a chat runs on a terminal: a log line never lands in
    the middle of the prompt or on the spinner. Held while the prompt waits for a line,
    printed above the spinner while the model works, and shown visibly (:func:`visible`)."""

    def __init__(self, ui: Console) -> None:
        super().__init__()
        self._ui = ui
        self._lock = threading.Lock()
        self._held: list[str] = []
        self.holding = False

    def write(self, text: str) -> int:
        with self._lock:
            if self.holding:
                self._held.append(text)
            else:
                self._emit(text)
        return len(text)

    def release(self) -> None:
        """Stop holding; what was held is written now."""
        with self._lock:
            self.holding = False
            held, self._held = "".join(self._held), []
            if held:
                self._emit(held)

    def _emit(self, text: str) -> None:
        # Through the console, which prints above a live spinner, without markup.
        self._ui.print(Text(visible(text.removesuffix("\n"))), soft_wrap=True)

    @contextmanager
    def installed(self, stream: TextIO) -> Iterator[LogGate]:
        """Every root log handler that writes to ``stream`` writes here instead, meanwhile."""
        swapped = [
            handler
            for handler in logging.getLogger().handlers
            if isinstance(handler, logging.StreamHandler) and handler.stream is stream
        ]
        for handler in swapped:
            handler.setStream(self)
        try:
            yield self
        finally:
            self.release()
            for handler in swapped:
                handler.setStream(stream)


async def _read_line(stream: TextIO) -> str | None:
    line = await asyncio.to_thread(stream.readline)
    if line == "":
        return None
    return line.rstrip("\r\n")


class Printing:
    """The console's outbox: an answer printed as the model writes it (the spinner stopped
    at its first text), other replies kept to be printed once the spinner is gone."""

    def __init__(self, stdout: TextIO, *, first_text: Callable[[], None], gap: bool) -> None:
        self.replies: list[Reply] = []
        self._stdout = stdout
        self._first_text = first_text
        self._gap = gap  # a blank line after each reply, at a terminal
        self._printed = ""

    def working(self) -> AbstractAsyncContextManager[None]:
        return nullcontext()

    async def show(self, text: str) -> None:
        if not text.startswith(self._printed):
            return  # not a continuation of what is printed: the end says the rest
        if not self._printed:
            self._first_text()
        self._write(text[len(self._printed) :])
        self._printed = text

    async def send(self, reply: Reply) -> str | None:
        if not self._printed:
            self.replies.append(reply)
            return None
        pairs = zip(self._printed, reply.text, strict=False)
        same = next((i for i, (a, b) in enumerate(pairs) if a != b), len(self._printed))
        self._write(reply.text[same:] + "\n" + ("\n" if self._gap else ""))
        self._printed = ""
        return None

    def _write(self, text: str) -> None:
        self._stdout.write(visible(text))
        self._stdout.flush()


def save(attachment: Attachment) -> str:
    """The attachment (a chart) written to a file of its own in the temporary folder; the
    line saying where, and what it shows."""
    stem, dot, suffix = attachment.filename.rpartition(".")
    try:
        handle, path = tempfile.mkstemp(prefix=f"{stem or suffix}-", suffix=dot + suffix)
        with os.fdopen(handle, "wb") as file:
            file.write(attachment.data)
    except OSError as exc:
        return f"({attachment.filename} could not be saved: {exc.strerror or exc}.)"
    return f"{attachment.filename} saved as {path}: {attachment.alt_text}"


async def _take(
    handler: Handler, item: IncomingMessage | CommandCall, outbox: Printing
) -> list[Reply]:
    if isinstance(item, CommandCall):
        return [await handler.command(item)]
    await handler.handle(item, outbox)
    return outbox.replies


async def chat(
    engine: Engine,
    *,
    channel: str,
    user: str,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
    stderr: TextIO = sys.stderr,
) -> None:
    handler = Handler(engine=engine)
    # A question an earlier session left unanswered (stopped mid-answer) is not answered
    # now; it would only hold up this session's answers.
    handler.take_over("console", None)
    try:
        await _chat(handler, engine, channel, user, stdin, stdout, stderr)
    finally:
        await handler.aclose()


async def _chat(
    handler: Handler,
    engine: Engine,
    channel: str,
    user: str,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
) -> None:
    interactive = stdin.isatty()
    ui = Console(file=stderr, highlight=False)
    # The spinner only where both streams are the terminal: never into a pipe or a file.
    on_terminal = stderr.isatty()
    spinner = on_terminal and stdout.isatty() and not ui.is_dumb_terminal
    gate = LogGate(ui)
    with gate.installed(stderr) if on_terminal else nullcontext(gate):

        def show(text: str) -> None:
            stdout.write(f"{visible(text)}\n")
            if interactive:
                stdout.write("\n")
            stdout.flush()

        if interactive:
            stdout.write(
                visible(
                    f"Chatting on console channel '{channel}' as {user}. /help lists "
                    "commands; Ctrl-D quits.\n"
                )
            )
        while True:
            if interactive:
                gate.holding = True
                stdout.write("> ")
                stdout.flush()
            line = await _read_line(stdin)
            gate.release()
            if line is None:
                if interactive:
                    stdout.write("\n")  # leave the prompt's line before anything else
                    stdout.flush()
                break
            if not line.strip():
                continue
            item = to_incoming(line, channel=channel, user=user)
            status = ui.status(THINKING) if spinner else None
            if status is not None:
                status.start()
            printing = Printing(
                stdout, first_text=status.stop if status else lambda: None, gap=interactive
            )
            try:
                replies = await _take(handler, item, printing)
            except StorageError as exc:
                notice = handler.storage_notice(item.conversation, exc)
                replies = [notice] if notice is not None else []
            finally:
                if status is not None:
                    status.stop()
            for reply in replies:
                show(reply.text)
                for attachment in reply.attachments:
                    show(save(attachment))
        # Let summaries started by this session finish, so the next one starts from them.
        await engine.drain(within=engine.config.llm.timeout_seconds * 2)
