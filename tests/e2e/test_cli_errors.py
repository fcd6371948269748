"""The ``bot`` command on ordinary bad input: one line on stderr that names what and why, a
non-zero exit, no traceback, and nothing left behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import config_dict
from tests.support.paths import ROOT

NO_MODEL = "http://127.0.0.1:9/v1"  # never called by these commands


def write_config(tmp_path: Path, db: Path | None = None, **sections: object) -> Path:
    config = tmp_path / "config.yaml"
    data = config_dict(NO_MODEL, db or tmp_path / "bot.sqlite3", **sections)
    config.write_text(yaml.safe_dump(data))
    return config


def bot(*args: str, cwd: Path, env: dict[str, str] | None = None, **kw: object):
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        **kw,  # type: ignore[call-overload]
    )


def one_line(stderr: str) -> str:
    """The only line of ``stderr`` (and no traceback)."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def files_in(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def a_denied_folder(tmp_path: Path) -> Path:
    """A folder nobody here may create anything in (root may write anywhere: sysfs)."""
    if os.geteuid() == 0:
        if not Path("/sys/kernel").is_dir():
            pytest.skip("running as root without sysfs")
        return Path("/sys")
    denied = tmp_path / "denied"
    denied.mkdir()
    denied.chmod(0o500)
    return denied


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = write_config(tmp_path)
    # A database holding something to print: a pin (no model needed).
    done = bot(
        "chat", "--config", str(path), "--channel", "general", cwd=tmp_path, input="/pin hi\n"
    )
    assert done.returncode == 0, done.stderr
    return path


def test_backup_onto_a_folder_is_refused_and_leaves_nothing(tmp_path: Path, config: Path):
    folder = tmp_path / "backups"
    folder.mkdir()
    before = files_in(tmp_path)
    done = bot("backup", "--config", str(config), str(folder), cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        f"bot backup: {folder} is a folder: name the file, e.g. {folder / 'bot.sqlite3'}"
    )
    assert files_in(tmp_path) == before  # no .partial copy


def test_backup_under_a_file_says_so(tmp_path: Path, config: Path) -> None:
    (tmp_path / "notes").write_text("a file, not a folder")
    before = files_in(tmp_path)
    done = bot("backup", "--config", str(config), "notes/copy.sqlite3", cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        "bot backup: cannot create the folder notes: notes is a file, not a folder"
    )
    assert files_in(tmp_path) == before


def test_backup_where_no_folder_may_be_made_says_so(tmp_path: Path, config: Path) -> None:
    denied = a_denied_folder(tmp_path)
    target = denied / "backups" / "copy.sqlite3"
    done = bot("backup", "--config", str(config), str(target), cwd=tmp_path)
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith(f"bot backup: cannot create the folder {target.parent}: ")
    assert line.endswith(("Permission denied", "Operation not permitted")), line
    assert not target.parent.exists()


def test_a_failed_backup_keeps_the_copy_it_replaces_and_leaves_no_partial(
    tmp_path: Path, config: Path
) -> None:
    target = tmp_path / "copy.sqlite3"
    assert bot("backup", "--config", str(config), str(target), cwd=tmp_path).returncode == 0
    kept = target.read_bytes()
    (tmp_path / "copy.sqlite3.partial").mkdir()  # in the way: the copy cannot be written
    (tmp_path / "copy.sqlite3.partial" / "x").write_text("")
    done = bot("backup", "--config", str(config), str(target), cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done.stderr).startswith(f"bot backup: cannot write {target}: ")
    assert target.read_bytes() == kept


def test_a_storage_path_under_a_file_says_which_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("a file")
    db = tmp_path / "data" / "bot.sqlite3"
    config = write_config(tmp_path, db)
    for command in (["stats"], ["backup", str(tmp_path / "b.sqlite3")]):
        done = bot(*command, "--config", str(config), cwd=tmp_path)
        assert done.returncode == 1
        assert one_line(done.stderr) == (
            f"bot: cannot open database {db}: {tmp_path / 'data'} is a file, not a folder"
        )


