"""Three ``bot run`` processes (Slack HTTP mode) on one PostgreSQL database, behind a front that
plays Slack and its load balancer: 1,000 signed events over 50 channels, each sent to the next
replica in turn and some sent again, as Slack's retries, to another one. One replica is killed
with SIGKILL mid-run and started again; events it could not take go to the next replica, as
Slack retries an event that got no 200.

Every message that got its 200 must be stored exactly once, every one addressed to the bot
answered exactly once (in memory and on Slack), a channel's answers must come in the order its
messages arrived, whichever replica took them, no summary may be made twice, and the database
must be consistent at the end (``bot doctor``, term counts, nothing left awaiting an answer)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import yaml

from bot.adapters.slack.outbox import THINKING
from tests.conftest import config_dict, fake_summary, is_summary_request
from tests.e2e.reliability.test_crash import free_port_taken
from tests.e2e.slack.test_run import ROOT, fake_slack_thread, wait_for
from tests.e2e.test_run_shutdown import free_port
from tests.support.fake_llm import FakeLLM, Reply, echo
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers

__all__ = ["fake_slack_thread"]

REPLICAS, CHANNELS, PER_CHANNEL = 3, 50, 20
KILL_AFTER = 400  # acknowledged events before one replica is killed
SECRET = "replicas-secret"
ANSWER = re.compile(r"^echo: \[Ana\] c(\d+) m(\d+)\?$")


class Model:
    """Echoes each question after a short while (so that answers are in flight when a replica
    dies) and records the summary requests it is sent, with when."""

    def __init__(self) -> None:
        self.summaries: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        if is_summary_request(body):
            with self._lock:
                self.summaries.append((time.monotonic(), json.dumps(body["messages"])))
            return Reply(text=fake_summary(body), delay=0.05)
        return Reply(text=str(echo(body)), delay=0.1)


class Replicas:
    """The ``bot run`` processes, each on its own port, all on one database."""

    def __init__(self, tmp_path: Path, llm: FakeLLM, fake: FakeSlack, database: str) -> None:
        self.ports = [free_port() for _ in range(REPLICAS)]
        self.procs: list[subprocess.Popen[str]] = []
        self.logs: list[str] = []
        self.configs: list[Path] = []
        for port in self.ports:
            slack = {"enabled": True, "mode": "http", "host": "127.0.0.1", "port": port}
            data = config_dict(
                llm.url,
                tmp_path / "unused.sqlite3",
                slack={**slack, "api_base_url": fake.api_url},
                memory={"max_context_tokens": 300, "summary_retry_seconds": 0},
            )
            config = tmp_path / f"config-{port}.yaml"
            config.write_text(yaml.safe_dump(data))
            self.configs.append(config)
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "DATABASE_URL": database}
        self.env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET)

    def start(self, index: int) -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot", "run", "--config", str(self.configs[index])],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        if index < len(self.procs):
            self.procs[index] = proc
        else:
            self.procs.append(proc)
        wait_for(lambda: free_port_taken(self.ports[index]), f"replica {index} to serve", 60)
        return proc

    def kill(self, index: int) -> None:
        proc = self.procs[index]
        proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=30)
        self.logs.append(stderr)

    def stop(self) -> str:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            _, stderr = proc.communicate(timeout=60)
            self.logs.append(stderr)
        return "\n".join(self.logs)


class Front:
    """Slack and its load balancer: each event goes to the next replica in turn; one that
    gets no 200 is sent again (``X-Slack-Retry-Num``) to the next replica, and every fifth is
    sent again to another replica after its 200, as Slack does when the 200 came too late."""

    def __init__(self, ports: list[int]) -> None:
        self.ports = ports
        self.acknowledged = 0
        self.late_retries = 0
        self._turn = 0
        self._lock = threading.Lock()

    def deliver(self, n: int, event: dict[str, Any]) -> bool:
        with self._lock:
            first = self._turn
            self._turn += 1
        body = json.dumps(
            {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{n}", "event": event}
        )
        taken_by = None
        for attempt in range(2 * len(self.ports)):
            replica = (first + attempt) % len(self.ports)
            if self._post(self.ports[replica], body, attempt):
                taken_by = replica
                break
            time.sleep(0.2)
        if taken_by is None:
            return False
        with self._lock:
            self.acknowledged += 1
        if n % 5 == 0:
            other = self.ports[(taken_by + 1) % len(self.ports)]
            if self._post(other, body, 1):
                with self._lock:
                    self.late_retries += 1
        return True

    def _post(self, port: int, body: str, attempt: int) -> bool:
        headers = signed_headers(SECRET, body, content_type="application/json")
        if attempt:
            headers.update({"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": "timeout"})
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/slack/events", data=body.encode(), headers=headers
        )
        try:
            with urllib.request.urlopen(request, timeout=3) as response:
                return int(response.status) == 200
        except (OSError, urllib.error.HTTPError):
            return False


def question(channel: int, k: int) -> str:
    return f"c{channel} m{k}?"


def send_channel(front: Front, channel: int) -> list[str]:
    """The channel's messages in order, each sent once the one before it got its 200; every
    other one addressed to the bot. The texts acknowledged."""
    acknowledged = []
    for k in range(PER_CHANNEL):
        text = question(channel, k)
        event = {"type": "message", "user": "U1", "channel": f"C{channel:03d}"}
        event.update(channel_type="channel", ts=f"{1_700_000_000 + k}.{channel:06d}")
        event["text"] = f"<@{BOT_USER}> {text}" if k % 2 == 0 else text
        if front.deliver(channel * PER_CHANNEL + k, event):
            acknowledged.append(text)
    return acknowledged


def answers_in_order(fake: FakeSlack) -> dict[int, list[int]]:
    """Per channel, the questions whose answers Slack showed, in the order it did (a message
    updated again with the text it already shows shows nothing new)."""
    found: dict[int, list[int]] = defaultdict(list)
    showing: dict[str, str] = {}
    for call in fake.calls:
        if call.method in ("chat.postMessage", "chat.update"):
            ts, text = str(call.params.get("ts")), str(call.params.get("text", ""))
            match = ANSWER.match(text)
            if match and showing.get(ts) != text:
                found[int(match.group(1))].append(int(match.group(2)))
            showing[ts] = text
    return found


def calls_for(fake: FakeSlack, channel: int) -> list[tuple[str, Any]]:
    """The Web API calls about a channel, for a failure's message."""
    return [
        (call.method, call.params)
        for call in fake.calls
        if call.params.get("channel") == f"C{channel:03d}"
    ]


