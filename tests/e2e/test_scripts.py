"""``scripts/run`` and ``scripts/test`` as a newcomer types them, run by bash on a copy of the
clone: the Python they need, what setup says and skips, and paths taken from where the user
stands.

No test downloads or installs packages for real: the interpreter the scripts find first on PATH
is the real one behind a wrapper that lets each virtualenv it makes also see the packages of the
environment running the tests, so pip (run for real, with the locks' hashes) finds everything
installed. Too old a Python is a tiny executable that answers version checks as 3.10 does.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from bot import __version__
from bot.config import load_config
from tests.support.fake_llm import FakeLLM
from tests.support.paths import ROOT

BASH = shutil.which("bash") or "/bin/bash"
REAL = Path(getattr(sys, "_base_executable", sys.executable))
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
CANDIDATES = ("python3", "python3.14", "python3.13", "python3.12", "python3.11")
OLD = """#!/bin/sh
# Answers a version check as Python 3.10 does, and can do nothing else.
case "$1" in -c) echo 3.10 ;; *) echo "Python 3.10.12"; exit 1 ;; esac
"""
GOOD = f"""#!/bin/sh
# The real interpreter; a virtualenv it makes also sees the packages the tests run with.
"{REAL}" "$@" || exit
if [ "$1" = -m ] && [ "$2" = venv ]; then
    for venv; do :; done
    echo "{sysconfig.get_paths()["purelib"]}" > "$venv/lib/python{VERSION}/site-packages/t.pth"
