"""Slack payloads into the core's values, and replies into mrkdwn messages: pure functions."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from bot.adapters.slack.render import FENCE, MAX_CHARS, split, to_mrkdwn
from bot.adapters.slack.translate import (
    Policy,
    to_command,
    to_deletion,
    to_edit,
    to_incoming,
    to_pin,
    to_reaction,
)
from bot.core.models import Conversation

BOT = "UBOT"
POLICY = Policy(bot_user_id=BOT)
NAMES = {"U1": "Ana", "U2": "Bo"}


def event(text: str, **fields: Any) -> dict[str, Any]:
    message = {"type": "message", "user": "U1", "text": text, "channel": "C1", "ts": "100.1"}
    message.update(fields)
    return {"type": "event_callback", "team_id": "T1", "event_id": "Ev1", "event": message}


def test_a_mention_is_addressed_and_loses_the_mention() -> None:
    incoming = to_incoming(event(f"<@{BOT}> who owns billing, <@U2>?"), policy=POLICY, names=NAMES)
    assert incoming is not None
    assert incoming.conversation == Conversation("slack", "T1", "C1")
    assert incoming.conversation.key == "slack:T1:C1"
    assert (incoming.author_id, incoming.author_name) == ("U1", "Ana")
    assert incoming.text == "who owns billing, @Bo?"
    assert incoming.addressed and incoming.message_id == "100.1"
    assert incoming.sent_at.timestamp() == 100.1


def test_plain_channel_chatter_is_taken_unaddressed() -> None:
    # Whether it is kept is the handler's rule (tests/integration/test_handler.py).
    incoming = to_incoming(event("lunch?"), policy=POLICY, names=NAMES)
    assert incoming is not None and not incoming.addressed


def test_dms_mentions_and_replies_in_the_bots_threads_are_addressed() -> None:
    dm = to_incoming(event("hi", channel="D1", channel_type="im"), policy=POLICY, names=NAMES)
    assert dm is not None and dm.addressed
    # A channel that answers everything is the channel's setting, the handler's rule.
    plain = to_incoming(event("hi", channel="CALL"), policy=POLICY, names=NAMES)
    assert plain is not None and not plain.addressed
    reply = event("and then?", ts="101.5", thread_ts="100.0", parent_user_id=BOT)
    in_thread = to_incoming(reply, policy=POLICY, names=NAMES)
    assert in_thread is not None and in_thread.addressed
    assert in_thread.conversation == Conversation("slack", "T1", "C1", thread="100.0")
    others = to_incoming(
        event("x", ts="101.5", thread_ts="100.0", parent_user_id="U2"), policy=POLICY, names=NAMES
    )
    assert others is not None and not others.addressed


def test_a_threads_root_belongs_to_its_channel() -> None:
    root = to_incoming(event("root", ts="100.0", thread_ts="100.0"), policy=POLICY, names=NAMES)
    assert root is not None and root.conversation.thread is None


def test_bots_subtypes_and_other_events_are_not_user_input() -> None:
    for body in (
        event("from a bot", bot_id="B1"),
        event("joined", subtype="channel_join"),
        event("no user", user=None),
        {"type": "event_callback", "team_id": "T1", "event": {"type": "reaction_added"}},
    ):
        assert to_incoming(body, policy=POLICY, names=NAMES) is None


def test_edits_and_deletions_name_the_stored_message() -> None:
    changed = event("", subtype="message_changed", user=None)
    changed["event"]["message"] = {"user": "U1", "text": f"<@{BOT}> fixed", "ts": "100.1"}
    edit = to_edit(changed, policy=POLICY, names=NAMES)
    assert edit is not None and (edit.message_id, edit.text) == ("100.1", "fixed")
    assert edit.conversation.key == "slack:T1:C1"
    own = event("", subtype="message_changed", user=None)
    own["event"]["message"] = {"bot_id": "B1", "text": "thinking", "ts": "100.2"}
    assert to_edit(own, policy=POLICY, names=NAMES) is None
    deleted = event("", subtype="message_deleted", user=None, deleted_ts="101.5")
    deleted["event"]["previous_message"] = {"ts": "101.5", "thread_ts": "100.0"}
    gone = to_deletion(deleted)
    assert gone is not None and gone.conversation.key == "slack:T1:C1:100.0"
    assert gone.message_id == "101.5"


def test_slash_commands_act_on_the_channel_and_admins_can_manage() -> None:
    form = {"command": "/reset", "text": "all", "user_id": "U1", "user_name": "ana"}
    form |= {"channel_id": "C1", "team_id": "T1"}
    call = to_command(form, admins={"U1"})
    assert (call.name, call.argument, call.conversation.key) == ("reset", "all", "slack:T1:C1")
    assert call.can_manage
    assert not to_command(form, admins={"U9"}).can_manage


def test_the_pin_shortcut_pins_the_message_with_its_author() -> None:
    body = {
        "type": "message_action",
        "callback_id": "pin_to_memory",
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "user": {"id": "U2", "name": "bo"},
        "message": {"user": "U1", "text": "release freeze Dec 15", "ts": "5.5", "thread_ts": "5.0"},
    }
    call = to_pin(body, names=NAMES)
    assert call.name == "pin" and call.argument == "Ana: release freeze Dec 15"
    assert call.conversation.key == "slack:T1:C1" and call.user_name == "Bo"


def test_markdown_becomes_mrkdwn() -> None:
    markdown = (
        "# Plan\n**bold** and *italic* and ~~gone~~, see [docs](https://x.io/a).\n"
        "- one\n* two\n`a**b**` & <tag>\n```python\nx = a**2 < 3\n```"
    )
    assert to_mrkdwn(markdown) == (
        "*Plan*\n*bold* and _italic_ and ~gone~, see <https://x.io/a|docs>.\n"
        "• one\n• two\n`a**b**` &amp; &lt;tag&gt;\n```\nx = a**2 &lt; 3\n```"
    )
    assert to_mrkdwn("<!channel> <@U1> & co") == "&lt;!channel&gt; &lt;@U1&gt; &amp; co"


def test_long_replies_split_at_paragraphs_near_the_limit() -> None:
    paragraphs = [f"paragraph {i} " + "word " * 150 for i in range(12)]
    chunks = split("\n\n".join(p.strip() for p in paragraphs))
    assert len(chunks) > 1
    assert all(len(c) <= MAX_CHARS for c in chunks)
    assert all(c.startswith("paragraph") for c in chunks)
    assert all(len(c) > MAX_CHARS // 2 for c in chunks[:-1])


def test_a_long_code_block_is_closed_and_reopened() -> None:
    code = FENCE + "\n" + "\n".join(f"line {i} = {i * 7}" for i in range(600)) + "\n" + FENCE
    chunks = split("Here:\n\n" + code + "\n\nDone.")
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk) <= MAX_CHARS and chunk.count(FENCE) % 2 == 0
    joined = "\n".join(chunks)
    assert all(f"line {i} = {i * 7}" in joined for i in range(600))


_PIECES = st.sampled_from(["a", "word ", " ", "\n", "```", "x", "é", "\n\n", "`"])


@given(st.lists(_PIECES, max_size=600).map("".join))
def test_splitting_keeps_every_character_and_balances_fences(text: str) -> None:
    chunks = split(text, limit=200)
    assert all(len(c) <= 200 for c in chunks)
    assert all(c.count(FENCE) % 2 == 0 for c in chunks)
    squeezed = "".join(c.replace(FENCE, "") for c in chunks)
    assert "".join(squeezed.split()) == "".join(text.replace(FENCE, "").split())


def test_slack_markup_reads_as_plain_text_in_the_prompt() -> None:
    text = (
        "see <https://x.io/a|the doc>, <https://y.io> and <#C9|ops> <!here> "
        "<!subteam^S1|@devs> <@U2> <@U7> a &lt; b &amp;&amp; c &gt; d"
    )
    incoming = to_incoming(event(text), policy=POLICY, names=NAMES)
    assert incoming is not None
    assert incoming.text == (
        "see the doc (https://x.io/a), https://y.io and #ops @here @devs @Bo <@U7> a < b && c > d"
    )


def test_command_text_is_unescaped() -> None:
    form = {"command": "/pin", "text": "a &lt; b &amp; <https://x.io>", "user_id": "U1"}
    form |= {"team_id": "T1", "channel_id": "C1"}
    assert to_command(form, admins=()).argument == "a < b & https://x.io"


def test_payloads_without_a_team_or_channel_are_not_messages() -> None:
    no_channel = event("hi", channel="")
    assert to_incoming(no_channel, policy=POLICY, names=NAMES) is None
    no_team = {**event("hi"), "team_id": ""}
    assert to_incoming(no_team, policy=POLICY, names=NAMES) is None


def reaction(kind: str, name: str, item: dict[str, Any]) -> dict[str, Any]:
    event = {"type": kind, "user": "U1", "reaction": name, "item": item, "event_ts": "1.1"}
    return {"type": "event_callback", "team_id": "T1", "event_id": "Ev9", "event": event}


def test_only_a_pushpin_on_a_message_is_a_mark() -> None:
    on_message = {"type": "message", "channel": "C1", "ts": "100.1"}
    added = to_reaction(reaction("reaction_added", "pushpin", on_message))
    assert added is not None and added.on and added.message_id == "100.1"
    assert added.conversation == Conversation("slack", "T1", "C1")
    removed = to_reaction(reaction("reaction_removed", "pushpin", on_message))
    assert removed is not None and not removed.on
    assert to_reaction(reaction("reaction_added", "thumbsup", on_message)) is None
    on_file = {"type": "file", "file": "F1"}
    assert to_reaction(reaction("reaction_added", "pushpin", on_file)) is None
    assert to_reaction(event("hello")) is None
