"""The Docker image's steps, without Docker (no engine on CI machines): in a fresh virtualenv,
the locked dependencies and the locked build backend (both hash-checked), then the package
built from what the Dockerfile copies without build isolation; bake tiktoken's encodings the
same way, then run ``bot run`` with the health endpoint against a local fake Slack, with
downloads made impossible.

Cost: one virtualenv per run (module-scoped), about 30-60 s, and it needs PyPI (the locks'
packages), which CI has.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tomllib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.conftest import config_dict
from tests.e2e.slack.test_run import APP_TOKEN, BOT_TOKEN, ROOT, fake_slack_thread, wait_for
from tests.e2e.test_run_shutdown import fetch, free_port
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import FakeSlack

__all__ = ["fake_slack_thread"]
_COUNT = (
    "import tiktoken\n"
    "for name in ('o200k_base', 'cl100k_base'):\n"
    "    print(len(tiktoken.get_encoding(name).encode('hello world')))"
)
# as in the Dockerfile
_BAKE = "from bot.core.memory.tokens import install_encodings; install_encodings()"


@dataclass(frozen=True)
class Image:
    venv: Path
    tiktoken: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BOT_CONFIG")}
        return {**env, "TIKTOKEN_CACHE_DIR": str(self.tiktoken), **extra}

    def offline_env(self) -> dict[str, str]:
        """Every download goes to a closed port (slack_sdk ignores NO_PROXY, so only for
        processes that talk to nothing local)."""
        dead = "http://127.0.0.1:9"
        return self.env(HTTP_PROXY=dead, HTTPS_PROXY=dead, http_proxy=dead, https_proxy=dead)


def _run(*args: str | Path, **kwargs: object) -> None:
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs
    )  # type: ignore[call-overload]
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"


def _unlocked_dependencies() -> list[str]:
    """pyproject's dependencies that requirements.lock does not pin."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    lock = (ROOT / "requirements.lock").read_text().lower()
    missing = []
    for requirement in declared:
        name = re.sub(r"[-_.]+", "-", re.split(r"[<>=!~\[ ]", requirement, maxsplit=1)[0])
        if not re.search(rf"^{re.escape(name.lower())}==", lock, re.MULTILINE):
            missing.append(requirement)
    return missing


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    root = tmp_path_factory.mktemp("image")
    src = root / "src"  # what the Dockerfile COPYs
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "bot", src / "bot", ignore=shutil.ignore_patterns("__pycache__"))
    venv = root / "venv"
    _run(sys.executable, "-m", "venv", venv)
    pip = (venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check")
    _run(*pip, "--require-hashes", "-r", ROOT / "requirements.lock")
    _run(*pip, "--require-hashes", "-r", ROOT / "requirements-build.lock")
    missing = _unlocked_dependencies()
    if missing:
        # Until the lock is regenerated with a new dependency; says so in the test summary.
        warnings.warn(f"requirements.lock lacks {missing}: regenerate it", stacklevel=1)
        _run(*pip, *missing)
    _run(*pip, "--no-deps", "--no-build-isolation", src)  # built with the pinned setuptools
    built = Image(venv=venv, tiktoken=root / "tiktoken")
    _run(venv / "bin" / "python", "-c", _BAKE, env=built.offline_env(), cwd=root)
    yield built


def test_the_image_steps_install_bake_and_serve_health_and_metrics(
    image: Image, tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    counts = subprocess.run(
        [image.venv / "bin" / "python", "-c", _COUNT],
        capture_output=True, text=True, cwd=tmp_path, env=image.offline_env(), timeout=120,
    )  # fmt: skip
    assert counts.returncode == 0, counts.stderr
    assert counts.stdout.split() == ["2", "2"]  # "hello world" in both encodings, offline
    where = subprocess.run(
        [image.venv / "bin" / "python", "-c", "import bot; print(bot.__file__)"],
        capture_output=True, text=True, cwd=tmp_path, env=image.env(), check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(image.venv)), where.stdout
    port = free_port()
    config = tmp_path / "config.yaml"
    data = config_dict(
        llm_thread.url,
        tmp_path / "data" / "bot.sqlite3",
        slack={"enabled": True, "api_base_url": fake_slack_thread.api_url},
        http={"host": "127.0.0.1", "port": port},
    )
    config.write_text(yaml.safe_dump(data))
    env = image.env(BOT_CONFIG=str(config), SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_APP_TOKEN=APP_TOKEN)
    process = subprocess.Popen(
        [image.venv / "bin" / "bot", "run"],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for(lambda: fetch(f"{base}/healthz")[0] == 200 or process.poll() is not None, "up")
        assert process.poll() is None, process.communicate()[1]
        assert fetch(f"{base}/healthz") == (200, "database: ok\nslack: ok\n")
        status, metrics = fetch(f"{base}/metrics")
        assert status == 200 and "bot_messages_in_total" in metrics
        health = subprocess.run(
            [image.venv / "bin" / "bot", "health"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert health.returncode == 0, health.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert (tmp_path / "data" / "bot.sqlite3").exists()
