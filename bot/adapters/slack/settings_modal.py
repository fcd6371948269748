"""``/settings persona`` on Slack: a modal with a box of several lines (a slash command's text
is one line), filled with the persona in force.

The command opens it (``views.open``, with the command's ``trigger_id``) for whoever may
change settings there; anyone else gets the refusal instead. Submitting it runs ``/settings
persona TEXT`` as the person who submitted it, with their rights where the command was typed,
worked out anew. A refused value (not an admin, too big for the budget) shows under the box;
an accepted one closes the modal and is told as command replies are: through the command's
response URL, or, once that has expired (30 minutes), as a message only they see.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.outbox import answer_command
from bot.adapters.slack.places import Place, look_up
from bot.adapters.slack.render import split, to_mrkdwn
from bot.adapters.slack.translate import conversation_for, may_manage
from bot.core.commands.settings import refusal
from bot.core.handler import Handler
from bot.core.models import CommandCall, Reply, ReplyKind
from bot.core.ports.store import StorageError
from bot.core.settings.keys import PERSONA_CHARS

log = logging.getLogger(__name__)

CALLBACK_ID = "settings_persona"
BLOCK = "persona"
ACTION = "text"
BOX_CHARS = 3000
"""The most a ``plain_text_input`` takes (Slack's ceiling for ``max_length``)."""
ANSWER_SECONDS = 2.5
"""Slack waits 3 seconds for the answer to a submission, then tells the person it failed."""
_SLOW = "The bot took too long to save it; please try again."

Payload = Mapping[str, Any]


def asks_for_modal(call: CommandCall) -> bool:
    """``/settings persona`` with no text after it."""
    words = call.argument.split()
    return call.name.lower() == "settings" and [w.lower().lstrip("-") for w in words] == ["persona"]


@dataclass(frozen=True)
class Origin:
    """Where the command was typed, carried in the modal's ``private_metadata``."""

    team: str
    channel: str
    response_url: str

    def to_metadata(self) -> str:
        return json.dumps({"team": self.team, "channel": self.channel, "url": self.response_url})

    @classmethod
    def from_metadata(cls, text: str) -> Origin | None:
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict) or not data.get("team") or not data.get("channel"):
            return None
        return cls(str(data["team"]), str(data["channel"]), str(data.get("url") or ""))


def _plain(text: str) -> dict[str, Any]:
    return {"type": "plain_text", "text": text}


def persona_view(persona: str, origin: Origin) -> dict[str, Any]:
    """The modal, its box filled with ``persona`` when it fits there."""
    box: dict[str, Any] = {
        "type": "plain_text_input",
        "action_id": ACTION,
        "multiline": True,
        "max_length": min(BOX_CHARS, PERSONA_CHARS),
    }
    fits = len(persona) <= box["max_length"]
    if fits:
        box["initial_value"] = persona
    blocks: list[dict[str, Any]] = [
        {
            "type": "input",
            "block_id": BLOCK,
            "label": _plain("Who the bot is here, and how it answers"),
            "element": box,
            "hint": _plain(
                "For this conversation and its threads, from the next message. "
                "/settings reset persona goes back to the default."
            ),
        }
    ]
    if not fits:
        note = (
            f"The persona in force has {len(persona):,} characters, more than this box "
            "holds, so it is not shown; what you save replaces it."
        )
        blocks.append({"type": "context", "elements": [_plain(note)]})
    return {
        "type": "modal",
        "callback_id": CALLBACK_ID,
        "private_metadata": origin.to_metadata(),
        "title": _plain("Persona"),
        "submit": _plain("Save"),
        "close": _plain("Cancel"),
        "blocks": blocks,
    }


@dataclass(frozen=True)
class Submission:
    """A submitted persona modal: who, where the command was typed, and the text."""

    origin: Origin
    user_id: str
    user_name: str
    text: str


