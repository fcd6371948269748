"""docker-compose.yml and the image's configuration, without Docker (no engine on CI machines):
the compose file is read with PyYAML for what a user depends on, and the commands it and the
image run are run for real in a folder laid out like the image's /etc/bot and / (WORKDIR)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.config import load_config
from tests.e2e.slack.test_run import APP_TOKEN, BOT_TOKEN, fake_slack_thread, wait_for
from tests.e2e.test_run_shutdown import fetch, free_port
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import FakeSlack
from tests.support.paths import ROOT

__all__ = ["fake_slack_thread"]
COMPOSE: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
DOCKERFILE = (ROOT / "Dockerfile").read_text()
SERVICES: dict[str, Any] = COMPOSE["services"]


def dockerfile_env(name: str) -> str:
    match = re.search(rf"\b{name}=(\S+)", DOCKERFILE)
    assert match, name
    return match.group(1)


@dataclass(frozen=True)
class Image:
    """The image's files under ``root``: /etc/bot as the Dockerfile COPYs it, / as WORKDIR."""

    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc" / "bot"

    @property
    def workdir(self) -> Path:
        return self.root / "workdir"

    def local(self, text: str) -> None:
        """The user's config.local.yaml, where compose mounts it."""
        target = Path(SERVICES["bot"]["volumes"][0]["target"])
        (self.etc / target.relative_to("/etc/bot")).write_text(text)

    def bot_config(self) -> str:
        """The compose file's BOT_CONFIG, with /etc/bot here."""
        return SERVICES["bot"]["environment"]["BOT_CONFIG"].replace("/etc/bot", str(self.etc))

    def run(self, command: list[str], **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(command), capture_output=True, text=True, cwd=self.workdir,
            env=self.env(**env), timeout=120,
        )  # fmt: skip

    def argv(self, command: list[str]) -> list[str]:
        args = command[1:] if command[0] == "bot" else command  # ENTRYPOINT ["bot"]
        return [sys.executable, "-m", "bot", *args]

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BOT_", "SLACK_"))}
        return {**env, "BOT_CONFIG": self.bot_config(), **extra}


@pytest.fixture
def image(tmp_path: Path) -> Image:
    built = Image(tmp_path)
    built.etc.mkdir(parents=True)
    built.workdir.mkdir()
    for line in re.findall(r"^COPY (?!--from)(\S+) (/etc/bot/\S+)$", DOCKERFILE, re.MULTILINE):
        source, target = line
        shutil.copy(ROOT / source, built.etc / Path(target).name)
    return built


def test_the_image_and_compose_read_the_reference_the_image_settings_and_the_user_file() -> None:
    files = dockerfile_env("BOT_CONFIG").split(":")
    assert files == ["/etc/bot/config.yaml", "/etc/bot/docker.yaml"]
    assert SERVICES["bot"]["environment"]["BOT_CONFIG"] == dockerfile_env("BOT_CONFIG")
    assert re.search(r"^COPY config.yaml /etc/bot/config.yaml$", DOCKERFILE, re.MULTILINE)
    for name in ("config", "bot"):
        mounts = SERVICES[name]["volumes"]
        user_file = mounts[0]
        assert user_file == {
            "type": "bind",
            "source": "./config.local.yaml",  # git-ignored (tests/e2e/test_config_overlay.py)
            "target": "/etc/bot/config.local.yaml",  # beside the first file: merged last
            "read_only": True,
            "bind": {"create_host_path": False},  # missing: an error, not a new directory
        }
        sources = [m["source"] if isinstance(m, dict) else m.split(":")[0] for m in mounts]
        assert "./config.yaml" not in sources  # the tracked reference is never the user's


def test_the_health_check_and_published_ports_match_the_image_configuration(
    image: Image,
) -> None:
    config = load_config(Path(image.bot_config()), env={})  # no config.local.yaml
    assert (config.http.host, config.http.port) == ("0.0.0.0", 9090)
    assert (config.slack.host, config.slack.port) == ("0.0.0.0", 3000)
    bot = SERVICES["bot"]
    assert bot["healthcheck"]["test"] == ["CMD", "bot", "health"]
    assert re.search(r'^HEALTHCHECK .* CMD \["bot", "health"\]$', DOCKERFILE, re.MULTILINE)
    # Published on the host's loopback only: health and metrics, and Slack's HTTP requests.
    assert bot["ports"] == [
        f"127.0.0.1:{config.http.port}:{config.http.port}",
        f"127.0.0.1:{config.slack.port}:{config.slack.port}",
    ]
    assert f"EXPOSE {config.http.port} {config.slack.port}" in DOCKERFILE


