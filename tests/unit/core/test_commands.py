"""The command table in-process, against the in-memory store."""

from __future__ import annotations

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from tests.support.core import running_core, unit_config

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")


def command(
    name: str, argument: str = "", where: Conversation = GENERAL, **kw: bool
) -> CommandCall:
    return CommandCall(where, name, argument, "ana", "Ana", **kw)


async def test_pin_unpin_and_list() -> None:
    async with running_core(unit_config()) as core:
        engine = core.engine
        first = await run_command(engine, command("pin", "alpha"))
        await run_command(engine, command("pin", "beta"))
        listing = await run_command(engine, command("pins"))
        unpinned = await run_command(engine, command("unpin", "#1"))
        missing = await run_command(engine, command("unpin", "1"))
        other = await run_command(engine, command("unpin", "2", where=RANDOM))
        again = await run_command(engine, command("pin", "gamma"))
        left = [p.text for p in await core.store.pins(channel_key=GENERAL.channel_key)]
    assert first.text.startswith("Pinned #1: alpha")
    assert "#1 (Ana): alpha" in listing.text and "#2 (Ana): beta" in listing.text
    assert unpinned.text == "Unpinned #1."
    assert missing.kind is ReplyKind.ERROR and "no pin #1" in missing.text
    assert other.kind is ReplyKind.ERROR  # another channel cannot remove this one's pin
    assert again.text.startswith("Pinned #3")  # a removed pin's number is not used again
    assert left == ["beta", "gamma"]


async def test_remember_profile_and_forget() -> None:
    async with running_core(unit_config()) as core:
        engine = core.engine
        kept = await run_command(engine, command("remember", "I prefer tea"))
        listing = await run_command(engine, command("profile"))
        forgot = await run_command(engine, command("forget", "all"))
        after = await run_command(engine, command("profile"))
    assert kept.ephemeral and "I prefer tea" in kept.text
    assert "I prefer tea" in listing.text
    assert forgot.kind is not ReplyKind.ERROR
    assert "I prefer tea" not in after.text


async def test_reset_needs_permission() -> None:
    async with running_core(unit_config()) as core:
        await core.engine.handle_message(
            IncomingMessage(GENERAL, "ana", "Ana", "hello", addressed=True)
        )
        refused = await run_command(core.engine, command("reset", can_manage=False))
        stored = await core.store.count_messages(conversation_key=GENERAL.key)
    assert refused.kind is ReplyKind.ERROR and "admins" in refused.text
    assert stored == 2


async def test_unknown_and_malformed_commands_get_clear_answers() -> None:
    async with running_core(unit_config()) as core:
        engine = core.engine
        unknown = await run_command(engine, command("frobnicate"))
        assert unknown.kind is ReplyKind.ERROR and "Unknown command /frobnicate" in unknown.text
        assert "Usage: /pin" in (await run_command(engine, command("pin", "   "))).text
        assert "Usage: /unpin" in (await run_command(engine, command("unpin", "abc"))).text
        assert "Usage: /reset" in (await run_command(engine, command("reset", "everything"))).text


async def test_stats_breaks_down_the_prompt() -> None:
    async with running_core(unit_config()) as core:
        await run_command(core.engine, command("pin", "pinned fact"))
        await core.engine.handle_message(
            IncomingMessage(GENERAL, "ana", "Ana", "hello there", addressed=True)
        )
        reply = await run_command(core.engine, command("stats"))
        preview = await core.engine.preview(GENERAL)
    assert reply.ephemeral
    assert f"Prompt: {preview.prompt.tokens:,} / 8,000 tokens" in reply.text
    assert "Messages stored: 2; in the window: 2" in reply.text
    assert "chat: 1 request, " in reply.text