def submission_of(body: Payload) -> Submission | None:
    """A ``view_submission`` of the persona modal; None when it lacks what it should hold."""
    view, user = body.get("view") or {}, body.get("user") or {}
    origin = Origin.from_metadata(str(view.get("private_metadata") or ""))
    user_id = str(user.get("id") or "")
    if origin is None or not user_id:
        return None
    value = (((view.get("state") or {}).get("values") or {}).get(BLOCK) or {}).get(ACTION) or {}
    name = str(user.get("username") or user.get("name") or user_id)
    return Submission(origin, user_id, name, str(value.get("value") or ""))


def to_call(submission: Submission, *, admins: Collection[str], place: Place) -> CommandCall:
    """The submission as ``/settings persona TEXT`` on the channel the command was typed in."""
    origin = submission.origin
    return CommandCall(
        conversation=conversation_for(origin.team, origin.channel, None, None),
        name="settings",
        argument=f"persona {submission.text}",
        user_id=submission.user_id,
        user_name=submission.user_name,
        can_manage=may_manage(submission.user_id, admins=admins, place=place),
        private=place.private,
    )


def _error(text: str) -> Reply:
    return Reply(text, kind=ReplyKind.ERROR, ephemeral=True)


class PersonaModal:
    """Opens the modal for ``/settings persona`` and runs what is submitted in it."""

    def __init__(
        self, *, client: AsyncWebClient, handler: Handler, admins: Collection[str]
    ) -> None:
        self.client = client
        self.handler = handler
        self.admins = admins

    async def open(self, call: CommandCall, body: Payload) -> Reply | None:
        """Open the modal for the command ``call`` (its form ``body``); the reply to send
        instead when the caller may not change settings or Slack would not open it."""
        if (refused := refusal(call)) is not None:
            return refused
        try:
            resolved = await self.handler.engine.settings.resolve(call.conversation)
        except StorageError:  # the store logged the cause
            return _error("The persona could not be read: the bot's storage is failing.")
        origin = Origin(
            call.conversation.workspace,
            call.conversation.channel,
            str(body.get("response_url") or ""),
        )
        view = persona_view(resolved.settings.system_prompt, origin)
        try:
            await self.client.views_open(trigger_id=str(body.get("trigger_id") or ""), view=view)
        except SlackClientError as exc:
            reason = exc.response.get("error") if isinstance(exc, SlackApiError) else exc
            log.warning("slack: views.open failed: %s", reason)
            return _error(
                f"Slack would not open the persona form ({reason}); try again, or set a "
                "one-line persona with /settings persona TEXT."
            )
        return None

    async def submitted(self, body: Payload, ack: AsyncAck) -> None:
        """Answer a submission within Slack's 3 seconds: errors under the box, or closed and
        the result told where the command was typed."""
        submission = submission_of(body)
        if submission is None:
            await ack()
            return
        try:
            reply = await asyncio.wait_for(self._run(submission), ANSWER_SECONDS)
        except TimeoutError:
            await ack(response_action="errors", errors={BLOCK: _SLOW})
            return
        if reply.kind is ReplyKind.ERROR:
            await ack(response_action="errors", errors={BLOCK: reply.text})
            return
        await ack()
        self.handler.spawn(self._tell(submission, reply), "slack persona saved")

    async def _run(self, submission: Submission) -> Reply:
        place = await look_up(self.client, submission.origin.channel)
        return await self.handler.command(to_call(submission, admins=self.admins, place=place))

    async def _tell(self, submission: Submission, reply: Reply) -> None:
        origin = submission.origin
        if origin.response_url:
            try:
                if await answer_command(AsyncRespond(response_url=origin.response_url), reply):
                    return
            except (aiohttp.ClientError, OSError, TimeoutError) as exc:
                log.info("slack: the persona command's response URL failed: %s", exc)
        for chunk in split(to_mrkdwn(reply.text)):
            await self.client.chat_postEphemeral(
                channel=origin.channel, user=submission.user_id, text=chunk
            )
