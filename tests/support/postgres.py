"""A throwaway PostgreSQL server for the tests: ``initdb`` in a temporary folder, a free port
on 127.0.0.1, trust authentication, stopped at the end of the session.

The binaries are PostgreSQL's own (Debian's ``postgresql`` package: ``scripts/test`` installs
it when CI finds it missing). Without them the PostgreSQL tests are skipped with the reason,
except where ``BOT_TEST_REQUIRE_POSTGRES`` or ``CI`` is set: there a missing server fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_READY = "database system is ready to accept connections"
_START_SECONDS = 60.0
_names = itertools.count(1)


class PostgresMissing(Exception):
    """No PostgreSQL server binaries on this machine."""


def required() -> bool:
    """Whether a missing PostgreSQL fails the tests instead of skipping them."""
    return bool(os.environ.get("BOT_TEST_REQUIRE_POSTGRES") or os.environ.get("CI"))


def binaries() -> Path:
    """The folder holding ``initdb`` and ``postgres``: the newest Debian install, else PATH."""
    installed = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda path: int(path.parent.parent.name) if path.parent.parent.name.isdigit() else 0,
    )
    if installed:
        return installed[-1].parent
    found = shutil.which("postgres")
    if found:
        return Path(found).parent
    raise PostgresMissing(
        "no PostgreSQL server here (initdb and postgres): install Debian's postgresql"
        " package to run the PostgreSQL tests"
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_server_user() -> list[str]:
    """PostgreSQL refuses to run as root: as root, run it as the ``postgres`` user."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresMissing("running as root and there is no postgres user") from None
    return ["runuser", "-u", "postgres", "--"]


@dataclass
class PostgresServer:
    folder: Path
    port: int
    process: subprocess.Popen[bytes]

    @property
    def admin_url(self) -> str:
        return self.url("postgres")

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    @classmethod
    def start(cls, *, durable: bool = False) -> PostgresServer:
        """A new server in a new folder under the system's temporary folder (the server's
        user must reach it: pytest's own temporary folders are private to root).
        ``durable``: commits reach the disk (fsync on), as on a real server (benchmarks)."""
        bin_dir = binaries()
        prefix = _as_server_user()
        folder = Path(tempfile.mkdtemp(prefix="bot-test-postgres-"))
        data = folder / "data"
        data.mkdir()
        if prefix:
            shutil.chown(folder, "postgres")
            shutil.chown(data, "postgres")
        options = ["-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"]
        made = subprocess.run(
            [*prefix, str(bin_dir / "initdb"), "-D", str(data), *options],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            raise RuntimeError(f"initdb failed: {made.stderr.strip()[-2000:]}")
        port = _free_port()
        log = folder / "server.log"
        log.touch()
        if prefix:
            shutil.chown(log, "postgres")
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(folder),
            "fsync": "on" if durable else "off",  # a throwaway server: speed over durability
            "max_connections": "200",
            "log_min_messages": "warning",
        }
        options = [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
        with log.open("ab") as out:
            process = subprocess.Popen(
                [*prefix, str(bin_dir / "postgres"), "-D", str(data), *options],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        server = cls(folder, port, process)
        server._wait_ready(log)
        return server

    def _wait_ready(self, log: Path) -> None:
        deadline = time.monotonic() + _START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"PostgreSQL exited at start: {log.read_text()[-2000:]}")
            text = log.read_text(errors="replace")
            if _READY in text:
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"PostgreSQL did not start in {_START_SECONDS:.0f} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            self._signal(signal.SIGINT)  # a fast shutdown
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    def _signal(self, number: int) -> None:
        """Signal the server itself (``runuser`` does not pass signals on)."""
        try:
            pid = int((self.folder / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = self.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, number)

    def create_database(self) -> str:
        """A new, empty database; returns its URL."""
        name = f"test_{os.getpid()}_{next(_names)}"
        outside_the_loop(lambda: self._admin(f'CREATE DATABASE "{name}"'))
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        outside_the_loop(lambda: self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    async def _admin(self, statement: str) -> None:
        import asyncpg  # the PostgreSQL store's driver: only the PostgreSQL tests need it

        connection = await asyncpg.connect(self.admin_url)
        try:
            await connection.execute(statement)
        finally:
            await connection.close()


def outside_the_loop(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion in a thread of its own (a test's loop may be running)."""
    result: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(make()))
        except BaseException as exc:  # handed to the caller
            failure.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
