"""Memory a workspace shares, with its walls, in-process on the in-memory store: pins kept in
every channel of a workspace (``/pin --everywhere``) and memory groups whose channels recall
each other's messages (``/settings memory-group NAME``); a private channel's messages reach
no other channel's prompt unless its admin opted in, and nothing crosses workspaces."""

from __future__ import annotations

from dataclasses import replace

from bot.adapters.discord.translate import conversation_for
from bot.core.commands import run_command
from bot.core.commands.pins import PINS_LISTED_CHARS
from bot.core.memory.group import GROUP_HEADING
from bot.core.memory.recall import RECALL_HEADING
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from bot.core.prompt.layout import PINS_HEADING, WORKSPACE_PINS_HEADING
from tests.support.core import Core, running_core, unit_config
from tests.support.fake_chat import Messages

C1 = Conversation("slack", "T1", "C1")
C2 = Conversation("slack", "T1", "C2")
C3 = Conversation("slack", "T1", "C3")
PRIVATE = Conversation("slack", "T1", "G1")
DM = Conversation("slack", "T1", "D1")
THREAD = replace(C1, thread="100.0")
ELSEWHERE = Conversation("slack", "T2", "C1")
"""Another workspace, its channel named as one of T1's."""
DISCORD_DM = conversation_for(guild_id=None, channel_id=55, parent_id=None)
"""A DM on Discord: in no server."""
RECALL = {"strategy": "full", "max_context_tokens": 2000, "recall_tokens": 600}


def call(
    name: str,
    argument: str = "",
    where: Conversation = C1,
    *,
    admin: bool = True,
    private: bool = False,
) -> CommandCall:
    return CommandCall(where, name, argument, "U1", "Ana", can_manage=admin, private=private)


async def run(core: Core, name: str, argument: str = "", **options: object) -> Reply:
    return await run_command(core.engine, call(name, argument, **options))  # type: ignore[arg-type]


async def say(core: Core, where: Conversation, text: str, *, addressed: bool = False) -> None:
    await core.engine.handle_message(IncomingMessage(where, "U2", "Bo", text, addressed=addressed))


async def ask(core: Core, where: Conversation, text: str = "@bot hello?") -> Messages:
    """The prompt the model gets for a question asked in ``where``."""
    await say(core, where, text, addressed=True)
    return core.model.chats()[-1]


async def chatter(core: Core, where: Conversation, count: int = 6) -> None:
    for i in range(count):
        await say(core, where, f"chatter {i}: lunch plans and the weather again")


def recall_block(prompt: Messages) -> str:
    recalls = [m["content"] for m in prompt[1:] if m["role"] == "system"]
    return recalls[0] if recalls else ""


# -- pins kept in every channel of a workspace ---------------------------------------------


async def test_a_workspace_pin_reaches_every_conversation_of_its_workspace_and_no_other() -> None:
    async with running_core(unit_config()) as core:
        pinned = await run(core, "pin", "--everywhere We deploy on Tuesdays", where=C1)
        assert pinned.kind is ReplyKind.INFO
        assert pinned.text.startswith(
            "Pinned #1 in every channel of this workspace: We deploy on Tuesdays"
        )
        await run(core, "pin", "C2 keeps its own", where=C2)
        line = f"{WORKSPACE_PINS_HEADING}\n#1 (Ana): We deploy on Tuesdays"
        for where in (C1, C2, C3, THREAD, DM):
            assert line in (await ask(core, where))[0]["content"], where
        c2 = (await ask(core, C2))[0]["content"]
        assert c2.index(PINS_HEADING) < c2.index("C2 keeps its own") < c2.index(line)
        assert "Tuesdays" not in str(await ask(core, ELSEWHERE))
        assert "Tuesdays" not in str(await ask(core, DISCORD_DM))
        # In the pins layer of the prompt, as a channel's own pins are.
        preview = await core.engine.preview(C3)
        assert preview.prompt.breakdown["pins"] > 0
        assert [p.text for p in preview.prompt.pins] == ["We deploy on Tuesdays"]


async def test_pins_lists_the_workspaces_apart_from_the_channels() -> None:
    async with running_core(unit_config()) as core:
        await run(core, "pin", "--everywhere We deploy on Tuesdays", where=C1)
        await run(core, "pin", "C2 keeps its own", where=C2)
        listed = await run(core, "pins", where=C2, admin=False)
        assert listed.text == (
            "1 pinned fact, in every prompt of this channel:\n"
            "#2 (Ana): C2 keeps its own\n"
            "In every channel of this workspace (1 pinned fact):\n"
            "#1 (Ana): We deploy on Tuesdays"
        )
        only = await run(core, "pins", where=C3)
        assert only.text.endswith(
            "In every channel of this workspace (1 pinned fact):\n#1 (Ana): We deploy on Tuesdays"
        )
        none = await run(core, "pins", where=ELSEWHERE)
        assert none.text.startswith("No pins in this channel.")


