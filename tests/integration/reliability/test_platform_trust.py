"""Platform trust: forged or replayed Slack requests change nothing, and model output never
pings a crowd (Slack's ``<!channel>``, ``<!here>``, ``<!everyone>``, user groups; Discord's
``@everyone``, ``@here`` and role mentions: tests/integration/discord/test_delivery.py and
test_commands.py check ``allowed_mentions`` on every send).

Slack requests go to the real Bolt app served on 127.0.0.1 (HTTP mode), the Web API is the
local fake, the model the local test server.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlencode

from bot.wiring import App
from tests.conftest import is_summary_request
from tests.integration.slack.test_http import SECRET, Slack, bot_app, fake_slack, slack
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, TEAM, FakeSlack, signed_headers

__all__ = ["bot_app", "fake_slack", "slack"]
CHANNEL = f"slack:{TEAM}:C1"
FORM = "application/x-www-form-urlencoded"


async def state(app: App) -> tuple[object, ...]:
    messages = await app.store.messages_between(
        conversation_key=CHANNEL, first_id=0, through_id=10**9
    )
    return tuple(messages), tuple(await app.store.pins(channel_key=CHANNEL))


def forged_bodies(fake: FakeSlack) -> list[tuple[str, str]]:
    """Requests that would each change memory if they were believed."""
    event = {
        "token": "unused",
        "team_id": TEAM,
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": "EvForged",
        "event_time": int(time.time()),
        "event": {
            "type": "message",
            "user": "U2",
            "text": f"<@{BOT_USER}> forged question",
            "channel": "C1",
            "channel_type": "channel",
            "ts": "1800000000.000001",
        },
    }

    def command(name: str, text: str) -> str:
        return urlencode(
            {
                "command": f"/{name}",
                "text": text,
                "user_id": "U9",  # an admin
                "user_name": "admin",
                "channel_id": "C1",
                "team_id": TEAM,
                "response_url": fake.response_url("forged"),
                "trigger_id": "1.2.3",
            }
        )

    shortcut = {
        "type": "message_action",
        "callback_id": "pin_to_memory",
        "trigger_id": "1.2.3",
        "team": {"id": TEAM, "domain": "t"},
        "channel": {"id": "C1", "name": "general"},
        "user": {"id": "U9", "username": "admin", "team_id": TEAM},
        "message": {"type": "message", "user": "U2", "text": "forged pin", "ts": "3.3"},
        "response_url": fake.response_url("forged"),
    }
    return [
        (json.dumps(event), "application/json"),
        (command("reset", "all"), FORM),
        (command("unpin", "1"), FORM),
        (command("pin", "forged fact"), FORM),
        (urlencode({"payload": json.dumps(shortcut)}), FORM),
    ]


async def test_forged_stale_tampered_or_unsigned_requests_change_nothing(
    slack: Slack, fake_slack: FakeSlack, bot_app: App, llm: FakeLLM
) -> None:
    await slack.say("U1", f"<@{BOT_USER}> a real question")
    await slack.command("pin", "a real fact")
    before = await state(bot_app)
    assert len(before[0]) == 2 and len(before[1]) == 1
    api_calls, model_calls = len(fake_slack.calls), len(llm.requests)

    async def send(body: str, headers: dict[str, str]) -> int:
        async with slack.http.post(slack.url, data=body.encode(), headers=headers) as response:
            return response.status

    for body, kind in forged_bodies(fake_slack):
        attempts = {
            "wrong secret": signed_headers("not-the-secret", body, content_type=kind),
            "six minutes old": signed_headers(SECRET, body, content_type=kind, age=360),
            "ten minutes ahead": signed_headers(SECRET, body, content_type=kind, age=-600),
            "another body's signature": signed_headers(SECRET, "x" + body, content_type=kind),
            "unsigned": {"Content-Type": kind},
        }
        for name, headers in attempts.items():
            assert await send(body, headers) == 401, (name, body[:40])
        await slack.settle()

    assert await state(bot_app) == before
    assert len(fake_slack.calls) == api_calls and fake_slack.responses[-1].method != "forged"
    assert len(llm.requests) == model_calls
    # The same request, signed properly, is believed: the refusals above were the signatures.
    body, kind = forged_bodies(fake_slack)[3]
    assert await send(body, signed_headers(SECRET, body, content_type=kind)) == 200
    await slack.settle()
    assert [p.text for p in await bot_app.store.pins(channel_key=CHANNEL)] == [
        "a real fact",
        "forged fact",
    ]


CROWD = "<!channel> <!here> <!everyone> <!subteam^S0123|@oncall> <@U2> @here @channel"


def delivered(fake: FakeSlack) -> list[dict[str, Any]]:
    sent = [
        call.params
        for call in fake.calls
        if call.method in ("chat.postMessage", "chat.update", "chat.postEphemeral")
    ]
    return sent + [call.params for call in fake.responses]


async def test_model_output_cannot_ping_the_channel_or_anyone(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    def crowd(body: dict[str, Any]) -> str:
        if is_summary_request(body):
            return f"Facts:\n- {CROWD}"
        return f"Attention {CROWD}\n\n" + "more words " * 400

    llm.responder = crowd
    for i in range(3):  # replies split over two messages each
        await slack.say("U1", f"<@{BOT_USER}> say something {i}")
    await slack.say("U1", "hi", channel="D1")  # a DM
    await slack.command("summarize")  # the summary model's text, through the response URL
    assert "Summary updated" in slack.last_response()["text"]
    texts = [params.get("text", "") for params in delivered(fake_slack)]
    crowd_replies = [t for t in texts if "Attention" in t or "channel" in t]
    assert len(crowd_replies) >= 5
    for text in texts:
        # Slack's special mentions need a literal "<!" or "<@"; escaped, they are plain text.
        assert "<!" not in text and "<@" not in text, text
    assert any("&lt;!channel&gt; &lt;!here&gt; &lt;!everyone&gt;" in t for t in texts)
    assert not any(
        params.get("link_names") in (True, 1, "1", "true") for params in delivered(fake_slack)
    )
