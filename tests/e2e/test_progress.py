"""Long commands show progress on stderr: plain periodic lines and a final count when piped,
a rich bar on a terminal; stdout (an export) is the same bytes either way."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import tempfile
from pathlib import Path

from bot.store.archive import dump_lines
from tests.e2e.test_cli import bot, write_config
from tests.integration.test_evaluate import recall, small_transcript
from tests.support.fake_llm import FakeLLM

MESSAGES = 5000
KEY = "console:local:big"
EVERY = {"BOT_PROGRESS_SECONDS": "0"}  # a line at each step, not every few seconds


def big_export(path: Path) -> Path:
    records = [{"type": "conversation", "key": KEY, "channel_key": KEY, "generation": 0,
                "created_at": 1.0}]  # fmt: skip
    records += [
        {"type": "message", "id": n, "conversation": KEY, "reply_to": None, "role": "user",
         "author_id": "ana", "author_name": "ana", "content": f"note {n} on the rota",
         "tokens": 9, "platform_message_id": None, "created_at": float(n), "importance": 0,
         "marks": 0}
        for n in range(1, MESSAGES + 1)
    ]  # fmt: skip
    path.write_text("".join(dump_lines(records)), encoding="utf-8")
    return path


def test_piped_import_export_and_backup_print_periodic_lines_and_a_count(
    tmp_path: Path,
) -> None:
    config = str(write_config(tmp_path, "http://127.0.0.1:9/v1"))
    source = big_export(tmp_path / "big.jsonl")
    imported = bot("import", "--config", config, str(source), env=EVERY)
    assert imported.returncode == 0, imported.stderr
    lines = imported.stderr.splitlines()
    assert lines[0].startswith("import: 1,000/5,001 records (20%), about ")
    assert "import: 4,000/5,001 records (80%)" in lines[3]
    assert lines[-1] == "imported 5,001 records"
    exported = bot("export", "--config", config, env=EVERY)
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == source.read_text(encoding="utf-8")  # stdout: the records only
    said = exported.stderr.splitlines()
    assert said[0].startswith("export: 1/5,001 records (0%), about ")  # the conversation
    assert said[1].startswith("export: 1,001/5,001 records (20%), about ")
    assert said[-2:] == ["export: 5,001/5,001 records (100%)", "exported 5,001 records"]
    backup = bot("backup", "--config", config, str(tmp_path / "copy.sqlite3"), env=EVERY)
    assert backup.returncode == 0, backup.stderr
    steps = [
        [int(n.replace(",", "")) for n in re.findall(r"[\d,]+", line.split(" pages")[0])]
        for line in backup.stderr.splitlines()
        if line.startswith("backup: ")
    ]
    assert len(steps) >= 2, backup.stderr  # the copy in steps of 256 pages
    assert [done for done, _ in steps] == sorted({done for done, _ in steps})
    assert steps[0][0] == 256 and steps[-1][0] == steps[-1][1]
    assert backup.stderr.splitlines()[-1].startswith("backed up ")
    quiet = bot("export", "--config", config, "--channel", "big")
    assert quiet.stderr == "exported 5,001 records\n"  # fast work: no line before the count


def test_a_terminal_shows_a_bar_and_stdout_stays_the_export(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, "http://127.0.0.1:9/v1"))
    source = big_export(tmp_path / "big.jsonl")
    shown, _ = on_terminal("import", "--config", config, str(source))
    assert "0/5001 records" in shown and "eta" in shown  # an estimate, redrawn
    assert "━" in shown and "5001/5001 records" in shown, shown
    assert "imported 5,001 records" in shown
    shown, stdout = on_terminal("export", "--config", config)
    assert "━" in shown and "5001/5001 records" in shown
    assert stdout == source.read_bytes()


def on_terminal(*args: str) -> tuple[str, bytes]:
    """``bot ARGS`` with stderr on a pseudo-terminal and stdout in a file: what the terminal
    showed (colours and cursor moves taken out) and the bytes of stdout."""
    leader, follower = pty.openpty()
    with tempfile.TemporaryFile() as out:
        with subprocess.Popen(
            [sys.executable, "-m", "bot", *args],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=follower,
            env={**os.environ, "TERM": "xterm", "COLUMNS": "120"},
        ) as process:
            os.close(follower)
            shown = b""
            while select.select([leader], [], [], 60)[0]:  # at most a minute of silence
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed: the process ended
                    break
                if not chunk:
                    break
                shown += chunk
            assert process.wait(timeout=60) == 0, shown
        os.close(leader)
        out.seek(0)
        stdout = out.read()
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode("utf-8", "replace")), stdout


def test_piped_eval_prints_its_steps_and_a_final_count(tmp_path: Path, llm_thread: FakeLLM) -> None:
    llm_thread.responder = recall
    path = tmp_path / "probe.jsonl"
    path.write_text(small_transcript(), encoding="utf-8")
    config = str(write_config(tmp_path, llm_thread.url))
    args = ["eval", str(path), "--config", config, "--budget", "300", "--strategy", "window"]
    result = bot(*args, "--json", env=EVERY)
    assert result.returncode == 0, result.stderr
    json.loads(result.stdout)  # stdout holds the figures only
    steps = [line for line in result.stderr.splitlines() if line.startswith("eval: ")]
    assert steps[0].startswith("eval: 1/45 steps (2%), about ")
    assert steps[-2].startswith("eval: 45/45 steps (100%)")
    assert re.fullmatch(r"eval: 45 steps in \d+\.\d s", steps[-1])
