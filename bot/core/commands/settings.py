"""``/settings``: what the bot is set to in this channel, where each value comes from, and
changes to it by the channel's admins, each recorded."""

from __future__ import annotations

from bot.core.commands.common import error, info, name_of
from bot.core.commands.pins import MAX_PIN_SHARE, prompt_pins
from bot.core.engine import Engine
from bot.core.models import CommandCall, Reply, utc_minute
from bot.core.ports.settings import SettingChange
from bot.core.prompt.layout import render_pins
from bot.core.settings import BadValue, Key, Resolved, Settings
from bot.core.settings.keys import BY_NAME, KEYS, SPEND_KEYS
from bot.core.settings.source import CONFIG

HISTORY_SHOWN = 20
USAGE = (
    "Usage: /settings shows them; /settings KEY shows one; /settings KEY VALUE sets it here; "
    "/settings reset KEY (or all) goes back to the default; /settings history lists changes."
)


async def settings(engine: Engine, call: CommandCall) -> Reply:
    words = call.argument.strip().split(None, 1)
    if not words:
        return info(await _listing(engine, call))
    first, rest = words[0].lower(), (words[1] if len(words) > 1 else "")
    if first == "history":
        return info(await _history(engine, call))
    if first == "reset":
        return await _reset(engine, call, rest.strip().lower())
    key = BY_NAME.get(first.lstrip("-"))
    if key is None:
        names = ", ".join(k.name for k in KEYS)
        return error(f"There is no setting {first!r}. Settings: {names}. {USAGE}")
    if not rest.strip():
        return info(await _one(engine, call, key))
    return await _change(engine, call, key, rest)


def _origin(resolved: Resolved, key: Key) -> str:
    origin = resolved.origins[key.name]
    return f"config: {key.config}" if origin == CONFIG else origin


def _not_in_force(resolved: Resolved, key: Key) -> str:
    """What is stored for ``key`` but not in force, when something is: the config no longer
    allows it."""
    refused = resolved.refused.get(key.name)
    if refused is None:
        return ""
    return f" — {_short(refused.value)} ({refused.origin}) is not in force: {refused.reason}"


async def _listing(engine: Engine, call: CommandCall) -> str:
    resolved = await engine.settings.resolve(call.conversation)
    lines = [f"Settings in {call.conversation.key}:"]
    for key in KEYS:
        value = key.show(resolved.settings)
        lines.append(
            f"• {key.name}: {value} ({_origin(resolved, key)}){_not_in_force(resolved, key)}"
        )
    tail = "Channel admins change them: " if not call.can_manage else "Change them: "
    lines.append(tail + "/settings KEY VALUE, /settings reset KEY; /settings history.")
    return "\n".join(lines)


async def _one(engine: Engine, call: CommandCall, key: Key) -> str:
    resolved = await engine.settings.resolve(call.conversation)
    value = (
        resolved.settings.system_prompt if key.name == "persona" else key.show(resolved.settings)
    )
    return (
        f"{key.name} ({key.help}): {value}\n"
        f"From {_origin(resolved, key)}{_not_in_force(resolved, key)}. "
        f"Takes {key.allowed}: /settings {key.name} VALUE."
    )


async def _history(engine: Engine, call: CommandCall) -> str:
    changes = await engine.store.setting_changes(scope=call.conversation.key, limit=HISTORY_SHOWN)
    if not changes:
        return "No setting was ever changed here."
    lines = [f"Latest changes to the settings of {call.conversation.key}, newest first:"]
    for change in changes:
        old = _short(change.old) if change.old is not None else "(default)"
        new = _short(change.new) if change.new is not None else "(default)"
        lines.append(f"• {utc_minute(change.at)} UTC, {change.by_name}: {change.key} {old} → {new}")
    return "\n".join(lines)


def _short(value: str) -> str:
    line = " ".join(value.split())
    return line if len(line) <= 60 else line[:59] + "…"