fi
"""
TOO_OLD = (
    "the bot needs Python 3.11 or newer, and python3 is Python 3.10. Install one and choose it "
    "with PYTHON, e.g. PYTHON=python3.11 "
)
COPIED = shutil.ignore_patterns(
    ".git", ".venv", "data", "site", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info"
)


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


@dataclass(frozen=True)
class Clone:
    root: Path
    old: Path  # python3 and every python3.X on PATH are too old
    good: Path  # python3 is the real interpreter

    def run(
        self,
        script: str,
        *args: str,
        venv: Path,
        cwd: Path | None = None,
        path: tuple[Path, ...] | None = None,
        stdin: str = "",
        **env: str,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BASH, str(self.root / "scripts" / script), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=600,
            cwd=cwd or self.root,
            env=self.env(venv, path or (self.good,), **env),
        )

    def env(self, venv: Path, path: tuple[Path, ...], **extra: str) -> dict[str, str]:
        kept = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BOT_CONFIG")}
        # The tests' own bin last but one: ruff, hadolint (their python3.X are shadowed).
        dirs = [*map(str, path), str(Path(sys.executable).parent), "/usr/bin", "/bin"]
        return {**kept, "PATH": os.pathsep.join(dirs), "VENV": str(venv), **extra}


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Clone:
    top = tmp_path_factory.mktemp("scripts")
    root = top / "clone"
    shutil.copytree(ROOT, root, ignore=COPIED)
    (root / "config.yaml").write_text((ROOT / "config.yaml").read_text())
    for name in CANDIDATES:
        executable(top / "old" / name, OLD)
    executable(top / "good" / "python3", GOOD)
    return Clone(root, top / "old", top / "good")


@pytest.fixture(scope="module")
def ready(clone: Clone) -> Path:
    """A virtualenv set up by scripts/run."""
    venv = clone.root.parent / "ready"
    result = clone.run("run", "--version", venv=venv)
    assert result.returncode == 0, result.stderr
    return venv


def version_of(python: Path) -> str:
    code = "import sys; print('%d.%d' % sys.version_info[:2])"
    return subprocess.run([python, "-c", code], capture_output=True, text=True).stdout.strip()


# -- the Python they need ---------------------------------------------------------------------


@pytest.mark.parametrize("script", ["run", "test"])
def test_too_old_a_python_is_named_with_how_to_choose_one_and_no_venv_is_left(
    clone: Clone, tmp_path: Path, script: str
) -> None:
    venv = tmp_path / "venv"
    result = clone.run(script, "chat", venv=venv, path=(clone.old,))
    assert result.returncode == 1
    assert result.stderr == f"scripts/{script}: {TOO_OLD}scripts/{script} chat\n"
    assert result.stdout == ""
    assert not venv.exists()


def test_python_chooses_the_interpreter_and_too_old_a_one_is_refused(
    clone: Clone, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    old = str(clone.old / "python3.12")
    refused = clone.run("run", "stats", venv=venv, PYTHON=old)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"scripts/run: PYTHON={old} is Python 3.10; the bot needs Python 3.11 or newer\n"
    )
    assert not venv.exists()
    chosen = clone.run(
        "run", "--version", venv=venv, path=(clone.old,), PYTHON=str(clone.good / "python3")
    )
    assert chosen.returncode == 0, chosen.stderr
    assert chosen.stdout == f"bot {__version__}\n"


def test_an_older_python3_is_passed_over_for_a_recent_python3_x(
    clone: Clone, tmp_path: Path
) -> None:
    newer = clone.root.parent / "newer"
    executable(newer / f"python{VERSION}", GOOD)
    venv = tmp_path / "venv"
    result = clone.run("run", "--version", venv=venv, path=(newer, clone.old))
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[:2] == [
        f"python3 is Python 3.10; using python{VERSION} (Python {VERSION}) instead",
        f"Creating {venv} with python{VERSION} (Python {VERSION}) …",
    ]
    assert version_of(venv / "bin" / "python") == VERSION


def test_a_venv_made_by_too_old_a_python_is_rebuilt(clone: Clone, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    (venv / "bin" / "python").symlink_to(clone.old / "python3")
    result = clone.run("run", "--version", venv=venv)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"bot {__version__}\n"
    assert result.stderr.splitlines()[:2] == [
        f"Rebuilding {venv}: it was made by Python 3.10, and the bot needs 3.11 or newer",
        f"Creating {venv} with python3 (Python {VERSION}) …",
    ]
    assert version_of(venv / "bin" / "python") == VERSION


def test_a_venv_of_another_python_than_the_one_named_is_rebuilt_with_it(
    clone: Clone, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text(f"version = {VERSION}.0\n")
    executable(venv / "bin" / "python", OLD.replace("3.10", VERSION))
    (venv / ".bot-stamps").mkdir()
    (venv / ".bot-stamps" / "requirements.lock").write_text("set up\n")
    named = executable(tmp_path / "python3.99", OLD.replace("3.10", "3.99"))
    result = clone.run("run", "stats", venv=venv, PYTHON=str(named))
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"Rebuilding {venv}: it was made by Python {VERSION}, and PYTHON={named} is Python 3.99",
        f"Creating {venv} with {named} (Python 3.99) …",
        "Python 3.99.12",  # what it says when asked to make a virtualenv
        f"scripts/run: could not create {venv} with {named} (on Debian or Ubuntu: apt install "
        "python3.99-venv)",
    ]
    assert not venv.exists()


def test_a_venv_whose_setup_failed_is_rebuilt_next_time(clone: Clone, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    impossible = tmp_path / "constraints.txt"
    impossible.write_text("channel-memory-bot==0.0.0\n")
    failed = clone.run("run", "--version", venv=venv, PIP_CONSTRAINT=str(impossible))
    assert failed.returncode == 1
    assert failed.stderr.endswith("scripts/run: installing the bot failed (pip says why above)\n")
    again = clone.run("run", "--version", venv=venv)
    assert again.returncode == 0, again.stderr
    assert again.stderr.splitlines()[0] == f"Rebuilding {venv}: its setup never finished"
    assert again.stdout == f"bot {__version__}\n"


# -- setup says what it does, and does it once --------------------------------------------------


def test_setup_says_each_step_and_a_second_run_installs_nothing(
    clone: Clone, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    first = clone.run("run", "--version", venv=venv)
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [
        f"Creating {venv} with python3 (Python {VERSION}) …",
        "Installing dependencies from requirements.lock (first time: a few minutes) …",
        f"Installing the bot into {venv} …",
    ]
    second = clone.run("run", "--version", venv=venv)
    assert (second.returncode, second.stdout, second.stderr) == (0, f"bot {__version__}\n", "")
    lock = clone.root / "requirements.lock"
    original = lock.read_text()
    try:
        lock.write_text(original + "# regenerated\n")
        changed = clone.run("run", "--version", venv=venv)
    finally:
        lock.write_text(original)
    assert changed.stderr.splitlines() == [
        "Installing dependencies from requirements.lock (requirements.lock or pyproject.toml "
        "changed since the last install) …",
        f"Installing the bot into {venv} …",
    ]


def pytest_starts(clone: Clone, venv: Path, *args: str) -> tuple[float, str, str]:
    """Seconds until scripts/test started pytest, and its stdout and stderr."""
    command = [BASH, str(clone.root / "scripts" / "test"), *args]
    env = clone.env(venv, (clone.good,))
    started = time.monotonic()
    with subprocess.Popen(
        command, cwd=clone.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line == "== pytest\n":
                break
        seconds = time.monotonic() - started
        out, err = process.communicate(timeout=600)
    assert process.returncode == 0, "".join(lines) + out + err
    return seconds, "".join(lines) + out, err


CHECKS = (
    "ruff check",
    "ruff format --check",
    "hadolint Dockerfile",
    "mypy bot",
    "import rules",
    "mkdocs build --strict",
)
ONE_TEST = ("-p", "no:randomly", "tests/e2e/test_scripts.py", "-k", "data_volume")


def test_an_unchanged_tree_goes_straight_to_pytest(clone: Clone, ready: Path) -> None:
    _, first, _ = pytest_starts(clone, ready, *ONE_TEST)
    assert all(f"== {check}\n" in first for check in CHECKS), first
    seconds, again, setup = pytest_starts(clone, ready, *ONE_TEST)
    assert setup == ""  # no pip
    skipped = [
        f"== {check}: nothing it checks changed since it passed, skipped" for check in CHECKS
    ]
    assert again.splitlines()[: len(CHECKS) + 1] == [*skipped, "== pytest"]
    assert "1 passed" in again
    assert seconds < 10
    helpers = clone.root / "tests" / "support" / "__init__.py"
    helpers.write_text(helpers.read_text() + "# a comment\n")
    _, touched, _ = pytest_starts(clone, ready, *ONE_TEST)
    assert (
        touched.splitlines()[:5]
        == [
            "== ruff check",
            "All checks passed!",
            "== ruff format --check",
            *touched.splitlines()[3:4],  # ruff's count of files
            *skipped[2:3],
        ]
    )
    assert skipped[3] in touched


def collected_ids(collected: str) -> list[str]:
    return [line for line in collected.splitlines() if line.startswith("tests/")]


def test_fast_leaves_out_every_test_that_starts_a_process(clone: Clone, ready: Path) -> None:
    sneaky = clone.root / "tests" / "test_sneaky.py"
    sneaky.write_text(
        "import os\n\n\ndef test_true() -> None:\n    assert os.system('true') == 0\n"
    )
    try:
        env = clone.env(ready, (clone.good,))
        collect = [str(ready / "bin" / "python"), "-m", "pytest", "-p", "no:randomly", "--co", "-q"]
        every = subprocess.run(collect, cwd=clone.root, env=env, capture_output=True, text=True)
        fast = subprocess.run(
            [*collect, "--fast"], cwd=clone.root, env=env, capture_output=True, text=True
        )
        run = [*collect[:-2], "-q", "--fast", str(sneaky)]
        caught = subprocess.run(run, cwd=clone.root, env=env, capture_output=True, text=True)
    finally:
        sneaky.unlink()
    everything, kept = set(collected_ids(every.stdout)), set(collected_ids(fast.stdout))
    left_out = everything - kept
    assert kept and kept < everything
    assert not {
        t
        for t in kept
        if t.startswith(("tests/e2e/test_cli.py", "tests/e2e/test_scripts.py::test_too"))
    }
    for name in ("test_load.py", "test_crash.py", "test_soak_script.py", "test_cli.py"):
        assert any(name in t for t in left_out), name
    assert "tests/e2e/test_scripts.py::test_the_image_keeps_its_database_on_the_data_volume" in kept
    assert caught.returncode == 1
    assert "started a process in the fast tier (os.system 'true')" in caught.stdout


# -- paths from where the user stands ----------------------------------------------------------


def test_paths_typed_are_taken_from_where_the_user_stands_and_the_database_stays(
    clone: Clone, ready: Path, tmp_path: Path, llm_thread: FakeLLM
) -> None:
    home = tmp_path / "home"
    home.mkdir()

    def run(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        result = clone.run(
            "run", *args, venv=ready, cwd=home, stdin=stdin, OPENAI_BASE_URL=llm_thread.url
        )
        assert result.returncode == 0, result.stderr
        return result

    run("chat", "--channel", "team", "--user", "ana", stdin="hello from home\n")
    database = clone.root / "data" / "bot.sqlite3"
    assert database.exists() and not (home / "data").exists()
    assert "console:local:team" in run("stats").stdout  # the same database from any folder
    run("backup", "copy.sqlite3")
    assert (home / "copy.sqlite3").exists()
    with sqlite3.connect(home / "copy.sqlite3") as copy:
        texts = [row[0] for row in copy.execute("SELECT content FROM messages")]
    assert "hello from home" in texts
    run("export", "-o", "team.jsonl")
    assert "hello from home" in (home / "team.jsonl").read_text()
    assert not (clone.root / "copy.sqlite3").exists() and not (clone.root / "team.jsonl").exists()
    (home / "mine").mkdir()
    (home / "mine" / "my.yaml").write_text((clone.root / "config.yaml").read_text())
    mine = run("--config", "mine/my.yaml", "stats")
    assert "console:local:team" not in mine.stdout
    assert (home / "mine" / "data" / "bot.sqlite3").exists()  # beside the config named


def test_the_image_keeps_its_database_on_the_data_volume(tmp_path: Path) -> None:
    """The image's layout rebuilt under tmp_path: its config files where BOT_CONFIG says, read
    as the image reads them; the database lands on the /data volume."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    named = re.search(r"\bBOT_CONFIG=(\S+)", dockerfile)
    assert named is not None
    inside = [Path(name) for name in named[1].split(":")]
    lines = dockerfile.splitlines()
    assert f"COPY config.yaml {inside[0]}" in lines
    assert f"COPY docker/config.yaml {inside[1]}" in lines
    volumes = next(line for line in lines if line.startswith("VOLUME"))
    assert '"/data"' in volumes
    for source, target in (("config.yaml", inside[0]), ("docker/config.yaml", inside[1])):
        image = tmp_path / target.relative_to("/")
        image.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / source, image)
    listed = ":".join(str(tmp_path / target.relative_to("/")) for target in inside)
    assert load_config(Path(listed), {}).storage.path == "/data/bot.sqlite3"


def test_a_relative_storage_path_is_taken_from_the_config_files_folder(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    (tmp_path / "conf").mkdir()
    raw = yaml.safe_load((ROOT / "config.yaml").read_text())
    (tmp_path / "conf" / "bot.yaml").write_text(yaml.safe_dump(raw))
    chat = [sys.executable, "-m", "bot", "chat", "--config", "conf/bot.yaml"]
    env = {**os.environ, "OPENAI_BASE_URL": llm_thread.url}
    result = subprocess.run(
        chat, input="hi\n", capture_output=True, text=True, cwd=tmp_path, env=env
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "conf" / "data" / "bot.sqlite3").exists()
    assert not (tmp_path / "data").exists()
