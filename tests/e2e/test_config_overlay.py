"""The user's settings in an untracked config.local.yaml, merged over the tracked reference:
`python -m bot stats` run for real in a folder laid out like a clone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import ROOT


def clone(tmp_path: Path) -> Path:
    """A folder with the tracked reference config.yaml, as a clone has it."""
    shutil.copy(ROOT / "config.yaml", tmp_path / "config.yaml")
    return tmp_path


def bot(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "BOT_CONFIG"}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        capture_output=True, text=True, cwd=cwd, env={**base, **env}, timeout=120,
    )  # fmt: skip


def test_the_local_file_wins_key_by_key_and_the_reference_is_untouched(tmp_path: Path) -> None:
    folder = clone(tmp_path)
    reference = (folder / "config.yaml").read_bytes()
    # Only the keys changed: llm keeps the reference's chat_model, storage its other keys.
    (folder / "config.local.yaml").write_text(
        "storage:\n  path: mine/bot.sqlite3\nllm:\n  summary_model: other-model\n"
    )
    result = bot("stats", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "No conversations yet.\n"
    assert (folder / "mine" / "bot.sqlite3").exists()
    assert not (folder / "data").exists()
    assert (folder / "config.yaml").read_bytes() == reference


def test_without_a_local_file_the_reference_is_used(tmp_path: Path) -> None:
    folder = clone(tmp_path)
    result = bot("stats", cwd=folder)
    assert result.returncode == 0, result.stderr
    assert (folder / "data" / "bot.sqlite3").exists()
    check = bot("run", "--check", cwd=folder)
    assert (check.returncode, check.stdout) == (0, "config ok: config.yaml\n")


def test_an_error_in_the_local_file_names_it_and_nothing_is_created(tmp_path: Path) -> None:
    folder = clone(tmp_path)
    local = folder / "config.local.yaml"
    cases = {  # what the file says: what the one line names after the file
        "memory:\n  max_context_tokens: 10\n": "memory.max_context_tokens",
        "memory: [\n": "YAML",
        "slack:\n  bot_token: xoxb-1\n": "slack.bot_token",
        "lm:\n  chat_model: x\n": "lm",
    }
    for text, named in cases.items():
        local.write_text(text)
        result = bot("stats", cwd=folder)
        assert result.returncode != 0
        assert result.stderr.startswith("bot: config.local.yaml"), result.stderr
        assert named in result.stderr, result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert "xoxb-1" not in result.stderr
        assert not (folder / "data").exists()


def test_a_named_config_gets_its_own_local_file_and_lists_merge_in_order(
    tmp_path: Path,
) -> None:
    folder = clone(tmp_path)
    (folder / "config.local.yaml").write_text("storage:\n  path: not-this.sqlite3\n")
    (folder / "team.yaml").write_text((folder / "config.yaml").read_text())
    (folder / "team.local.yaml").write_text("storage:\n  path: team.sqlite3\n")
    result = bot("--config", "team.yaml", "run", "--check", cwd=folder)
    assert (result.returncode, result.stdout) == (0, "config ok: team.yaml + team.local.yaml\n")
    assert bot("stats", "--config", "team.yaml", cwd=folder).returncode == 0
    assert (folder / "team.sqlite3").exists() and not (folder / "not-this.sqlite3").exists()
    # BOT_CONFIG lists files merged in order; the first file's .local file comes last.
    (folder / "site.yaml").write_text("storage:\n  path: site.sqlite3\n")
    listed = bot("stats", cwd=folder, BOT_CONFIG=f"team.yaml{os.pathsep}site.yaml")
    assert listed.returncode == 0, listed.stderr
    assert not (folder / "site.sqlite3").exists()  # team.local.yaml wins over site.yaml
    (folder / "team.local.yaml").unlink()
    assert bot("stats", cwd=folder, BOT_CONFIG=f"team.yaml{os.pathsep}site.yaml").returncode == 0
    assert (folder / "site.sqlite3").exists()
    missing = bot("stats", cwd=folder, BOT_CONFIG=f"team.yaml{os.pathsep}nope.yaml")
    assert missing.returncode != 0 and "nope.yaml" in missing.stderr


def test_the_local_file_is_ignored_by_git() -> None:
    for name in ("config.local.yaml", "team.local.yaml"):
        ignored = subprocess.run(["git", "check-ignore", "-q", name], cwd=ROOT, timeout=30)
        assert ignored.returncode == 0, f"{name} is not git-ignored"
    tracked = subprocess.run(["git", "check-ignore", "-q", "config.yaml"], cwd=ROOT, timeout=30)
    assert tracked.returncode == 1


def test_an_error_is_laid_at_the_file_that_brings_it(tmp_path: Path) -> None:
    # team.yaml is incomplete on its own (no models); team.local.yaml completes it.
    (tmp_path / "team.yaml").write_text("system_prompt: hi\nmemory:\n  window_turns: 0\n")
    (tmp_path / "team.local.yaml").write_text("llm:\n  chat_model: a\n  summary_model: b\n")
    base = bot("stats", "--config", "team.yaml", cwd=tmp_path)
    assert base.returncode != 0
    assert base.stderr.startswith("bot: memory.window_turns"), base.stderr  # not the local file
    (tmp_path / "team.yaml").write_text("system_prompt: hi\n")
    (tmp_path / "team.local.yaml").write_text(
        "llm:\n  chat_model: a\n  summary_model: b\nmemory:\n  window_turns: 0\n"
    )
    local = bot("stats", "--config", "team.yaml", cwd=tmp_path)
    assert local.returncode != 0
    assert local.stderr.startswith("bot: team.local.yaml: memory.window_turns"), local.stderr
