"""bench/soak.py's side of the bot: the ``bot run`` replicas, the database they share (a SQLite
file, or a database on a PostgreSQL server), what that database holds afterwards, and the CPU
time each part of the machine spent."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import resource
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import aiohttp
import asyncpg
import yaml
from soak_fakes import SECRET

from tests.support.fake_slack import signed_headers
from tests.support.postgres import PostgresServer

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")
_names = itertools.count(1)


# -- the database ------------------------------------------------------------------------


@dataclass(frozen=True)
class Database:
    """One step's database: ``url`` on PostgreSQL, else the SQLite file at ``path``."""

    path: Path
    url: str | None = None

    @property
    def storage(self) -> dict[str, str]:
        """The config's ``storage`` section (the URL goes in ``DATABASE_URL``)."""
        return {"path": str(self.path)}

    @property
    def env(self) -> dict[str, str]:
        return {} if self.url is None else {"DATABASE_URL": self.url}

    async def contents(self) -> Contents:
        """What the bots left: the same queries on both stores."""
        queries = (
            "SELECT id, role, content, reply_to FROM messages",
            "SELECT COUNT(*) FROM summaries",
            "SELECT COUNT(*) FROM awaiting",
        )
        if self.url is None:
            db = sqlite3.connect(self.path)
            try:
                rows, (summaries,), (awaiting,) = (
                    db.execute(queries[0]).fetchall(),
                    db.execute(queries[1]).fetchone(),
                    db.execute(queries[2]).fetchone(),
                )
            finally:
                db.close()
        else:
            connection = await asyncpg.connect(self.url)
            try:
                rows = [tuple(row) for row in await connection.fetch(queries[0])]
                summaries = await connection.fetchval(queries[1])
                awaiting = await connection.fetchval(queries[2])
            finally:
                await connection.close()
        return Contents(rows, summaries, awaiting)


@dataclass(frozen=True)
class Contents:
    messages: list[tuple[int, str, str, int | None]]
    """(id, role, content, reply_to) of every message."""
    summaries: int
    awaiting: int
    """Messages still awaiting an answer."""


class Postgres:
    """Where the steps' databases live: a server started here (fsync on, as a real server),
    or one already running (``admin_url``), a new database per step."""

    def __init__(self, admin_url: str | None) -> None:
        self.server: PostgresServer | None = None
        if admin_url is None:
            self.server = PostgresServer.start(durable=True)
            admin_url = self.server.admin_url
        self.admin_url = admin_url

    def postmaster(self) -> int | None:
        """The server's process id, when it was started here."""
        if self.server is None:
            return None
        pid_file = self.server.folder / "data" / "postmaster.pid"
        return int(pid_file.read_text().split()[0])

    async def create(self, folder: Path) -> Database:
        name = f"soak_{os.getpid()}_{next(_names)}"
        await self._admin(f'CREATE DATABASE "{name}"')
        return Database(folder / "unused.sqlite3", self.admin_url.rsplit("/", 1)[0] + "/" + name)

    async def drop(self, database: Database) -> None:
        assert database.url is not None
        name = database.url.rsplit("/", 1)[1]
        await self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    async def _admin(self, statement: str) -> None:
        connection = await asyncpg.connect(self.admin_url)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()


# -- the replicas ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Replica:
    """One ``bot run`` process in Slack HTTP mode, on its own port."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    peak_kib: int = field(default=0)

    @classmethod
    def start(
        cls,
        folder: Path,
        database: Database,
        *,
        llm_url: str,
        api_url: str,
        budget: int,
        synchronous: str,
    ) -> Replica:
        port = free_port()
        data = {
            "system_prompt": "You are a helpful assistant in a team chat.",
            "llm": {
                "base_url": llm_url,
                "chat_model": "gpt-4o-mini",
                "summary_model": "gpt-4o-mini",
                "timeout_seconds": 60,
            },
            "memory": {"max_context_tokens": budget},
            "storage": {**database.storage, "synchronous": synchronous},
            "logging": {"level": "WARNING"},
            "slack": {
                "enabled": True,
                "mode": "http",
                "host": "127.0.0.1",
                "port": port,
                "api_base_url": api_url,
            },
        }
        folder.mkdir(parents=True)
        config = folder / "config.yaml"
        config.write_text(yaml.safe_dump(data))
        env = {
            **os.environ,
            **database.env,
            "PYTHONPATH": str(ROOT),
            "SLACK_BOT_TOKEN": "xoxb-soak-token",
            "SLACK_SIGNING_SECRET": SECRET,
        }
        log = folder / "stderr.log"
        with log.open("wb") as stderr:  # a file: a full pipe would stall the bot
            process = subprocess.Popen(
                [sys.executable, "-m", "bot", "run", "--config", str(config)],
                env=env,
                stderr=stderr,
            )
        return cls(process, f"http://127.0.0.1:{port}/slack/events", log)

    async def wait_until_serving(self, http: aiohttp.ClientSession) -> None:
        body = json.dumps({"type": "url_verification", "challenge": "ready"})
        for _ in range(1200):
            if self.process.poll() is not None:
                raise SystemExit(f"a bot exited at start:\n{self.log.read_text()[-3000:]}")
            headers = signed_headers(SECRET, body, content_type="application/json")
            try:
                async with http.post(self.url, data=body.encode(), headers=headers) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
        raise SystemExit("a bot never started serving")

    async def stop(self) -> int:
        """SIGTERM, then its exit code; its peak memory is read just before."""
        self.peak_kib = peak_kib(self.process.pid)
        self.process.send_signal(signal.SIGTERM)
        return await asyncio.to_thread(self.process.wait, 120)

    def kill(self) -> None:
        """Make sure it is gone (a step that failed half way)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def warnings(self) -> list[str]:
        return [
            line for line in self.log.read_text(errors="replace").splitlines() if "WARNING" in line
        ]


