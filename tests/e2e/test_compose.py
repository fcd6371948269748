"""docker-compose.yml and the image's configuration, without Docker (no engine on CI machines):
the compose files are read with PyYAML for what a user depends on (the PostgreSQL and replica
files merged over docker-compose.yml by compose's rules), and the commands they and the image
run are run for real in a folder laid out like the image's /etc/bot and / (WORKDIR)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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


POSTGRES_FILE, REPLICAS_FILE = "docker-compose.postgres.yml", "docker-compose.replicas.yml"
PROXY_CONF = ROOT / "docker" / "slack-proxy.conf"


class _Reset:
    """Compose's ``!reset`` tag: the value of the files before is dropped."""


class ComposeLoader(yaml.SafeLoader):
    """PyYAML's safe loader, with compose's ``!reset`` tag."""


ComposeLoader.add_constructor("!reset", lambda loader, node: _Reset())


def compose_file(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load((ROOT / name).read_text(), Loader=ComposeLoader)
    return loaded


def merge(base: Any, over: Any, key: str = "") -> Any:
    """Compose's rules for several files, as far as ours use them: mappings merge key by key,
    sequences append what is new, ``command`` and a health check's ``test`` are replaced, and
    ``!reset`` removes the key."""
    if isinstance(base, dict) and isinstance(over, dict):
        merged = dict(base)
        for name, value in over.items():
            if isinstance(value, _Reset):
                merged.pop(name, None)
            else:
                merged[name] = merge(base[name], value, name) if name in base else value
        return merged
    if isinstance(base, list) and isinstance(over, list) and key not in ("command", "test"):
        return base + [item for item in over if item not in base]
    return over


def project(*names: str) -> dict[str, Any]:
    """What ``COMPOSE_FILE=docker-compose.yml:NAME...`` gives compose, before interpolation."""
    merged: dict[str, Any] = compose_file("docker-compose.yml")
    for name in names:
        merged = merge(merged, compose_file(name))
    return merged


_VARIABLE = re.compile(r"\$\{(\w+)(?::\?([^}]*))?\}")


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """Compose's ``${NAME}`` and ``${NAME:?message}`` (an error when NAME is unset or empty),
    in every string of the model; compose refuses the whole project on one such error."""
    if isinstance(value, dict):
        return {name: interpolate(item, env) for name, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def one(match: re.Match[str]) -> str:
        name, message = match.groups()
        if message is not None and not env.get(name):
            raise LookupError(f"required variable {name} is missing a value: {message}")
        return env.get(name, "")

    return _VARIABLE.sub(one, value)


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
    # The image's /data volume, under the test's folder: never this machine's own /data.
    settings = built.etc / "docker.yaml"
    settings.write_text(settings.read_text().replace(" /data/", f" {built.root}/data/"))
    (built.root / "data").mkdir()
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


def test_the_postgres_file_adds_a_server_the_bot_waits_for_with_one_password() -> None:
    merged = project(POSTGRES_FILE)
    services, postgres = merged["services"], merged["services"]["postgres"]
    assert postgres["image"] == "postgres:16"  # the official image
    assert postgres["volumes"] == ["postgres-data:/var/lib/postgresql/data"]
    assert "postgres-data" in merged["volumes"]  # a named volume: kept across `down` and `up`
    assert "ports" not in postgres  # only compose's network reaches it
    server = postgres["environment"]
    user, database = server["POSTGRES_USER"], server["POSTGRES_DB"]
    assert (user, database) == ("bot", "bot")
    assert postgres["healthcheck"]["test"] == [
        "CMD", "pg_isready", f"--username={user}", f"--dbname={database}",
    ]  # fmt: skip
    # The bot starts after the check and the server is healthy, on the server compose runs.
    assert services["bot"]["depends_on"] == {
        "config": {"condition": "service_completed_successfully"},
        "postgres": {"condition": "service_healthy"},
    }
    for name in ("config", "bot"):  # the check reads the configuration the bot will run with
        environment = services[name]["environment"]
        assert environment["BOT_CONFIG"] == dockerfile_env("BOT_CONFIG")  # merged, not replaced
        url = urlsplit(environment["DATABASE_URL"])
        assert (url.scheme, url.hostname, url.port) == ("postgresql", "postgres", 5432)
        assert (url.username, url.path) == (user, f"/{database}")
        assert url.password == "${POSTGRES_PASSWORD}"
    # Set in .env: the server and the bot get the same password.
    given = interpolate(merged, {"POSTGRES_PASSWORD": "0f3a9c"})["services"]
    assert given["postgres"]["environment"]["POSTGRES_PASSWORD"] == "0f3a9c"
    assert urlsplit(given["bot"]["environment"]["DATABASE_URL"]).password == "0f3a9c"
    # Unset or empty (.env.example's `POSTGRES_PASSWORD=`): compose refuses, saying where.
    for env in ({}, {"POSTGRES_PASSWORD": ""}):
        with pytest.raises(LookupError, match=r"POSTGRES_PASSWORD.*\.env"):
            interpolate(merged, env)
    interpolate(project(), {})  # docker-compose.yml alone needs no password


def test_the_replicas_file_runs_two_bots_on_postgres_behind_one_slack_port(image: Image) -> None:
    config = load_config(Path(image.bot_config()), env={})
    merged = project(POSTGRES_FILE, REPLICAS_FILE)
    bot, proxy = merged["services"]["bot"], merged["services"]["slack-proxy"]
    assert bot["deploy"]["replicas"] == 2
    assert "ports" not in bot  # two containers cannot publish one host port
    assert bot["healthcheck"]["test"] == ["CMD", "bot", "health"]  # each replica's /healthz
    assert bot["depends_on"]["postgres"] == {"condition": "service_healthy"}
    assert "DATABASE_URL" in bot["environment"]
    # Without the PostgreSQL file there is no server for the replicas to share: compose
    # refuses a dependency on a service that is not defined.
    alone = project(REPLICAS_FILE)["services"]
    assert "postgres" in alone["bot"]["depends_on"] and "postgres" not in alone
    # The proxy publishes Slack's port where the single bot did, once the replicas are healthy.
    single = f"127.0.0.1:{config.slack.port}:{config.slack.port}"
    assert single in SERVICES["bot"]["ports"]
    assert proxy["ports"] == [single]
    assert proxy["depends_on"] == {"bot": {"condition": "service_healthy"}}
    assert proxy["image"].startswith("nginx:")
    target = f"./{PROXY_CONF.relative_to(ROOT)}:/etc/nginx/conf.d/default.conf:ro"
    assert proxy["volumes"] == [target]
    # Its configuration: every address of the service `bot` (one per replica), on slack.port.
    conf = re.sub(r"#.*", "", PROXY_CONF.read_text())
    (name, upstream), *others = re.findall(r"^upstream (\w+) \{(.*?)\}", conf, re.M | re.S)
    assert not others
    assert re.findall(r"^\s*server (\S+)(.*);", upstream, re.M) == [
        (f"bot:{config.slack.port}", " resolve")
    ]
    assert re.findall(r"^\s*resolver (\S+)", conf, re.M) == ["127.0.0.11"]  # Docker's DNS
    assert re.findall(r"^\s*listen (\d+);", conf, re.M) == [str(config.slack.port)]
    assert re.findall(r"^\s*proxy_pass (\S+);", conf, re.M) == [f"http://{name}"]
    # Nothing round-robin would break: no sticky or hashed balancing.
    assert not re.search(r"^\s*(ip_hash|hash|sticky)\b", upstream, re.M)


def test_the_docs_and_env_example_name_the_files_and_variables_compose_reads() -> None:
    docs = (ROOT / "docs" / "docker.md").read_text()
    example = (ROOT / ".env.example").read_text()
    headers = [(ROOT / name).read_text() for name in (POSTGRES_FILE, REPLICAS_FILE)]
    lists = re.findall(r"COMPOSE_FILE=([\w.:-]+)", "\n".join([docs, example, *headers]))
    assert {tuple(found.split(":")) for found in lists} == {
        ("docker-compose.yml", POSTGRES_FILE),
        ("docker-compose.yml", POSTGRES_FILE, REPLICAS_FILE),
    }
    commands = re.findall(r"docker compose((?: -f \S+)+) up -d", "\n".join([docs, *headers]))
    assert commands and all(
        command.split()[1::2] == ["docker-compose.yml", POSTGRES_FILE] for command in commands
    )
    # The variable is in .env.example, empty, and the refusal the docs quote is compose's.
    assert re.search(r"^POSTGRES_PASSWORD=$", example, re.M)
    password = compose_file(POSTGRES_FILE)["services"]["postgres"]["environment"]
    message = re.fullmatch(r"\$\{POSTGRES_PASSWORD:\?(.+)\}", password["POSTGRES_PASSWORD"])
    assert message and f"`{message.group(1)}`" in docs
    # An external server: a commented example, the password in .env and not in config.yaml.
    (external,) = re.findall(r"^# DATABASE_URL=(\S+)$", example, re.M)
    assert urlsplit(external).scheme == "postgresql" and urlsplit(external).password
    for promised in ("postgres:16", "postgres-data", "pg_isready", "docker/slack-proxy.conf"):
        assert promised in docs, promised
