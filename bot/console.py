"""``bot chat``: a conversation on a local channel, one message per line of standard input.

The console is a platform like the others (``console:local:NAME``): same engine, same memory,
same commands. It reads until end of input, so it works piped as well as typed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TextIO

from bot.commands import parse_command_line, run_command
from bot.engine import Engine
from bot.models import CommandCall, Conversation, IncomingMessage, Reply
from bot.store.base import StorageError


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


async def _read_line(stream: TextIO) -> str | None:
    line = await asyncio.to_thread(stream.readline)
    if line == "":
        return None
    return line.rstrip("\r\n")


async def _take(engine: Engine, item: IncomingMessage | CommandCall) -> Reply | None:
    if isinstance(item, CommandCall):
        return await run_command(engine, item)
    return await engine.handle_message(item)


async def chat(
    engine: Engine,
    *,
    channel: str,
    user: str,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
) -> None:
    interactive = stdin.isatty()

    def show(reply: Reply) -> None:
        stdout.write(f"{reply.text}\n")
        if interactive:
            stdout.write("\n")
        stdout.flush()

    if interactive:
        stdout.write(
            f"Chatting on console channel '{channel}' as {user}. /help lists commands; "
            "Ctrl-D quits.\n"
        )
    while True:
        if interactive:
            stdout.write("> ")
            stdout.flush()
        line = await _read_line(stdin)
        if line is None:
            break
        if not line.strip():
            continue
        item = to_incoming(line, channel=channel, user=user)
        try:
            reply = await _take(engine, item)
        except StorageError as exc:
            reply = engine.storage_notice(item.conversation, exc)
        if reply is not None:
            show(reply)
    # Let summaries started by this session finish, so the next one starts from them.
    await engine.drain(within=engine.config.llm.timeout_seconds * 2)
