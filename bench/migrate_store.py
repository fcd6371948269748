"""How long ``bot migrate-store`` takes: the downtime moving from SQLite to PostgreSQL needs.

A SQLite database of ``--messages`` messages (default 100,000) is made by the real store's
schema and a direct fill (``tests/support/big_sqlite.py``: 100 conversations, threads among
them, English and Chinese text of a chat message's length, a 1,536-dimension vector for one
message in ``--vector-every``, pins, summaries, usage, profile facts), then copied by
``python -m bot migrate-store`` as a process into a new database on a throwaway PostgreSQL
server on this machine (fsync on, as a real server). What is timed is the whole command, as an
operator waits for it: start-up, SQLite's integrity check, the copy with the search terms, the
identity sequences and the count of every table on both sides. Printed: the seconds, messages
per second, and the time per million messages, extrapolated linearly (every step is linear in
the rows).

Run from the repository root::

    .venv/bin/python bench/migrate_store.py
    .venv/bin/python bench/migrate_store.py --messages 20000 --vector-every 0
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.big_sqlite import fill  # noqa: E402
from tests.support.postgres import PostgresServer  # noqa: E402


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument(
        "--vector-every", type=int, default=10, help="one message in N has a vector (0: none)"
    )
    parser.add_argument("--batch-size", type=int, default=None, help="migrate-store's option")
    parser.add_argument("--db-dir", type=Path, default=None, help="where the SQLite file goes")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.db_dir) as folder:
        path = Path(folder) / "bot.sqlite3"
        started = time.monotonic()
        filled = fill(path, messages=args.messages, vector_every=args.vector_every)
        size = sum(f.stat().st_size for f in Path(folder).iterdir()) / 2**20
        print(
            f"filled {path}: {filled.messages:,} messages, {filled.vectors:,} vectors,"
            f" {filled.conversations} conversations, {size:.0f} MiB"
            f" ({time.monotonic() - started:.1f} s)",
            flush=True,
        )
        config = Path(folder) / "config.yaml"
        models = {"chat_model": "gpt-4o-mini", "summary_model": "gpt-4o-mini"}
        settings = {"system_prompt": "-", "llm": models, "storage": {"path": str(path)}}
        config.write_text(yaml.safe_dump(settings))
        server = PostgresServer.start(durable=True)
        try:
            return _migrate(args, config, server.create_database(), filled.messages)
        finally:
            server.stop()


def _migrate(args: argparse.Namespace, config: Path, url: str, messages: int) -> int:
    command = [sys.executable, "-m", "bot", "migrate-store", "--config", str(config)]
    if args.batch_size:
        command += ["--batch-size", str(args.batch_size)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DATABASE_URL": url}
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - started
    print(done.stderr, end="")
    print(done.stdout, end="")
    if done.returncode != 0:
        print(f"bot migrate-store exited {done.returncode}", file=sys.stderr)
        return 1
    per_million = seconds * 1_000_000 / messages
    print(
        f"bot migrate-store: {seconds:.1f} s for {messages:,} messages,"
        f" {messages / seconds:,.0f} messages/s; per million messages about"
        f" {per_million:.0f} s ({per_million / 60:.1f} min)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