def refusal(call: CommandCall) -> Reply | None:
    """The answer to a caller who may not change settings here; None for an admin."""
    if call.can_manage:
        return None
    return error(
        "Only channel admins can change settings (Slack: slack.admin_user_ids; Discord: "
        "Manage Channels or a role of discord.admin_role_ids). Everyone can see them: /settings."
    )


async def _change(engine: Engine, call: CommandCall, key: Key, typed: str) -> Reply:
    if (refused := refusal(call)) is not None:
        return refused
    try:
        value = key.parse(typed, engine.settings.config)
    except BadValue as exc:
        return error(str(exc))
    if key.name in SPEND_KEYS and call.conversation.thread is not None:
        return error(f"{key.name}: set it in the channel; its caps cover its threads.")
    if key.name == "memory-group" and not call.conversation.shares_workspace:
        return error("memory-group: this DM is in no server; a group is channels of one server.")
    resolved = await engine.settings.resolve(call.conversation)
    values = {**resolved.own, key.name: value}
    if key.name == "memory-group" and call.private and values.get("share-private") != "on":
        return error(
            "memory-group: this channel is private (or a DM); joining a group lets the "
            "group's other channels find its messages. An admin of this channel opts in "
            "first with /settings share-private on."
        )
    after = await engine.settings.preview(call.conversation, values)
    if (too_big := await _head_too_big(engine, call, after, key)) is not None:
        return too_big
    scope = call.conversation.key
    change = await _store(engine, call, key.name, value)
    lines = [
        f"{key.name} is now {key.show(after)} in {scope}"
        + ("" if change.old != change.new else " (it already was)")
        + ("." if change.old is None else f" (was {_short(change.old)}).")
    ]
    if key.name == "share-private" and value == "off" and "memory-group" in resolved.own:
        await _store(engine, call, "memory-group", None)
        lines.append(f"This channel left the memory group {resolved.own['memory-group']}.")
    lines.append("It takes effect on the next message.")
    return info("\n".join(lines))


async def _store(engine: Engine, call: CommandCall, name: str, value: str | None) -> SettingChange:
    return await engine.store.change_setting(
        scope=call.conversation.key,
        key=name,
        value=value,
        by_id=call.user_id,
        by_name=name_of(call),
        at=engine.clock(),
    )


async def _head_too_big(
    engine: Engine, call: CommandCall, after: Settings, key: Key
) -> Reply | None:
    """A persona or budget that would leave the conversation too little room is refused, as
    a pin is (``/pin``)."""
    if key.name not in ("persona", "budget"):
        return None
    pins = await prompt_pins(engine, call.conversation)
    needed = engine.tokenizer.count(after.system_prompt) + engine.tokenizer.count(render_pins(pins))
    allowed = int(engine.budget(after) * MAX_PIN_SHARE)
    if needed <= allowed:
        return None
    return error(
        f"{key.name}: the persona and pins would take {needed:,} tokens, more than half of "
        f"the budget ({allowed:,}), leaving too little room for the conversation."
    )


async def _reset(engine: Engine, call: CommandCall, name: str) -> Reply:
    if (refused := refusal(call)) is not None:
        return refused
    resolved = await engine.settings.resolve(call.conversation)
    if name == "all":
        names = list(resolved.own)
    elif name in BY_NAME:
        names = [name]
    else:
        return error(f"Usage: /settings reset KEY (or all). Settings: {', '.join(BY_NAME)}.")
    cleared = [n for n in names if n in resolved.own]
    if "share-private" in cleared and "memory-group" in resolved.own:
        cleared.append("memory-group")  # as share-private off: no sharing without the opt-in
    cleared = list(dict.fromkeys(cleared))
    if not cleared:
        return info(f"Nothing to reset: {name} is not set in {call.conversation.key}.")
    for cleared_name in cleared:
        await _store(engine, call, cleared_name, None)
    after = await engine.settings.resolve(call.conversation)
    shown = ", ".join(f"{n} {BY_NAME[n].show(after.settings)}" for n in cleared)
    return info(f"Back to the defaults in {call.conversation.key}: {shown}.")