def test_a_configuration_error_stops_up_before_the_bot_starts(image: Image) -> None:
    check, bot = SERVICES["config"], SERVICES["bot"]
    assert bot["depends_on"] == {"config": {"condition": "service_completed_successfully"}}
    assert check.get("restart", "no") == "no" and bot["restart"] == "unless-stopped"
    assert check["command"] == ["run", "--check"]
    image.local("memory:\n  max_context_tokens: 10\n")
    for command in (check["command"], ["run"]):  # the check, and the image's own CMD
        result = image.run(command)
        assert result.returncode == 78, result  # EX_CONFIG: not swallowed
        assert result.stderr.startswith("bot: "), result.stderr
        assert "config.local.yaml" in result.stderr and "max_context_tokens" in result.stderr
        assert len(result.stderr.splitlines()) == 1, result.stderr
    assert not (image.workdir / "data").exists()  # the bot never started
    image.local("memory:\n  max_context_tokens: 4000\n")
    ok = image.run(check["command"])
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout == (
        f"config ok: {image.etc}/config.yaml + {image.etc}/docker.yaml"
        f" + {image.etc}/config.local.yaml\n"
    )


def test_backups_have_their_own_volume_the_bot_can_write() -> None:
    assert "bot-backups:/backups" in SERVICES["bot"]["volumes"]
    assert set(COMPOSE["volumes"]) >= {"bot-data", "bot-backups"}
    # A new named volume takes the image directory's owner: the user the bot runs as.
    assert re.search(r"mkdir /data /backups\s*\\\s*&& chown bot:bot /data /backups", DOCKERFILE)
    assert re.search(r"useradd --system --uid 10001 --gid bot", DOCKERFILE)
    assert "USER 10001:10001" in DOCKERFILE
    assert 'VOLUME ["/data", "/backups"]' in DOCKERFILE
    assert (
        "docker compose exec bot bot backup /backups/" in (ROOT / "docker-compose.yml").read_text()
    )


@pytest.fixture
def running(
    image: Image, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> Iterator[tuple[Image, int, subprocess.Popen[str]]]:
    port = free_port()  # docker.yaml's 9090 may be taken on a shared machine
    image.local(
        yaml.safe_dump(
            {
                "llm": {"base_url": llm_thread.url},
                "http": {"port": port},
                "slack": {"enabled": True, "api_base_url": fake_slack_thread.api_url},
            }
        )
    )
    env = image.env(SLACK_BOT_TOKEN=BOT_TOKEN, SLACK_APP_TOKEN=APP_TOKEN)
    process = subprocess.Popen(
        image.argv(["run"]), cwd=image.workdir, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        yield image, port, process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)


def test_the_health_check_asks_the_running_bot_and_a_backup_lands_in_backups(
    running: tuple[Image, int, subprocess.Popen[str]],
) -> None:
    image, port, process = running
    health = SERVICES["bot"]["healthcheck"]["test"][1:]
    tokens = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN}
    url = f"http://127.0.0.1:{port}/healthz"
    wait_for(lambda: fetch(url)[0] == 200 or process.poll() is not None, "healthy")
    assert process.poll() is None, process.communicate()[1]
    result = image.run(health, **tokens)
    assert (result.returncode, result.stdout) == (0, "database: ok\nslack: ok\n"), result.stderr
    backups = image.root / "backups"  # the volume's mount point
    backups.mkdir()
    backup = image.run(["bot", "backup", str(backups / "bot.sqlite3")], **tokens)
    assert backup.returncode == 0, backup.stderr
    assert (backups / "bot.sqlite3").stat().st_size > 0
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 0
    down = image.run(health, **tokens)  # nothing answers: unhealthy, said on one line
    assert down.returncode == 1
    assert f"127.0.0.1:{port}" in down.stderr and len(down.stderr.splitlines()) == 1
