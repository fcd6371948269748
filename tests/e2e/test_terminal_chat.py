"""`bot chat` as a person sees it: on a pseudo-terminal (a spinner while the model works, log
lines on lines of their own, control characters shown visibly) and piped (none of that; what
is sent to the model holds no control characters; commands split on any whitespace; counts
read right)."""

from __future__ import annotations

import os
import re
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

from bot.charts.draw import USAGE_SIZE
from tests.conftest import is_summary_request, respond
from tests.e2e.test_cli import bot, pins_tokens, write_config
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.pictures import size
from tests.support.terminal import Terminal

LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d (INFO|WARNING) bot\.[\w.]+: ")


def on_terminal(config: Path, *args: str) -> Terminal:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    command = [sys.executable, "-m", "bot", "chat", "--config", str(config), "--user", "ana"]
    return Terminal([*command, *args], {**env, "TERM": "xterm-256color"})


def test_on_a_terminal_a_spinner_shows_the_model_working_and_logs_keep_their_own_lines(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = write_config(tmp_path, llm_thread.url, llm={"max_retries": 1})
    llm_thread.script(Reply.server_error(), Reply(text="hello there", delay=1.0))
    with on_terminal(config) as term:
        term.wait_for("> ")
        term.type("hello\n")
        term.wait_for("hello there")
        term.wait_for("> ")
        term.type("\x04")  # Ctrl-D
        assert term.finish() == 0
        output, screen = term.output, term.screen()
    assert "thinking…" in output
    assert output.index("thinking…") < output.index("hello there")
    assert not any("thinking" in line for line in screen)  # cleared once the reply came
    assert screen[0].startswith("Chatting on console channel 'default' as ana.")
    assert screen[1] == "> hello"
    assert LOG_LINE.match(screen[2]) and "model request failed (unavailable: HTTP 500)" in screen[2]
    assert screen[3:] == ["hello there", "", ">", ""]


def test_piped_there_is_no_spinner(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = write_config(tmp_path, llm_thread.url)
    llm_thread.script(Reply(text="slow answer", delay=0.5))
    result = bot("chat", "--config", str(config), stdin="hello\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "slow answer\n"
    assert result.stderr == ""


def slow_summaries(body: dict[str, Any]) -> Reply:
    return Reply(text=respond(body), delay=1.5 if is_summary_request(body) else 0)


def test_a_log_line_written_while_the_prompt_waits_is_shown_after_the_line_is_entered(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = write_config(
        tmp_path,
        llm_thread.url,
        memory={"max_context_tokens": 256, "keep_recent_turns": 1, "recall_tokens": 0},
    )
    llm_thread.responder = slow_summaries
    long = " ".join(["budget"] * 60)
    with on_terminal(config) as term:
        for text in (f"one {long}", f"two {long}"):
            term.wait_for("> ")
            term.type(text + "\n")
        term.wait_for("> ")
        deadline = time.monotonic() + 20
        while not any(is_summary_request(b) for b in llm_thread.chat_requests):
            assert time.monotonic() < deadline, "no summary was asked for"
            time.sleep(0.1)
        term.read_for(2.5)  # the summary is done and logged, while the prompt waits
        assert term.screen()[-1] == ">"  # nothing written after the prompt
        term.type("three\n")
        term.wait_for("echo: [ana] three")
        term.type("\x04")
        assert term.finish() == 0
        screen = term.screen()
    entered = screen.index("> three")
    assert LOG_LINE.match(screen[entered + 1]), screen
    assert "summarized console:local:default: " in screen[entered + 1]
    assert screen[entered + 2] == "echo: [ana] three"


def test_control_characters_are_never_printed_raw_nor_sent_to_the_model(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = write_config(tmp_path, llm_thread.url)
    title = "\x1b]0;pwned\x07"
    llm_thread.script(f"{title}\x1b[2Jclean\x00 reply\x1b[31m in red\x1b[0m")
    piped = bot(
        "chat", "--config", str(config), "--user", "ana",
        stdin="hi \x00there \x1b[31mred\x1b[0m\x07!\n/pin a\x1b[Ab\n/pins\n",
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout.splitlines() == [
        "clean reply in red",
        "Pinned #1: ab",
        f"Pins now take {pins_tokens('ab')} tokens.",
        "1 pinned fact, in every prompt of this channel:",
        "#1 (ana): ab",
    ]
    sent = llm_thread.chat_requests[-1]["messages"]
    assert sent[-1] == {"role": "user", "content": "[ana] hi there red!"}
    # A pin stored before control characters were dropped, and a name typed with some.
    with sqlite3.connect(tmp_path / "bot.sqlite3") as db:
        db.execute(
            "INSERT INTO pins (channel_key, text, tokens, author_id, author_name, created_at)"
            " VALUES ('console:local:default', ?, 3, 'bo', 'bo', 0)",
            (f"old{title}\x00pin",),
        )
    with on_terminal(config, "--channel", f"default{title}") as term:
        term.wait_for("> ")
        term.type("/pins\n")
        term.wait_for("> ")
        term.close()
        output = term.output
    assert title not in output and "\x00" not in output
    assert "Chatting on console channel 'default␛]0;pwned␇' as ana." in output
    with on_terminal(config) as term:
        term.wait_for("> ")
        term.type("/pins\n")
        term.wait_for("> ")
        term.close()
        output = term.output
    assert title not in output and "\x00" not in output
    assert "#2 (bo): old␛]0;pwned␇␀pin" in output


def test_commands_split_on_any_whitespace_and_counts_read_right(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    lines = [
        "/pin\tAna owns billing",
        "/pins",
        "/remember\tlikes tea",
        "/profile",
        "/remember drinks coffee",
        "/forget all",
        "/forget all",
        "hello",
    ]
    result = bot("chat", "--config", config, "--user", "ana", stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout.splitlines()
    assert out[:3] == [
        "Pinned #1: Ana owns billing",
        f"Pins now take {pins_tokens('Ana owns billing')} tokens.",
        "1 pinned fact, in every prompt of this channel:",
    ]
    assert "Remembered #1: likes tea" in out
    assert "1 fact kept about you in this workspace:" in out
    assert "Forgot 2 facts kept about you in this workspace, inferred ones too." in out
    assert "Nothing was kept about you in this workspace." in out
    doctor = bot("doctor", "--config", config)
    database = next(line for line in doctor.stdout.splitlines() if "database" in line)
    assert ": ok, 1 conversation, 2 messages, synchronous=full" in database
    stats = bot("stats", "--config", config, "--channel", "default")
    assert "(1 pin)" in stats.stdout and "(2 messages)" in stats.stdout


def test_the_answer_is_printed_as_the_model_writes_it(tmp_path: Path, llm_thread: FakeLLM) -> None:
    words = [f"word{i}" for i in range(12)]
    llm_thread.script(Reply(text=" ".join(words), piece_delay=0.25))  # 3 s to write
    config = write_config(tmp_path, llm_thread.url)
    with on_terminal(config) as term:
        term.wait_for("> ")
        term.type("talk to me\n")
        term.wait_for("word1 ")
        first_seen = time.monotonic()
        term.wait_for("word11")
        whole_seen = time.monotonic()
        term.wait_for("> ")
        term.type("\x04")
        assert term.finish() == 0
        screen = term.screen()
    assert whole_seen - first_seen > 1.5  # the start was shown long before the end
    assert " ".join(words) in screen


def test_a_chart_is_saved_to_a_file_and_printed_as_its_path_and_what_it_shows(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    folder = tmp_path / "temporary"
    folder.mkdir()
    stdin = "hello\n/usage chart\n"
    result = bot(
        "chat", "--config", config, "--user", "ana", stdin=stdin, env={"TMPDIR": str(folder)}
    )
    assert result.returncode == 0, result.stderr
    text, saved = result.stdout.splitlines()[-2:]
    assert text.startswith("Tokens and cost per day for this channel (and its threads), ")
    path, shows = saved.removeprefix("usage.png saved as ").split(": ", 1)
    assert shows == text and text.endswith("calls on 1 of 30 days.")
    assert Path(path).parent == folder and Path(path).suffix == ".png"
    assert size(Path(path).read_bytes()) == USAGE_SIZE
