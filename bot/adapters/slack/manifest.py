"""The Slack app manifest, made from the command table: what the adapter registers is what the
app declares. Socket Mode by default; with a request URL, HTTP mode (Events API)."""

from __future__ import annotations

from typing import Any

import yaml

from bot.adapters.slack.translate import PIN_SHORTCUT
from bot.config import SlackAssistantConfig
from bot.core.commands import COMMANDS, CommandSpec

_HEADER = """\
# Slack app manifest for channel-memory-bot, made by `bot slack-manifest` from the bot's
# command table. Create the app from it:
# https://api.slack.com/apps → Create New App → From an app manifest → paste this.
"""
_SOCKET = """\
# Socket Mode (slack.mode: socket): no public URL. For HTTP mode, paste the output of
# `bot slack-manifest --request-url https://YOUR-HOST/slack/events` instead.
"""
_HTTP = """\
# HTTP mode (slack.mode: http): Slack sends every request to {url}.
"""

BOT_SCOPES = (
    "app_mentions:read",
    "assistant:write",  # the assistant pane: status line, titles, suggested prompts
    "channels:history",
    "channels:read",  # conversations.info: whether a slash command's channel is private
    "chat:write",
    "commands",
    "files:write",  # a long reply's whole text is shared as a file; charts are posted
    "groups:history",
    "groups:read",  # conversations.info on a private channel
    "im:history",
    "im:read",  # conversations.info on a DM: whose it is (its owner changes its settings)
    "im:write",
    "mpim:history",
    "mpim:read",  # conversations.info on a group DM
    "reactions:read",  # reaction_added / reaction_removed
    "reactions:write",  # slack.status_reaction (off by default): 👀 on a question being answered
    "users:read",
)
# Every message in channels the bot is in (mentions included), private channels, DMs and
# group DMs (edits and deletions arrive as message subtypes); a 📌 reaction marks a message
# important; a thread opened in the assistant pane is greeted (its messages are DM messages).
BOT_EVENTS = (
    "assistant_thread_context_changed",
    "assistant_thread_started",
    "message.channels",
    "message.groups",
    "message.im",
    "message.mpim",
    "reaction_added",
    "reaction_removed",
)


ASSISTANT_DESCRIPTION = (
    "A chatbot that remembers: each conversation here keeps its own memory, so you can come"
    " back to it any time."
)


def usage_hint(spec: CommandSpec) -> str:
    """What follows the command in its usage: ``/pin TEXT`` → ``TEXT``; empty for none."""
    return spec.usage.removeprefix(f"/{spec.name}").strip()


def _slash_command(spec: CommandSpec, request_url: str | None) -> dict[str, Any]:
    command: dict[str, Any] = {"command": f"/{spec.name}", "description": spec.description}
    if hint := usage_hint(spec):
        command["usage_hint"] = hint
    if request_url:
        command["url"] = request_url
    command["should_escape"] = False
    return command


def _assistant_view() -> dict[str, Any]:
    """The assistant pane ("Agents & AI Apps"), with the suggested prompts the config has by
    default (``slack.assistant.suggested_prompts``; the bot sets the configured ones on each
    thread it greets)."""
    view: dict[str, Any] = {"assistant_description": ASSISTANT_DESCRIPTION}
    prompts = SlackAssistantConfig().suggested_prompts
    if prompts:
        view["suggested_prompts"] = [prompt.model_dump() for prompt in prompts]
    return view


def manifest(request_url: str | None = None) -> dict[str, Any]:
    """The manifest: Socket Mode when ``request_url`` is None, else every request (events,
    interactivity, each slash command) to ``request_url``, Bolt's one endpoint."""
    events: dict[str, Any] = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict[str, Any] = {"is_enabled": True}
    if request_url:
        events = {"request_url": request_url, **events}
        interactivity["request_url"] = request_url
    return {
        "display_information": {
            "name": "Channel Memory Bot",
            "description": "A chatbot that remembers each channel's conversation.",
            "background_color": "#2c3e50",
        },
        "features": {
            "app_home": {
                "home_tab_enabled": False,
                "messages_tab_enabled": True,
                "messages_tab_read_only_enabled": False,
            },
            "bot_user": {"display_name": "memorybot", "always_online": True},
            "assistant_view": _assistant_view(),
            "slash_commands": [_slash_command(spec, request_url) for spec in COMMANDS],
            "shortcuts": [
                {
                    "name": "Pin to memory",
                    "type": "message",
                    "callback_id": PIN_SHORTCUT,
                    "description": "Keep this message in every prompt of this channel",
                }
            ],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": request_url is None,
            "token_rotation_enabled": False,
        },
    }


def manifest_yaml(request_url: str | None = None) -> str:
    """The manifest as YAML, in the order Slack's editor shows it, with a header comment."""
    mode = _HTTP.format(url=request_url) if request_url else _SOCKET
    body = yaml.safe_dump(manifest(request_url), sort_keys=False, allow_unicode=True, width=100)
    return _HEADER + mode + body
