"""Soak: N messages at a given rate through the Slack HTTP endpoints of running ``bot run``
processes, on SQLite or PostgreSQL.

Each bot runs as its own process (Slack HTTP mode) with its real code; this script plays Slack
(signed ``event_callback`` requests to ``/slack/events``, and a fake Web API that the bots post
to) and the model (``tests/support/fake_llm.py``, answering instantly by default). Each message
mentions the bot in one of ``--channels`` channels, carries a unique marker, and is sent at its
scheduled time without waiting for earlier replies. With ``--replicas N``, N processes share
one database, each on its own port, and the script is the load balancer in front of them:
round-robin over the messages and over each channel's messages too (message n, the
(n div C)th of channel n mod C, goes to replica (n mod C + n div C) mod N), so that every
replica answers in every conversation. Run from the repository root::

    .venv/bin/python bench/soak.py --messages 2000 --rate 40 --channels 20
    .venv/bin/python bench/soak.py --store postgres --replicas 2 --messages 600 \\
        --rates 30,35,40,45,50,60

``--store postgres`` starts a throwaway PostgreSQL server (``tests/support/postgres.py``, fsync
on) unless ``--server-url`` names a running one (its admin URL); each step gets a new database
there, given to the bots in ``DATABASE_URL``. On SQLite each step gets a new file.
``--rates`` runs one step per rate in turn, each with fresh bots, fakes and database, and ends
with one row per step and the highest sustained rate: the last before the first step that
lost, doubled or refused anything or had an overhead p99 of ``--p99-limit`` ms or more.

Printed figures, per step:

- accepted: requests a bot answered with HTTP 200 (Slack's acknowledgement);
- delivered: answers that reached the fake Slack (``chat.update`` of the *Thinking…* message
  with the echo of that very message);
- lost: accepted messages missing from the database after the bots stopped, and accepted
  messages never answered; doubled: accepted messages stored twice, answered twice in the
  database or delivered twice to Slack; misanswered (shown when not 0): answers in the
  database echoing another message than the one they reply to; all must be 0;
- overhead p50/p99: per message, from sending the request to the answer arriving at the fake
  Slack, minus the time the model server spent on that message's requests: the bot's own
  work (Bolt, engine, the store, two Web API calls, the HTTP round trips), not the model's;
- send lag p99: how late the script sent a message against its schedule (the script's loop
  is busy: it and the fakes are near their limit);
- CPU per message: user + system time, from the first timed message until every answer
  arrived, of the bots (all replicas), the PostgreSQL server (all its processes; only when
  started here) and this script (load generator and fakes), divided by the messages; how
  busy the whole machine was meanwhile (all cores; steal: taken by the hypervisor), and how
  many cores other processes on it used (its busy time less all of the above);
- peak memory: the largest bot's maximum resident set size.

The machine's other processes are counted, not stopped: on a shared machine
``--quiet-below 0.3`` waits before each step (``--quiet-wait`` seconds at most) until they use
fewer than 0.3 cores over 5 seconds, and the table's last column says what they used during it.

``--budget`` (default 1,000 tokens) is small enough that summaries run during the soak: with
messages spread evenly, every conversation reaches it at once (about 25 messages each), and the
burst of summaries that follows is part of every step's p99.
``--synchronous`` (default full) sets ``storage.synchronous`` (SQLite).
Exits 1 when anything is lost, doubled, refused or a bot exits badly.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp
from soak_fakes import SECRET, TimedLLM, TimedSlack, event_body, marker
from soak_fleet import Contents, CpuMeter, CpuUse, Database, Postgres, Replica, until_quiet

from bot.core.memory.tokens import install_encodings
from tests.support.fake_slack import signed_headers


@dataclass
class Step:
    rate: float
    accepted: int
    refused: int
    delivered: int
    not_stored: int
    not_answered: int
    doubled: int
    """Stored twice, answered twice in the database, or delivered twice to Slack."""
    misanswered: int
    """Answers in the database echoing another message than the one they reply to."""
    overhead_ms: list[float]
    model_ms: list[float]
    lag_ms: list[float]
    summaries: int
    summary_requests: int
    awaiting: int
    sending: float
    cpu: CpuUse
    """From the first timed message until every answer arrived."""
    peak_mib: float = 0.0
    warnings: list[str] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.not_stored + self.not_answered

    @property
    def clean(self) -> bool:
        bad = self.lost or self.doubled or self.misanswered or self.refused
        return not (bad or any(self.exit_codes))

    def p99(self) -> float:
        return percentile(self.overhead_ms, 0.99) if self.overhead_ms else float("inf")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class LoadGenerator:
    """Slack's side of the Events API: signed requests, message n to replica
    (n mod channels + n div channels) mod N: round-robin over all messages and over each
    channel's."""

    def __init__(self, http: aiohttp.ClientSession, urls: list[str], channels: int) -> None:
        self.http, self.urls, self.channels = http, urls, channels
        self.sent_at: dict[int, float] = {}
        self.lag: dict[int, float] = {}
        """How late each message left against its schedule."""
        self.accepted: set[int] = set()
        self.refused = 0

    async def send(self, n: int, due: float) -> None:
        body = event_body(n, self.channels)
        headers = signed_headers(SECRET, body, content_type="application/json")
        self.sent_at[n] = time.perf_counter()
        self.lag[n] = self.sent_at[n] - due
        try:
            url = self.urls[(n % self.channels + n // self.channels) % len(self.urls)]
            async with self.http.post(url, data=body.encode(), headers=headers) as response:
                if response.status == 200:
                    self.accepted.add(n)
                else:
                    self.refused += 1
        except aiohttp.ClientError:
            self.refused += 1

    async def one_by_one(self, numbers: range, slack: TimedSlack) -> None:
        """Each message once the one before is answered."""
        for n in numbers:
            await self.send(n, time.perf_counter())
            while n not in slack.delivered_at:  # noqa: ASYNC110 (state owned by the fakes)
                await asyncio.sleep(0.01)

    async def at_rate(self, numbers: range, rate: float) -> float:
        """Each message at its time, whatever the earlier ones are doing; the seconds until
        the last was acknowledged."""
        started = time.perf_counter()
        tasks = []
        for i, n in enumerate(numbers):
            due = started + i / rate
            if (delay := due - time.perf_counter()) > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(self.send(n, due)))
        await asyncio.gather(*tasks)
        return time.perf_counter() - started


async def run_step(
    args: argparse.Namespace, rate: float, folder: Path, database: Database, server_pid: int | None
) -> Step:
    """Fresh fakes and bots on ``database``: the warm-up, ``args.messages`` at ``rate``, the
    bots stopped, then what the database and the fakes hold."""
    llm, slack = TimedLLM(args.model_delay), TimedSlack()
    await llm.start()
    await slack.start()
    replicas: list[Replica] = []
    try:
        for i in range(args.replicas):
            replicas.append(
                Replica.start(
                    folder / f"replica{i}",
                    database,
                    llm_url=llm.url,
                    api_url=slack.api_url,
                    budget=args.budget,
                    synchronous=args.synchronous,
                )
            )
        connector = aiohttp.TCPConnector(limit=200)
        async with aiohttp.ClientSession(connector=connector) as http:
            await asyncio.gather(*(replica.wait_until_serving(http) for replica in replicas))
            load = LoadGenerator(http, [replica.url for replica in replicas], args.channels)
            # Warm-up: the first messages load the tokenizer and open connections in each
            # replica; they are checked for loss like the rest but left out of the timings.
            await load.one_by_one(range(args.warmup), slack)
            meter = CpuMeter([replica.process.pid for replica in replicas], server_pid)
            sending = await load.at_rate(range(args.warmup, args.warmup + args.messages), rate)
            deadline = time.perf_counter() + args.settle
            while time.perf_counter() < deadline and not load.accepted <= set(slack.delivered_at):  # noqa: ASYNC110
                await asyncio.sleep(0.05)
            cpu = meter.stop()
        exit_codes = list(await asyncio.gather(*(replica.stop() for replica in replicas)))
    finally:
        for replica in replicas:
            replica.kill()
        await llm.aclose()
        await slack.aclose()
    step = tally(args, rate, load, llm, slack, await database.contents(), sending, cpu)
    step.exit_codes = exit_codes
    step.peak_mib = max(replica.peak_kib for replica in replicas) / 1024
    step.warnings = [line for replica in replicas for line in replica.warnings()]
    return step


def tally(
    args: argparse.Namespace,
    rate: float,
    load: LoadGenerator,
    llm: TimedLLM,
    slack: TimedSlack,
    contents: Contents,
    sending: float,
    cpu: CpuUse,
) -> Step:
    """The step's figures from what the load generator sent, the fakes saw and the database
    holds."""
    stored, answered, misanswered = count_in(contents)
    accepted = load.accepted
    delivered = accepted & set(slack.delivered_at)
    unanswered = {n for n in accepted if not answered[n]} | (accepted - delivered)
    doubled = {n for n in accepted if stored[n] > 1 or answered[n] > 1 or slack.deliveries[n] > 1}
    measured = sorted(n for n in delivered if n >= args.warmup)
    return Step(
        rate=rate,
        accepted=len(accepted),
        refused=load.refused,
        delivered=len(delivered),
        not_stored=len({n for n in accepted if not stored[n]}),
        not_answered=len(unanswered),
        doubled=len(doubled),
        misanswered=misanswered,
        overhead_ms=[
            (slack.delivered_at[n] - load.sent_at[n] - llm.model_seconds.get(n, 0.0)) * 1000
            for n in measured
        ],
        model_ms=[llm.model_seconds.get(n, 0.0) * 1000 for n in measured],
        lag_ms=[lag * 1000 for n, lag in load.lag.items() if n >= args.warmup],
        summaries=contents.summaries,
        summary_requests=llm.summaries,
        awaiting=contents.awaiting,
        sending=sending,
        cpu=cpu,
    )


def count_in(contents: Contents) -> tuple[Counter[int], Counter[int], int]:
    """How many times each marker's message is stored, how many answers in the database reply
    to it, and how many answers echo another message than the one they reply to."""
    stored: Counter[int] = Counter()
    marker_of: dict[int, int] = {}
    for id_, role, content, _ in contents.messages:
        if role == "user" and (n := marker(content)) is not None:
            stored[n] += 1
            marker_of[id_] = n
    answered: Counter[int] = Counter()
    misanswered = 0
    for _, role, content, reply_to in contents.messages:
        if role == "assistant" and reply_to in marker_of:
            answered[marker_of[reply_to]] += 1
            misanswered += marker(content) != marker_of[reply_to]
    return stored, answered, misanswered


def replicas_named(args: argparse.Namespace) -> str:
    return f"{args.replicas} {args.store} replica{'s' if args.replicas > 1 else ''}"


def report(step: Step, args: argparse.Namespace) -> None:
    def line(label: str, text: str) -> None:
        print(f"{label + ':':<21}{text}")

    cpu, per = step.cpu, 1000 / args.messages
    server = "" if cpu.server is None else f"  server {cpu.server * per:.1f}"
    line(
        "messages sent",
        f"{args.messages:,} at {step.rate:g}/s over {args.channels} channels,"
        f" {replicas_named(args)}",
    )
    line("sending took", f"{step.sending:.1f} s (all answered after {cpu.seconds:.1f} s)")
    line("messages accepted", f"{step.accepted:,} (refused {step.refused})")
    line("replies delivered", f"{step.delivered:,}")
    line("lost", f"{step.not_stored} not stored, {step.not_answered} not answered")
    line("doubled", f"{step.doubled} (stored, answered or delivered twice)")
    if step.misanswered:
        line("misanswered", f"{step.misanswered} answers echo another message")
    if step.overhead_ms:
        line(
            "overhead (ms)",
            f"p50 {statistics.median(step.overhead_ms):.1f}  p99 {step.p99():.1f}"
            f"  max {max(step.overhead_ms):.1f}",
        )
        line("model time (ms)", f"p50 {statistics.median(step.model_ms):.1f}  (excluded above)")
    line("send lag (ms)", f"p99 {percentile(step.lag_ms, 0.99):.1f}")
    line("CPU ms per message", f"bots {cpu.bots * per:.1f}{server}  script {cpu.script * per:.1f}")
    line(
        "machine busy",
        f"{cpu.busy:.0%} of all cores, other processes {cpu.others / cpu.seconds:.2f} cores"
        f" (steal {cpu.steal:.0%})",
    )
    line("summaries made", f"{step.summaries} ({step.summary_requests} summary requests)")
    line("peak memory (bot)", f"{step.peak_mib:.1f} MiB")
    if step.awaiting:
        line("still awaiting", f"{step.awaiting} messages")
    if step.warnings:
        line("bot warnings", f"{len(step.warnings)}, first: {step.warnings[0]}")
    if any(step.exit_codes):
        line("bots exited with", ", ".join(map(str, step.exit_codes)))


def table(steps: list[Step], args: argparse.Namespace) -> None:
    """One row per step (rows of several runs make one table), then the sustained rate."""
    per = 1000 / args.messages
    print(
        "\n| bots | rate | accepted | lost | doubled | overhead p50 | p99 | send lag p99 "
        "| CPU ms/msg bots | server | script | machine busy | others (cores) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for step in steps:
        cpu = step.cpu
        p50 = statistics.median(step.overhead_ms) if step.overhead_ms else float("nan")
        server = "—" if cpu.server is None else f"{cpu.server * per:.1f}"
        print(
            f"| {args.store} ×{args.replicas} | {step.rate:g}/s | {step.accepted:,} "
            f"| {step.lost} | {step.doubled} "
            f"| {p50:.1f} ms | {step.p99():.1f} ms | {percentile(step.lag_ms, 0.99):.1f} ms "
            f"| {cpu.bots * per:.1f} | {server} | {cpu.script * per:.1f} "
            f"| {cpu.busy:.0%} | {cpu.others / cpu.seconds:.2f} |"
        )
    sustained = None
    for step in sorted(steps, key=lambda s: s.rate):
        if not step.clean or step.p99() >= args.p99_limit:
            break
        sustained = step.rate
    shown = "none" if sustained is None else f"{sustained:g}/s"
    print(
        f"\nsustained ({replicas_named(args)}, p99 < {args.p99_limit:g} ms, nothing lost): {shown}"
    )


async def soak(args: argparse.Namespace) -> int:
    install_encodings()
    # Stopped by SIGTERM, the script stops its bots and server too (the finally clauses).
    main = asyncio.current_task()
    assert main is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, main.cancel)
    top = Path(tempfile.mkdtemp(prefix="soak-"))
    postgres = Postgres(args.server_url) if args.store == "postgres" else None
    steps: list[Step] = []
    try:
        for index, rate in enumerate(args.rates):
            folder = top / f"step{index}"
            folder.mkdir()
            if args.quiet_below is not None:
                waited, used = await until_quiet(args.quiet_below, longest=args.quiet_wait)
                print(f"waited {waited:.0f} s for a quiet machine: {used:.2f} cores busy")
            if postgres is None:
                step = await run_step(args, rate, folder, Database(folder / "bot.sqlite3"), None)
            else:
                database = await postgres.create(folder)
                try:
                    step = await run_step(args, rate, folder, database, postgres.postmaster())
                finally:
                    await postgres.drop(database)
            if len(args.rates) > 1:
                print(f"\n-- step {index + 1} of {len(args.rates)}")
            report(step, args)
            sys.stdout.flush()
            steps.append(step)
    finally:
        if postgres is not None:
            postgres.stop()
    table(steps, args)
    if all(step.clean for step in steps):
        shutil.rmtree(top, ignore_errors=True)
        return 0
    print(f"something was lost, doubled or refused: the bots' logs are in {top}", file=sys.stderr)
    return 1


def rates(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=2000, help="timed messages per step")
    parser.add_argument("--rate", type=float, default=40.0, help="messages per second")
    parser.add_argument("--rates", type=rates, help="one step per rate: 20,40,60 (over --rate)")
    parser.add_argument("--channels", type=int, default=20)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--replicas", type=int, default=1, help="bot run processes")
    parser.add_argument(
        "--server-url", help="postgres: a running server's admin URL (default: start one)"
    )
    parser.add_argument(
        "--quiet-below",
        type=float,
        help="before each step, wait until the machine's other processes use fewer cores",
    )
    parser.add_argument(
        "--quiet-wait", type=float, default=600.0, help="seconds to wait for that at most"
    )
    parser.add_argument("--p99-limit", type=float, default=50.0, help="ms, for the sustained rate")
    parser.add_argument("--budget", type=int, default=1000, help="memory.max_context_tokens")
    parser.add_argument(
        "--synchronous", choices=["full", "normal"], default="full", help="storage.synchronous"
    )
    parser.add_argument("--model-delay", type=float, default=0.0, help="seconds per answer")
    parser.add_argument("--warmup", type=int, default=20, help="untimed messages first")
    parser.add_argument("--settle", type=float, default=120.0, help="seconds to wait for answers")
    args = parser.parse_args()
    args.rates = args.rates or [args.rate]
    try:
        return asyncio.run(soak(args))
    except asyncio.CancelledError:
        print("stopped (SIGTERM)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
