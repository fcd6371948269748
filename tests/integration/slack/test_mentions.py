"""Nothing the bot posts on Slack can ping anyone or hide where a link goes: what the
renderer makes of hostile Markdown, and what the fake Slack receives from the real Bolt app
for a model's answer, a member's /pin and the /pins list."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.adapters.slack.render import split, to_mrkdwn
from bot.config import parse_config
from bot.wiring import App, open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM
from tests.support.fake_slack import BOT_USER, FakeSlack
from tests.support.slack_bot import ENV, USERS, Slack, serving, slack_settings

FORGED = "[docs](https://example.com><!channel><https://example.org)"
LINK = re.compile(r"<(https?://[^\s<>|]+)(?:\|([^<>|]*))?>")
ENTITY = re.compile(r"&(?!amp;|lt;|gt;)")


def unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def assert_safe(posted: str) -> None:
    """Every ``<…>`` is a link to a clean http(s) URL, shown as that URL or as plain words;
    no other ``<`` or ``>`` reaches Slack, and every ``&`` is one of the three escapes."""
    for found in LINK.finditer(posted):
        shown = found.group(2)
        if shown is not None:
            words = unescape(shown)
            assert "://" not in words and "www." not in words.lower(), posted
            assert not re.search(r"[\w-]\.[^\W\d_]{2}", words), posted
    outside = LINK.sub("", posted)
    assert "<" not in outside and ">" not in outside, posted
    assert not ENTITY.search(posted), posted


_PIECES = st.sampled_from(
    [
        "[", "]", "(", ")", "[docs](", "https://", "http://x.io", "example.com", "www.",
        "<", ">", "|", "!", "&", "`", "```", "\n", " ", "a", "#", "# ", "- ", "* ", "*", "_",
        "~~", "**", "&lt;", "&gt;", "&amp;", "&lt;!channel&gt;", "<!channel>", "<!here>",
        "<!everyone>", "<@U1>", "<#C1|x>", "<!subteam^S1|@devs>", "@here", "\u202e", "\x00",
        "\x000\x00", "https://example.com><!channel><https://example.org",
    ]
)  # fmt: skip
_HOSTILE = st.lists(_PIECES, max_size=60).map("".join)


@given(st.one_of(_HOSTILE, st.text()))
def test_no_markdown_makes_a_mention_or_a_disguised_link(markdown: str) -> None:
    posted = to_mrkdwn(markdown)
    assert_safe(posted)
    for chunk in split(posted, limit=200):
        assert_safe(chunk)


@pytest.mark.parametrize(
    ("markdown", "posted"),
    [
        (FORGED, "docs (https://example.com&gt;&lt;!channel&gt;&lt;https://example.org)"),
        ("[a](https://x.io/<@U1>)", "a (https://x.io/&lt;@U1&gt;)"),
        ("[a](https://x.io/|<!here>)", "a (https://x.io/|&lt;!here&gt;)"),
        ("[a](https://x.io/&lt;!here&gt;)", "<https://x.io/&amp;lt;!here&amp;gt;|a>"),
        ("[a](https://x.io/`<!here>`)", "[a](https://x.io/`&lt;!here&gt;`)"),
        ("[a `<!here>`](https://x.io)", "[a `&lt;!here&gt;`](https://x.io)"),
        ("[a](https://x.io/`)", "a (https://x.io/`)"),
        ("[x|<!channel>](https://x.io)", "x|&lt;!channel&gt; (https://x.io)"),
        ("[see <!here> & go!](https://x.io)", "<https://x.io|see &lt;!here&gt; &amp; go!>"),
        ("[https://good.io](https://evil.io)", "https://good.io (https://evil.io)"),
        ("[good.io/login](https://evil.io)", "good.io/login (https://evil.io)"),
        ("[https://x.io/a](https://x.io/a)", "<https://x.io/a>"),
        ("[docs](https://x.io/a?b=1&c=2)", "<https://x.io/a?b=1&amp;c=2|docs>"),
        ("`[a](https://x.io><!channel>)`", "`[a](https://x.io&gt;&lt;!channel&gt;)`"),
        ("```\n" + FORGED + "\n```", "```\n[docs](https://example.com&gt;&lt;!channel&gt;&lt;https://example.org)\n```"),
        ("# " + FORGED, "*docs (https://example.com&gt;&lt;!channel&gt;&lt;https://example.org)*"),
        ("- " + FORGED, "• docs (https://example.com&gt;&lt;!channel&gt;&lt;https://example.org)"),
        ("**[a](https://x.io/>x)**", "*a (https://x.io/&gt;x)*"),
    ],
)  # fmt: skip
def test_hostile_links_are_shown_not_followed(markdown: str, posted: str) -> None:
    assert to_mrkdwn(markdown) == posted
    assert_safe(posted)


def test_a_long_answer_is_never_split_inside_a_link_or_an_escape() -> None:
    words = " ".join(f"[read part {i} here](https://x.io/{i}?a=1&b=2) &amp;" for i in range(400))
    chunks = split(to_mrkdwn(words))
    assert len(chunks) > 1
    for chunk in chunks:
        assert_safe(chunk)
        assert chunk.count("<") == chunk.count(">")


@pytest.fixture
async def fake_slack() -> AsyncIterator[FakeSlack]:
    async with FakeSlack(USERS) as fake:
        yield fake


@pytest.fixture
async def slack(tmp_path: Path, llm: FakeLLM, fake_slack: FakeSlack) -> AsyncIterator[Slack]:
    raw = config_dict(llm.url, tmp_path / "bot.sqlite3", slack=slack_settings(fake_slack))
    app: App
    async with open_app(parse_config(raw, ENV)) as app, serving(app, fake_slack) as slack:
        yield slack


def everything_posted(fake: FakeSlack) -> list[str]:
    """Every text the bot sent: messages, updates, ephemerals and response URL posts."""
    texts = [str(call.params.get("text", "")) for call in fake.calls]
    return texts + [str(call.params.get("text", "")) for call in fake.responses]


async def test_a_forged_link_in_an_answer_or_a_pin_pings_no_one(
    slack: Slack, fake_slack: FakeSlack, llm: FakeLLM
) -> None:
    llm.responder = lambda body: f"See {FORGED} and [the guide](https://x.io/guide)."
    await slack.say("U1", f"<@{BOT_USER}> where are the docs?")
    (answer,) = fake_slack.messages()
    assert answer["text"] == (
        "See docs (https://example.com&gt;&lt;!channel&gt;&lt;https://example.org) and "
        "<https://x.io/guide|the guide>."
    )
    # As Slack sends what was typed: its own mentions as markup, anything else escaped.
    typed = FORGED.replace("<", "&lt;").replace(">", "&gt;")
    await slack.command("pin", f"{typed} <!here> <@U2> &lt;!everyone&gt;")
    await slack.command("pins")
    await slack.command("pins")
    listed = slack.last_response()["text"]
    assert listed.endswith(
        "#1 (ana): docs (https://example.com&gt;&lt;!channel&gt;&lt;https://example.org)"
        " @here &lt;@U2&gt; &lt;!everyone&gt;"
    )
    posted = everything_posted(fake_slack)
    assert len(fake_slack.responses) == 3
    for text in posted:
        assert_safe(text)
        assert not re.search(r"<[!@#]", text), text