def test_a_config_file_that_is_not_utf8_is_named_with_the_place(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_bytes(b"system_prompt: hi\nllm:\n  chat_model: caf\xe9\n")
    done = bot("stats", "--config", str(config), cwd=tmp_path)
    assert done.returncode == 78  # a configuration error
    assert one_line(done.stderr) == (
        f"bot: {config}: not UTF-8 text (byte 0xe9 at line 3, column 18, byte offset 40);"
        " save it as UTF-8"
    )


def test_import_and_eval_of_a_file_that_is_not_utf8(tmp_path: Path, config: Path) -> None:
    latin1 = tmp_path / "latin1.jsonl"
    latin1.write_bytes(b'\n{"type": "caf\xe9"}\n')
    done = bot("import", "--config", str(config), str(latin1), cwd=tmp_path)
    assert done.returncode == 1
    assert one_line(done.stderr) == (
        f"bot import: {latin1}: not UTF-8 text (byte 0xe9 at line 2, column 14); save it as UTF-8"
    )
    piped = subprocess.run(
        [sys.executable, "-m", "bot", "import", "--config", str(config)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        input=latin1.read_bytes(),
        capture_output=True,
        timeout=120,
    )
    assert piped.returncode == 1
    assert one_line(piped.stderr.decode()) == (
        "bot import: stdin: not UTF-8 text (byte 0xe9 at line 2, column 14); save it as UTF-8"
    )
    done = bot("eval", "--config", str(config), str(latin1), cwd=tmp_path)
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(f"bot eval: {latin1}: not UTF-8 text (byte 0xe9")


def test_export_to_a_folder_or_under_a_file_says_so(tmp_path: Path, config: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "notes").write_text("a file")
    for target, reason in (("out", "Is a directory"), ("notes/x.jsonl", "Not a directory")):
        done = bot("export", "--config", str(config), "-o", target, cwd=tmp_path)
        assert done.returncode == 1
        assert one_line(done.stderr) == f"bot export: cannot write {target}: {reason}"


@pytest.mark.parametrize("command", [["stats"], ["export"], ["doctor"]])
def test_a_closed_stdout_ends_the_command_quietly(
    tmp_path: Path, config: Path, command: list[str]
) -> None:
    """``bot stats | head``: the reader has gone before the command writes."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", *command, "--config", str(config)],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    process.stdout.close()
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


def test_bot_run_with_discord_unreachable_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    api = f"http://127.0.0.1:{port}/api/v10"
    config = write_config(tmp_path, discord={"enabled": True, "api_base_url": api})
    done = bot("run", "--config", str(config), cwd=tmp_path, env={"DISCORD_TOKEN": "x.y.z"})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"bot run: discord: cannot reach {api}: Cannot connect to host 127.0.0.1:{port}"
        f" ssl:default [Connect call failed ('127.0.0.1', {port})]"
    )
    assert len(done.stderr.splitlines()) <= 2  # and discord.py's "logging in" line


def test_bot_run_with_the_http_port_taken_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        sections = {"http": {"host": "127.0.0.1", "port": port}, "discord": {"enabled": True}}
        config = write_config(tmp_path, **sections)
        done = bot("run", "--config", str(config), cwd=tmp_path, env={"DISCORD_TOKEN": "x.y.z"})
    assert done.returncode == 1
    line = one_line(done.stderr)
    assert line.startswith(
        f"bot run: http: cannot listen on 127.0.0.1:{port} (http.host, http.port):"
    )
    assert line.endswith("address already in use"), line


def test_bot_run_with_the_slack_port_taken_says_so_in_one_line(tmp_path: Path) -> None:
    from tests.support.fake_slack import FakeSlack

    fake = FakeSlack.start_in_thread()
    try:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            slack = {"enabled": True, "mode": "http", "host": "127.0.0.1", "port": port}
            config = write_config(tmp_path, slack={**slack, "api_base_url": fake.api_url})
            env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "signing-secret"}
            done = bot("run", "--config", str(config), cwd=tmp_path, env=env)
    finally:
        fake.stop()
    assert done.returncode == 1
    assert "Traceback" not in done.stderr, done.stderr
    line = done.stderr.splitlines()[-1]
    assert line.startswith(f"bot run: slack: cannot listen on 127.0.0.1:{port} (slack.host,")
    assert line.endswith("address already in use"), line
