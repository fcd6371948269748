"""Memory a workspace shares, with its walls, on SQLite and PostgreSQL: the real openai SDK
against the local model server, the real engine, commands and store. Pins kept in every channel
of a workspace reach each of its conversations' prompts and no other workspace's; a memory
group's channels recall each other's messages (by words and by meaning), after their own; a
private channel's messages reach no public channel's prompt unless its admin opted in."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.core.commands import run_command
from bot.core.memory.group import GROUP_HEADING
from bot.core.memory.recall import RECALL_HEADING
from bot.core.models import CommandCall, Conversation, IncomingMessage, Reply, ReplyKind
from bot.core.prompt.layout import WORKSPACE_PINS_HEADING
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, Storage, is_summary_request
from tests.support.fake_llm import FakeLLM, fake_embedding

pytestmark = pytest.mark.stores("sqlite", "postgres")

C1 = Conversation("slack", "T1", "C1")
C2 = Conversation("slack", "T1", "C2")
C3 = Conversation("slack", "T1", "C3")
PRIVATE = Conversation("slack", "T1", "G1")
DM = Conversation("slack", "T1", "D1")
THREAD = replace(C2, thread="1700000000.000100")
ELSEWHERE = Conversation("slack", "T2", "C1")
RECALL = {"strategy": "full", "max_context_tokens": 2000, "recall_tokens": 600}


async def run(
    app: App,
    name: str,
    argument: str,
    where: Conversation,
    *,
    admin: bool = True,
    private: bool = False,
) -> Reply:
    call = CommandCall(where, name, argument, "U1", "Ana", can_manage=admin, private=private)
    return await run_command(app.engine, call)


async def say(app: App, where: Conversation, text: str, *, addressed: bool = False) -> None:
    await app.engine.handle_message(IncomingMessage(where, "U2", "Bo", text, addressed=addressed))


async def chatter(app: App, where: Conversation, count: int = 6) -> None:
    for i in range(count):
        await say(app, where, f"chatter {i}: lunch plans, the weather and the coffee machine")


async def ask(app: App, llm: FakeLLM, where: Conversation, text: str) -> list[dict[str, str]]:
    """The prompt the model server got for a question asked in ``where``."""
    await say(app, where, text, addressed=True)
    bodies = [body for body in llm.chat_requests if not is_summary_request(body)]
    messages: list[dict[str, str]] = bodies[-1]["messages"]
    return messages


def recall_block(prompt: list[dict[str, str]]) -> str:
    recalls = [m["content"] for m in prompt[1:] if m["role"] == "system"]
    return recalls[0] if recalls else ""


async def join(app: App, where: Conversation, *, private: bool = False) -> None:
    joined = await run(app, "settings", "memory-group support", where, private=private)
    assert joined.kind is ReplyKind.INFO, joined.text


async def test_a_workspace_pin_reaches_each_conversation_of_its_workspace_and_no_other(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config()) as app:
        pinned = await run(app, "pin", "--everywhere Deploys need two approvals", C1)
        assert pinned.kind is ReplyKind.INFO, pinned.text
        refused = await run(app, "pin", "--everywhere Not from me", C2, admin=False)
        assert refused.kind is ReplyKind.ERROR
    # Kept in the database: another process (here, the bot restarted) finds it.
    async with open_app(make_config()) as app:
        line = f"{WORKSPACE_PINS_HEADING}\n#1 (Ana): Deploys need two approvals"
        for where in (C1, C2, THREAD, DM):
            system = (await ask(app, llm, where, "@bot can I deploy alone?"))[0]["content"]
            assert line in system, where
            assert "Not from me" not in system
        assert "approvals" not in str(await ask(app, llm, ELSEWHERE, "@bot can I deploy?"))
        listed = await run(app, "pins", "", C3, admin=False)
        assert listed.text.endswith(
            "In every channel of this workspace (1 pinned fact):\n"
            "#1 (Ana): Deploys need two approvals"
        )
        assert (await run(app, "unpin", "1", C3)).text == "Unpinned #1 from every channel."
        assert "approvals" not in str(await ask(app, llm, C2, "@bot can I deploy alone?"))


async def test_a_memory_group_shares_recall_within_one_workspace_own_messages_first(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    memory = {**RECALL, "max_context_tokens": 800, "recall_tokens": 300}
    async with open_app(make_config(memory=memory)) as app:
        for where in (C1, C2, ELSEWHERE):
            await join(app, where)
        await say(app, C2, "the staging deploy key is marmalade-7")
        await chatter(app, C2)
        await say(app, ELSEWHERE, "the staging deploy key is quince-9")
        await chatter(app, ELSEWHERE)
        await say(app, C1, "the staging deploy key was plum-3 last year")
        await chatter(app, C1, 40)  # the fact leaves C1's window
        question = "@bot what is the staging deploy key?"
        block = recall_block(await ask(app, llm, C1, question))
        assert block.startswith(RECALL_HEADING)
        assert block.index("plum-3") < block.index(GROUP_HEADING) < block.index("marmalade-7")
        assert "#C2 [Bo] the staging deploy key is marmalade-7" in block
        assert "quince" not in block  # the same-named group of another workspace
        assert "marmalade" not in str(await ask(app, llm, C3, question))  # not in the group
        assert "marmalade" not in str(await ask(app, llm, ELSEWHERE, question))


async def test_a_memory_group_recalls_by_meaning_across_its_channels(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    def topical(text: str) -> list[float]:
        """Texts about getting online point one way, whatever their words."""
        words = ("wifi", "network", "online")
        return [1.0] + [0.0] * 15 if any(w in text.lower() for w in words) else fake_embedding(text)

    llm.embedder = topical
    config = make_config(
        memory={**RECALL, "recall_embeddings": True}, llm={"embedding_model": "embed-small"}
    )
    async with open_app(config) as app:
        await join(app, C1)
        await join(app, C2)
        await say(app, C2, "Visitors use the guest network, key tangerine-42")
        await chatter(app, C2)
        await say(app, C3, "Contractors use the lab network, key lychee-8")
        await app.engine.drain()  # embedded in the background
        block = recall_block(await ask(app, llm, C1, "@bot how do I get online?"))
    assert "#C2 [Bo] Visitors use the guest network, key tangerine-42" in block
    assert "lychee" not in block


async def test_a_private_channels_message_never_reaches_a_public_channels_prompt_unopted(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=RECALL)) as app:
        await join(app, C1)
        await say(app, PRIVATE, "the payroll password is papaya-5")
        await chatter(app, PRIVATE)
        question = "@bot what is the payroll password?"
        refused = await run(app, "settings", "memory-group support", PRIVATE, private=True)
        assert refused.kind is ReplyKind.ERROR
        assert "papaya" not in str(await ask(app, llm, C1, question))
        await run(app, "settings", "share-private on", PRIVATE, private=True)
        await join(app, PRIVATE, private=True)
        found = recall_block(await ask(app, llm, C1, question))
        assert "#G1 [Bo] the payroll password is papaya-5" in found
        assert "papaya" not in str(await ask(app, llm, C3, question))
        left = await run(app, "settings", "share-private off", PRIVATE, private=True)
        assert "left the memory group support" in left.text
        assert "papaya" not in str(await ask(app, llm, C1, question))


async def test_workspace_pins_go_with_a_whole_export_and_their_own_key(
    make_config: ConfigFactory, fresh_storage: Storage
) -> None:
    """Kept under ``slack:T1:*``: a whole export and import carries them, as does exporting
    that key; a channel's export does not (they are the workspace's); ``bot reset --channel
    'slack:T1:*' --pins`` finds that key among those the database holds and removes them."""
    async with open_app(make_config()) as app:
        await run(app, "pin", "--everywhere Deploys need two approvals", C1)
        await run(app, "pin", "C1 keeps its own", C1)
        whole = await app.store.export_records(channel_key=None)
        channel = await app.store.export_records(channel_key=C1.channel_key)
        workspace = await app.store.export_records(channel_key=C1.workspace_key)
        known = await app.store.known_keys()
        await app.store.reset(
            conversation=Conversation.from_key(C1.workspace_key), include_pins=True
        )
        left = await app.store.pins(channel_key=C1.workspace_key)

    def pins(records: list[dict[str, object]]) -> list[object]:
        return [r["text"] for r in records if r["type"] == "pin"]

    assert pins(whole) == ["Deploys need two approvals", "C1 keeps its own"]
    assert pins(channel) == ["C1 keeps its own"]
    assert pins(workspace) == ["Deploys need two approvals"]
    assert C1.workspace_key in known
    assert list(left) == []
    async with open_app(make_config(storage=fresh_storage("copy"))) as there:
        await there.store.import_records(records=whole)
        prompt = await there.engine.preview(C3)
    assert [p.text for p in prompt.prompt.pins] == ["Deploys need two approvals"]
