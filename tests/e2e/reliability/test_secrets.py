"""Secrets: tokens and keys appear in no log line and no message, even when requests fail.

``bot run`` runs as a process in Slack HTTP mode with DEBUG logs, every secret set in its
environment, against the local fake Slack and the local model server; both are made to fail
in the ways that tend to leak: the model server echoing the key back in its errors (as OpenAI
does for a wrong key), Slack refusing the token, a forged request. Nothing the bot writes (its
stdout and stderr) or sends (to Slack, or to the model outside the Authorization header)
contains a secret.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from tests.conftest import config_dict, is_summary_request
from tests.e2e.slack.test_run import ROOT, fake_slack_thread, wait_for
from tests.e2e.test_run_shutdown import free_port
from tests.support.fake_llm import FakeLLM, Reply
from tests.support.fake_slack import BOT_USER, TEAM, Failure, FakeSlack, signed_headers

__all__ = ["fake_slack_thread"]
SECRETS = {
    "OPENAI_API_KEY": "sk-proj-SECRETopenai0123456789",
    "SUMMARY_API_KEY": "sk-proj-SECRETsummary0123456789",
    "SLACK_BOT_TOKEN": "xoxb-SECRET-bot-0123456789",
    "SLACK_APP_TOKEN": "xapp-SECRET-app-0123456789",
    "SLACK_SIGNING_SECRET": "SECRETsigning0123456789",
    "DISCORD_TOKEN": "SECRETdiscord.0123456789.abcdef",
}


def echoing_key(status: int, key: str) -> Reply:
    message = f"Incorrect API key provided: {key}. You can find your API key at ..."
    return Reply(status=status, error={"error": {"message": message, "code": "invalid_api_key"}})


def post(url: str, body: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_no_secret_in_any_log_line_or_message_when_requests_fail(
    tmp_path: Path, llm_thread: FakeLLM, fake_slack_thread: FakeSlack
) -> None:
    fake, llm = fake_slack_thread, llm_thread
    port = free_port()
    data = config_dict(
        llm.url,
        tmp_path / "bot.sqlite3",
        slack={"enabled": True, "mode": "http", "host": "127.0.0.1", "port": port}
        | {"api_base_url": fake.api_url},
        logging={"level": "DEBUG"},
        llm={"max_retries": 1, "summary_base_url": llm.url.replace("127.0.0.1", "localhost")},
        memory={"strategy": "summary"},
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data))
    key, bot_token = SECRETS["OPENAI_API_KEY"], SECRETS["SLACK_BOT_TOKEN"]

    def model(body: dict[str, object]) -> Reply:
        if is_summary_request(body):  # type: ignore[arg-type]
            return echoing_key(401, SECRETS["SUMMARY_API_KEY"])
        return Reply(text="fine")

    llm.script(echoing_key(401, key), echoing_key(500, key), echoing_key(500, key))
    llm.script(echoing_key(400, key))
    llm.responder = model
    fake.fail("chat.postEphemeral", Failure(error="invalid_auth"))
    fake.fail("users.info", Failure(error="invalid_auth"))
    fake.fail("chat.update", Failure(status=500, error="internal_error"))
    url = f"http://127.0.0.1:{port}/slack/events"
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "--config", str(config)],
        env={**os.environ, "PYTHONPATH": str(ROOT), **SECRETS},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: fake.called("auth.test"), "the bot to sign in")

        def signed(body: str, kind: str, secret: str = SECRETS["SLACK_SIGNING_SECRET"]) -> int:
            for _ in range(100):  # until the port is served
                try:
                    return post(url, body, signed_headers(secret, body, content_type=kind))
                except urllib.error.URLError:
                    time.sleep(0.05)
            raise AssertionError("the bot never served its port")

        def mention(n: int) -> None:
            event = {
                "type": "message",
                "user": "U1",
                "text": f"<@{BOT_USER}> question {n}",
                "channel": "C1",
                "channel_type": "channel",
                "ts": f"50.{n}",
            }
            body = {"type": "event_callback", "team_id": TEAM, "event_id": f"Ev{n}"}
            assert signed(json.dumps({**body, "event": event}), "application/json") == 200

        assert signed('{"type": "url_verification"}', "application/json", secret="forged") == 401
        # 401; 500 and its retry; 400: each echoes the key; then a good answer.
        for n, requests in enumerate((1, 3, 4, 5), start=1):
            mention(n)
            wait_for(lambda r=requests: len(llm.chat_requests) >= r, f"question {n}")
        form = {"command": "/summarize", "user_id": "U1", "channel_id": "C1", "team_id": TEAM}
        form["response_url"] = fake.response_url("summarize")
        signed("&".join(f"{k}={v}" for k, v in form.items()), "application/x-www-form-urlencoded")
        wait_for(lambda: fake.responses, "the /summarize answer")
        time.sleep(0.3)
    finally:
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "chat model failed" in stderr and "invalid_auth" in stderr  # the failures happened
    assert "summary model failed" in fake.responses[-1].params["text"]
    sent = json.dumps([c.params for c in fake.calls + fake.responses])
    to_model = json.dumps([r.body for r in llm.requests])
    for name, secret in SECRETS.items():
        assert secret not in stdout + stderr, f"{name} in the bot's output"
        assert secret not in sent, f"{name} sent to Slack"
        assert secret not in to_model, f"{name} sent to the model"
    # The secrets were in use all along, only where they belong.
    assert fake.calls[0].headers["authorization"] == f"Bearer {bot_token}"
    assert llm.requests[0].headers["authorization"] == f"Bearer {key}"