async def read_database(url: str) -> dict[str, Any]:
    db = await asyncpg.connect(url)
    try:
        users = [r[0] for r in await db.fetch("SELECT content FROM messages WHERE role = 'user'")]
        replies = await db.fetch(
            "SELECT q.content, COUNT(a.id) FROM messages q"
            " LEFT JOIN messages a ON a.reply_to = q.id AND a.role = 'assistant'"
            " WHERE q.role = 'user' GROUP BY q.content"
        )
        summaries = await db.fetch(
            "SELECT conversation, covers_through_turn, message_count FROM summaries ORDER BY id"
        )
        covered = {}
        for row in summaries:
            covered[(row[0], row[1])] = await db.fetchval(
                "SELECT COUNT(*) FROM messages WHERE conversation = $1"
                " AND COALESCE(reply_to, id) <= $2",
                row[0],
                row[1],
            )
        # The search term counts agree with the messages they count.
        miscounted = await db.fetchval(
            "SELECT COUNT(*) FROM (SELECT conversation, term, COUNT(*) AS docs FROM messages,"
            " unnest(terms) AS term GROUP BY conversation, term) m"
            " FULL JOIN search_terms s USING (conversation, term)"
            " WHERE m.docs IS DISTINCT FROM NULLIF(s.docs, 0)"
        )
        awaiting = await db.fetchval("SELECT COUNT(*) FROM awaiting")
    finally:
        await db.close()
    return {
        "users": users,
        "replies": {row[0]: row[1] for row in replies},
        "summaries": [(row[0], row[1], row[2]) for row in summaries],
        "covered": covered,
        "miscounted": miscounted,
        "awaiting": awaiting,
    }


def test_three_replicas_one_killed_store_and_answer_every_message_once_in_order(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack, postgres_url: str
) -> None:
    fake = fake_slack_thread
    model = Model()
    llm_thread.responder = model
    replicas = Replicas(tmp_path, llm_thread, fake, postgres_url)
    for index in range(REPLICAS):
        replicas.start(index)
    wait_for(lambda: len(fake.called("auth.test")) >= REPLICAS, "the replicas to sign in")
    front = Front(replicas.ports)
    killed_at = 0.0
    try:
        with ThreadPoolExecutor(max_workers=CHANNELS) as pool:
            sent = [pool.submit(send_channel, front, c) for c in range(CHANNELS)]
            wait_for(lambda: front.acknowledged >= KILL_AFTER, "events before the kill", 120)
            replicas.kill(1)
            killed_at = time.monotonic()
            time.sleep(2)
            replicas.start(1)
            acknowledged = [text for future in sent for text in future.result()]
        addressed = {question(c, k) for c in range(CHANNELS) for k in range(0, PER_CHANNEL, 2)}

        def all_answered() -> bool:
            return sum(len(v) for v in answers_in_order(fake).values()) >= len(addressed)

        wait_for(all_answered, "every addressed message answered", 180)
        time.sleep(2)  # room for a second answer, were one coming
    finally:
        logs = replicas.stop()
    assert "Traceback" not in logs, logs[-5000:]
    assert len(acknowledged) == CHANNELS * PER_CHANNEL
    assert front.late_retries > 0

    found = asyncio.run(read_database(postgres_url))
    stored = Counter(found["users"])
    assert {text: n for text, n in stored.items() if n != 1} == {}
    assert set(stored) == set(acknowledged)
    answered_in_memory = {text: n for text, n in found["replies"].items() if n}
    assert {t: n for t, n in answered_in_memory.items() if n != 1} == {}
    assert set(answered_in_memory) == addressed

    shown = answers_in_order(fake)
    for channel in range(CHANNELS):
        assert shown[channel] == list(range(0, PER_CHANNEL, 2)), calls_for(fake, channel)
    texts = [message["text"] for message in fake.messages()]
    # No "Thinking…" is left, even one a replica killed before recording it had shown.
    assert THINKING not in texts
    assert len(texts) == len(addressed), Counter(texts).most_common(3)

    assert found["summaries"], "no summary was made"
    last: dict[str, int] = {}
    for conversation, through, count in found["summaries"]:
        assert through > last.get(conversation, -1), (conversation, through)
        last[conversation] = through
        assert found["covered"][(conversation, through)] == count
    # A summary request sent again is only the killed replica's, taken up after its lease ran out.
    first_sent: dict[str, float] = {}
    for at, body in sorted(model.summaries):
        if body in first_sent:
            assert first_sent[body] <= killed_at < at, "the same turns folded twice"
        first_sent.setdefault(body, at)
    assert found["miscounted"] == 0
    assert found["awaiting"] == 0
    doctor = subprocess.run(
        [sys.executable, "-m", "bot", "doctor", "--config", str(replicas.configs[0])],
        env=replicas.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