async def test_a_long_pins_list_still_says_what_the_workspace_keeps() -> None:
    async with running_core(unit_config(memory={"max_context_tokens": 64000})) as core:
        for i in range(40):
            await run(core, "pin", f"channel fact {i}: " + "details " * 12)
        await run(core, "pin", "--everywhere " + "We deploy on Tuesdays. " * 20)
        listed = (await run(core, "pins")).text
        await run(core, "pin", "--everywhere Ask Bo about the vault", where=C2)
        also = (await run(core, "pins")).text
    assert len(listed) <= PINS_LISTED_CHARS
    assert "… and 17 more (#24 to #40).\n" in listed
    assert listed.endswith(
        "In every channel of this workspace (1 pinned fact):\n… and 1 more (#41)."
    )
    assert also.endswith(
        "In every channel of this workspace (2 pinned facts):\n… and 2 more (#41 to #42)."
    )


async def test_only_admins_pin_and_unpin_for_every_channel() -> None:
    async with running_core(unit_config()) as core:
        refused = await run(core, "pin", "--everywhere We deploy on Tuesdays", admin=False)
        assert refused.kind is ReplyKind.ERROR and "\n" not in refused.text
        assert refused.text.startswith("Only admins can pin for every channel")
        assert await core.store.pins(channel_key=C1.workspace_key) == []
        assert await core.store.pins(channel_key=C1.channel_key) == []
        await run(core, "pin", "--everywhere We deploy on Tuesdays")
        # Its author, no longer an admin, cannot take it back; an admin anywhere in it can.
        kept = await run(core, "unpin", "1", where=C2, admin=False)
        assert kept.kind is ReplyKind.ERROR and kept.text.startswith("Only admins can unpin #1")
        assert (await run(core, "unpin", "1", where=ELSEWHERE)).kind is ReplyKind.ERROR
        gone = await run(core, "unpin", "#1", where=C2)
        assert gone.text == "Unpinned #1 from every channel."
        assert "Tuesdays" not in str(await ask(core, C3))


async def test_a_private_channel_pins_for_every_channel_only_once_an_admin_opts_in() -> None:
    async with running_core(unit_config()) as core:
        refused = await run(core, "pin", "--everywhere ship it", where=PRIVATE, private=True)
        assert refused.kind is ReplyKind.ERROR and "share-private on" in refused.text
        assert await core.store.pins(channel_key=PRIVATE.workspace_key) == []
        await run(core, "settings", "share-private on", where=PRIVATE, private=True)
        pinned = await run(core, "pin", "--everywhere ship it", where=PRIVATE, private=True)
        assert pinned.kind is ReplyKind.INFO
        assert "ship it" in (await ask(core, C1))[0]["content"]


async def test_a_dm_outside_any_server_shares_nothing() -> None:
    """Discord's DMs are in no server: one user's DM is not another's workspace."""
    async with running_core(unit_config()) as core:
        await run(core, "settings", "share-private on", where=DISCORD_DM, private=True)
        refused = await run(core, "pin", "--everywhere ship it", where=DISCORD_DM, private=True)
        assert refused.kind is ReplyKind.ERROR and "no server" in refused.text
        group = await run(core, "settings", "memory-group x", where=DISCORD_DM, private=True)
        assert group.kind is ReplyKind.ERROR and "no server" in group.text
        assert (await core.engine.settings_for(DISCORD_DM)).memory_group is None


async def test_workspace_pins_count_against_a_channels_pin_budget() -> None:
    async with running_core(unit_config(memory={"max_context_tokens": 600})) as core:
        long = "release notes " * 100
        assert (await run(core, "pin", "--everywhere " + long)).kind is ReplyKind.INFO
        refused = await run(core, "pin", "The office closes at six. " * 20, where=C2)
        assert refused.kind is ReplyKind.ERROR
        assert refused.text.startswith("Not pinned: the system prompt and pins would take")
        # The same pin fits where the workspace pin is not.
        fits = await run(core, "pin", "The office closes at six. " * 20, where=ELSEWHERE)
        assert fits.kind is ReplyKind.INFO


# -- memory groups ---------------------------------------------------------------------------


async def join(core: Core, where: Conversation, group: str = "support") -> None:
    joined = await run(core, "settings", f"memory-group {group}", where=where)
    assert joined.kind is ReplyKind.INFO, joined.text


