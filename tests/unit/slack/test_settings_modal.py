"""The pure parts of Slack's settings: what ``conversations.info`` makes of a conversation,
who may change settings there, and the persona modal's view and submission."""

from __future__ import annotations

from typing import Any

import pytest

from bot.adapters.slack.places import UNKNOWN, Place, place_of
from bot.adapters.slack.settings_modal import (
    CALLBACK_ID,
    Origin,
    asks_for_modal,
    persona_view,
    submission_of,
    to_call,
)
from bot.adapters.slack.translate import to_command
from bot.core.models import CommandCall, Conversation

ORIGIN = Origin("T1", "C1", "https://hooks.slack.test/commands/1")


@pytest.mark.parametrize(
    ("channel", "place"),
    [
        ({"id": "C1", "is_channel": True, "is_private": False}, Place(private=False)),
        ({"id": "C2", "is_channel": True, "is_private": True}, Place(private=True)),
        ({"id": "G1", "is_group": True}, Place(private=True)),
        ({"id": "G2", "is_mpim": True, "is_private": True}, Place(private=True)),
        ({"id": "D1", "is_im": True, "user": "U1"}, Place(private=True, dm_with="U1")),
    ],
)
def test_conversations_info_says_what_is_private_and_whose_dm_it_is(
    channel: dict[str, Any], place: Place
) -> None:
    assert place_of(channel) == place


def test_a_command_is_private_where_slack_says_so_and_a_dms_owner_manages_it() -> None:
    form = {"command": "/settings", "text": "answer all", "user_id": "U1", "user_name": "ana"}
    form |= {"channel_id": "D1", "team_id": "T1"}
    own = to_command(form, admins=(), place=Place(private=True, dm_with="U1"))
    assert own.private and own.can_manage
    assert not to_command(form, admins=(), place=Place(private=True, dm_with="U2")).can_manage
    unknown = to_command(form, admins=())  # Slack did not say: private, admins only
    assert unknown.private and not unknown.can_manage
    assert to_command(form, admins={"U1"}, place=UNKNOWN).can_manage
    public = to_command({**form, "channel_id": "C1"}, admins=(), place=Place(private=False))
    assert not public.private and not public.can_manage


def call(name: str, argument: str) -> CommandCall:
    return CommandCall(Conversation("slack", "T1", "C1"), name, argument, "U1", "ana")


@pytest.mark.parametrize(
    ("name", "argument", "modal"),
    [
        ("settings", "persona", True),
        ("settings", "  Persona ", True),
        ("settings", "persona Be brief.", False),
        ("settings", "", False),
        ("settings", "model", False),
        ("pin", "persona", False),
    ],
)
def test_only_settings_persona_alone_opens_the_modal(name: str, argument: str, modal: bool) -> None:
    assert asks_for_modal(call(name, argument)) is modal


def test_the_modal_shows_the_persona_in_force_when_it_fits_its_box() -> None:
    view = persona_view("Be brief.\nBe kind.", ORIGIN)
    assert view["callback_id"] == CALLBACK_ID
    assert Origin.from_metadata(view["private_metadata"]) == ORIGIN
    (box,) = [b["element"] for b in view["blocks"] if b["type"] == "input"]
    assert box["multiline"] and box["initial_value"] == "Be brief.\nBe kind."
    assert box["max_length"] == 3000
    long = persona_view("x" * 3500, ORIGIN)
    (box,) = [b["element"] for b in long["blocks"] if b["type"] == "input"]
    assert "initial_value" not in box  # Slack refuses a box filled past its max_length
    assert "3,500 characters" in str(long["blocks"][-1])


def submitted(text: str, metadata: str) -> dict[str, Any]:
    values = {"persona": {"text": {"type": "plain_text_input", "value": text}}}
    view = {"callback_id": CALLBACK_ID, "private_metadata": metadata, "state": {"values": values}}
    user = {"id": "U1", "username": "ana", "team_id": "T1"}
    return {"type": "view_submission", "user": user, "view": view}


def test_a_submission_is_settings_persona_by_its_submitter_where_the_command_was_typed() -> None:
    typed = "Be brief.\nSay < and & as they are."  # a text input's value comes unescaped
    submission = submission_of(submitted(typed, ORIGIN.to_metadata()))
    assert submission is not None and submission.origin == ORIGIN
    made = to_call(submission, admins=(), place=Place(private=True, dm_with="U1"))
    assert (made.name, made.argument) == ("settings", f"persona {typed}")
    assert made.conversation.key == "slack:T1:C1" and made.user_name == "ana"
    assert made.can_manage and made.private
    assert not to_call(submission, admins=("U9",), place=Place(private=False)).can_manage
    assert submission_of(submitted("x", "not json")) is None
    assert submission_of(submitted("x", '{"team": "T1"}')) is None
