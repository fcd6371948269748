"""A reply's attachments (charts) posted on Slack, with the reply's text as their message.

A file cannot be shown to one person only, and a slash command's response URL takes no files:
the files and the text go to the channel as the bot, through the upload API. Where Slack
refuses (the bot is not in the channel, may not upload), the caller posts the text as it
would have with a line saying why the files are missing (:func:`not_posted`).
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.slack.render import split, to_mrkdwn
from bot.core.models import Reply

log = logging.getLogger(__name__)
_ALT_TEXT_LIMIT = 1000  # what Slack keeps of an image's alt text


def not_posted(reply: Reply, why: str) -> str:
    """The one line saying the reply's files are missing, and why."""
    names = ", ".join(attachment.filename for attachment in reply.attachments)
    return f"_({names} could not be posted here: {why}.)_"


async def post_files(
    client: AsyncWebClient, reply: Reply, *, channel: str, thread: str | None = None
) -> str | None:
    """The reply's files in ``channel`` (or ``thread``), its text their message; None once
    posted, else why not (Slack's error), nothing of the reply having been posted."""
    chunks = split(to_mrkdwn(reply.text))
    uploads = [
        {
            "file": attachment.data,
            "filename": attachment.filename,
            "title": attachment.filename,
            "alt_txt": attachment.alt_text[:_ALT_TEXT_LIMIT],
        }
        for attachment in reply.attachments
    ]
    try:
        await client.files_upload_v2(
            file_uploads=uploads,
            channel=channel,
            thread_ts=thread,
            initial_comment=chunks[0] if chunks else None,
        )
    except (SlackApiError, SlackClientError) as exc:
        why = str(exc.response.get("error")) if isinstance(exc, SlackApiError) else "no answer"
        log.warning("uploading files to %s failed: %s", channel, why)
        return f"Slack said {why}"
    try:
        for chunk in chunks[1:]:
            await client.chat_postMessage(channel=channel, thread_ts=thread, text=chunk)
    except SlackApiError as exc:  # the files and the start of the text are posted
        log.warning(
            "posting the rest of a reply to %s failed: %s", channel, exc.response.get("error")
        )
    return None