async def test_a_memory_group_shares_recall_between_its_channels_and_no_others() -> None:
    async with running_core(unit_config(memory=RECALL)) as core:
        for where in (C1, C2, ELSEWHERE):
            await join(core, where)
        await say(core, C2, "the staging deploy key is marmalade-7")
        await chatter(core, C2)
        await say(core, ELSEWHERE, "the staging deploy key is quince-9")
        await chatter(core, ELSEWHERE)
        question = "@bot what is the staging deploy key?"
        block = recall_block(await ask(core, C1, question))
        assert block.startswith(GROUP_HEADING)
        assert "#C2 [Bo] the staging deploy key is marmalade-7" in block
        assert "quince" not in block  # a same-named group of another workspace
        assert "marmalade" in recall_block(await ask(core, THREAD, question))
        assert "marmalade" not in str(await ask(core, C3, question))  # not in the group
        assert "marmalade" not in str(await ask(core, ELSEWHERE, question))
        # The group's channels recall each other's: C2 finds what was said in C1.
        await say(core, C1, "the release train leaves at noon on Fridays")
        await chatter(core, C1)
        found = recall_block(await ask(core, C2, "@bot when does the release train leave?"))
        assert "#C1 [Bo] the release train leaves at noon on Fridays" in found


async def test_a_channel_that_leaves_the_group_is_searched_no_more() -> None:
    async with running_core(unit_config(memory=RECALL)) as core:
        await join(core, C1)
        await join(core, C2)
        await say(core, C2, "the staging deploy key is marmalade-7")
        await chatter(core, C2)
        question = "@bot what is the staging deploy key?"
        assert "marmalade" in recall_block(await ask(core, C1, question))
        await run(core, "settings", "reset memory-group", where=C2)
        assert "marmalade" not in str(await ask(core, C1, question))


async def test_own_messages_fill_recall_before_the_groups() -> None:
    for most, shown in ((2, ["plum-3", "marmalade-7"]), (1, ["plum-3"])):
        memory = {
            **RECALL,
            "max_context_tokens": 600,
            "recall_tokens": 250,
            "recall_messages": most,
        }
        async with running_core(unit_config(memory=memory)) as core:
            await join(core, C1)
            await join(core, C2)
            await say(core, C2, "the staging deploy key is marmalade-7")
            await chatter(core, C2)
            await say(core, C1, "the staging deploy key is plum-3")
            await chatter(core, C1, 40)  # the fact leaves C1's window
            prompt = await ask(core, C1, "@bot what is the staging deploy key?")
        block = recall_block(prompt)
        assert block.startswith(RECALL_HEADING)
        assert [key for key in ("plum-3", "marmalade-7") if key in block] == shown
        if len(shown) == 2:
            assert block.index("plum-3") < block.index(GROUP_HEADING) < block.index("marmalade")


async def test_a_private_channels_messages_reach_the_group_only_once_its_admin_opts_in() -> None:
    async with running_core(unit_config(memory=RECALL)) as core:
        await join(core, C1)
        await say(core, PRIVATE, "the payroll password is papaya-5")
        await chatter(core, PRIVATE)
        question = "@bot what is the payroll password?"
        refused = await run(core, "settings", "memory-group support", where=PRIVATE, private=True)
        assert refused.kind is ReplyKind.ERROR
        assert "papaya" not in str(await ask(core, C1, question))
        await run(core, "settings", "share-private on", where=PRIVATE, private=True)
        assert "papaya" not in str(await ask(core, C1, question))  # opted in, not joined
        await run(core, "settings", "memory-group support", where=PRIVATE, private=True)
        assert "#G1 [Bo] the payroll password is papaya-5" in recall_block(
            await ask(core, C1, question)
        )
        assert "papaya" not in str(await ask(core, C3, question))  # a channel not in the group
        # Taking the opt-in back (turned off, or reset) leaves the group.
        reset = await run(core, "settings", "reset share-private", where=PRIVATE, private=True)
        assert "memory-group" in reset.text
        assert "papaya" not in str(await ask(core, C1, question))


async def test_a_summary_holds_only_its_own_channels_messages() -> None:
    memory = {"max_context_tokens": 600, "recall_tokens": 200, "keep_recent_turns": 2}
    async with running_core(unit_config(memory=memory)) as core:
        await join(core, C1)
        await join(core, C2)
        await say(core, C2, "FACT the staging deploy key is marmalade-7")
        await chatter(core, C2)
        for i in range(30):
            await say(core, C1, f"what is the staging deploy key, try {i}?", addressed=True)
            await core.engine.drain()
        chats, summaries = core.model.chats(), core.model.summaries()
    assert any("marmalade" in str(chat) for chat in chats)  # recalled into the prompts
    assert summaries
    assert not any("marmalade" in str(summary) for summary in summaries)