# -- CPU time ----------------------------------------------------------------------------


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, CPU ticks of the process and its reaped children)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), sum(int(value) for value in fields[11:15])


def cpu_seconds(pid: int) -> float:
    """User + system time of a process, its threads and its children that have exited."""
    stat = _stat(pid)
    return 0.0 if stat is None else stat[1] / TICK


def tree_cpu_seconds(root: int) -> float:
    """The same for a process and all its descendants alive now (a server's backends)."""
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents[int(entry.name)], ticks[int(entry.name)] = stat
    inside = {root}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in inside} - inside
        inside |= more
        grew = bool(more)
    return sum(ticks.get(pid, 0) for pid in inside) / TICK


def own_cpu_seconds() -> float:
    """This process (load generator and fakes), every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _machine() -> list[int]:
    """The machine's CPU ticks, all cores: user, nice, system, idle, iowait, irq, softirq,
    steal (``/proc/stat``)."""
    return [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]


async def busy_cores(seconds: float) -> float:
    """How many cores' worth of the machine's time was busy over the next ``seconds``."""
    start = _machine()
    await asyncio.sleep(seconds)
    ticks = [b - a for a, b in zip(start, _machine(), strict=True)]
    busy = sum(ticks) - ticks[3] - ticks[4]
    return busy / TICK / seconds


async def until_quiet(cores: float, *, longest: float) -> tuple[float, float]:
    """Wait until the machine's other processes use under ``cores`` over 5 seconds, or
    ``longest`` seconds have passed; (seconds waited, cores they used over the last 5)."""
    started = time.perf_counter()
    while True:
        used = await busy_cores(5.0)
        waited = time.perf_counter() - started
        if used < cores or waited >= longest:
            return waited, used


@dataclass(frozen=True)
class CpuUse:
    """CPU seconds spent over an interval of ``seconds``."""

    seconds: float
    bots: float
    server: float | None
    """None: the server was not started here (its time is in ``others``)."""
    script: float
    busy: float
    """The share of the machine's time (all cores) that was busy."""
    others: float
    """Seconds of other processes: the machine's busy time less the three above."""
    steal: float
    """The share of the machine's time the hypervisor took."""


class _Reading(NamedTuple):
    at: float
    bots: float
    server: float
    script: float
    machine: list[int]


class CpuMeter:
    """Reads the CPU time of the bots, the server's processes, this script and the whole
    machine when made, and again at :meth:`stop`."""

    def __init__(self, bots: list[int], server: int | None) -> None:
        self._pids, self._server = bots, server
        self._start = self._read()

    def _read(self) -> _Reading:
        return _Reading(
            at=time.perf_counter(),
            bots=sum(cpu_seconds(pid) for pid in self._pids),
            server=tree_cpu_seconds(self._server) if self._server else 0.0,
            script=own_cpu_seconds(),
            machine=_machine(),
        )

    def stop(self) -> CpuUse:
        start, end = self._start, self._read()
        bots, server, script = (
            end.bots - start.bots,
            end.server - start.server,
            end.script - start.script,
        )
        ticks = [b - a for a, b in zip(start.machine, end.machine, strict=True)]
        total = sum(ticks) or 1
        busy = (total - ticks[3] - ticks[4]) / TICK  # less idle and iowait
        return CpuUse(
            seconds=end.at - start.at,
            bots=bots,
            server=server if self._server else None,
            script=script,
            busy=busy * TICK / total,
            others=max(0.0, busy - bots - server - script),
            steal=ticks[7] / total,
        )
