"""The prompt log in-process: with the page on, each answer leaves the exact prompt it was made
from, its layers' tokens (adding up), and what recall put in it and why; with the page off,
nothing; a channel keeps only its latest few; a store refusing the log costs no answer; and
what memory forgets the log forgets: /forget takes the prompts of the person's questions, a
message deleted or edited on the platform the prompts that showed it."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot.core.commands import run_command
from bot.core.memory.tokens import REPLY_PRIMING
from bot.core.models import (
    CommandCall,
    Conversation,
    FactSource,
    IncomingMessage,
    Person,
    ReplyKind,
)
from bot.core.ports.prompts import PromptRecord
from bot.core.ports.store import NewSummary, StorageError
from bot.core.prompt.layout import LAYERS
from bot.store.memory import MemoryStore
from tests.support.core import Core, running_core, unit_config

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")
BO = Person.of(GENERAL, "bo")
MEMORY = {
    "strategy": "hybrid",
    "max_context_tokens": 900,
    "recall_tokens": 250,
}
PAGE = {"port": 0, "page": {"enabled": True, "keep_prompts": 2}}


def said(
    text: str,
    *,
    addressed: bool = False,
    message_id: str | None = None,
    where: Conversation = GENERAL,
    who: str = "bo",
) -> IncomingMessage:
    return IncomingMessage(
        where, who, who.title(), text, addressed=addressed, message_id=message_id
    )


def config(**sections: Any) -> Any:
    return unit_config(memory=MEMORY, **sections)


async def ask(core: Core, question: str, where: Conversation = GENERAL, who: str = "bo") -> str:
    reply = await core.engine.handle_message(said(question, addressed=True, where=where, who=who))
    assert reply is not None
    return reply.text


async def a_remembered_channel(core: Core) -> None:
    """A pin, Bo's profile, a summary, a fact (marked 📌) that has left the window, chatter."""
    store, count = core.store, core.engine.tokenizer.count
    await store.add_pin(
        channel_key=GENERAL.channel_key,
        text="deploys happen on Fridays",
        tokens=count("deploys happen on Fridays"),
        author_id="bo",
        author_name="Bo",
    )
    await store.add_profile_fact(
        person=BO, text="prefers short answers", tokens=3, source=FactSource.USER
    )
    await core.engine.handle_message(
        said("the guest wifi password is tangerine-42", message_id="m1")
    )
    assert await core.engine.mark_important(GENERAL, "m1", True)
    ids = []
    for i in range(30):
        stored = await core.engine.record(said(f"chatter {i}: lunch plans and the weather again"))
        ids.append(stored.id)
    text = "Bo runs the office network."
    summary = NewSummary(GENERAL.key, text, count(text), ids[9], 11, 1, ids[9], 1, False, "m")
    assert await store.save_summary(summary=summary, generation=0, previous_id=None)


async def logged(core: Core, where: Conversation = GENERAL) -> list[PromptRecord]:
    return list(await core.store.logged_prompts(channel_key=where.channel_key, limit=10))


async def test_an_answer_leaves_its_exact_prompt_its_layers_and_recalls_reasons() -> None:
    async with running_core(config(http=PAGE)) as core:
        await a_remembered_channel(core)
        await ask(core, "@bot what is the guest wifi password?")
        sent = core.model.chats()[-1]
        (record,) = await logged(core)
    assert list(record.messages) == sent  # exactly what the model was sent
    assert record.question == "@bot what is the guest wifi password?"
    assert (record.conversation_key, record.model) == (GENERAL.key, "gpt-4o-mini")
    assert list(record.layers) == list(LAYERS)
    assert all(record.layers[layer] > 0 for layer in LAYERS), record.layers
    assert sum(record.layers.values()) + REPLY_PRIMING == record.tokens <= record.budget
    assert record.layers["pins"] < record.layers["system"] + record.layers["recent"]
    (note,) = [n for n in record.recall if "tangerine-42" in n.content]
    assert note.conversation_key == GENERAL.key and note.author_name == "Bo"
    assert note.why.startswith("words: ") and "password" in note.why, note.why
    assert "📌 important" in note.why
    assert "tangerine-42" in str(sent[1])  # the note is of what the prompt showed


async def test_nothing_is_logged_while_the_page_is_off() -> None:
    async with running_core(config()) as core:
        await a_remembered_channel(core)
        await ask(core, "@bot what is the guest wifi password?")
        assert core.model.chats()
        assert await logged(core) == []


async def test_a_channel_keeps_only_its_latest_prompts() -> None:
    async with running_core(config(http=PAGE)) as core:
        for question in ("first?", "second?", "third?"):
            await ask(core, f"@bot {question}")
        records = await logged(core)
    assert [r.question for r in records] == ["@bot third?", "@bot second?"]
    assert records[0].layers["recall"] == 0 and records[0].recall == ()


class RefusingStore(MemoryStore):
    """A store whose prompt log is refused, as a full disk would refuse it."""

    async def log_prompt(self, *, record: PromptRecord, keep: int) -> None:
        raise StorageError("memory", "disk full", incident=1)


async def test_a_prompt_the_store_refuses_costs_no_answer(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="bot.core.prompt_log"):
        async with running_core(config(http=PAGE), store=RefusingStore()) as core:
            text = await ask(core, "@bot hello there")
            assert text and core.model.chats()
            answers = await core.store.messages_after_turn(
                conversation_key=GENERAL.key, after_turn=0, limit=5
            )
    assert [m.content for m in answers][-1] == text  # the answer was stored all the same
    assert [r.getMessage() for r in caplog.records] == [
        f"the prompt answering {GENERAL.key} was not logged: cannot write to memory: disk full"
    ]


KEEP = {"port": 0, "page": {"enabled": True, "keep_prompts": 10}}


async def questions(core: Core, where: Conversation = GENERAL) -> list[str]:
    return [r.question for r in await logged(core, where)]


async def command(core: Core, name: str, argument: str, who: str = "bo") -> str:
    call = CommandCall(GENERAL, name, argument, who, who.title(), can_manage=True)
    reply = await run_command(core.engine, call)
    assert reply.kind is not ReplyKind.ERROR, reply.text
    return reply.text


@pytest.mark.parametrize("argument", ["all", "ID"])
async def test_forget_deletes_the_logged_prompts_of_the_persons_questions_only(
    argument: str,
) -> None:
    async with running_core(config(http=KEEP)) as core:
        await command(core, "remember", "I am allergic to peanuts")
        await ask(core, "@bot what should I cook?")
        await ask(core, "@bot and for dessert?", RANDOM)
        await ask(core, "@bot what is for lunch?", who="cy")
        (_, mine) = await logged(core)
        assert "allergic to peanuts" in str(mine.messages)  # Bo's profile, in Bo's prompt
        (fact,) = await core.store.profile_facts(person=BO)
        await command(core, "forget", str(fact.id) if argument == "ID" else "all")
        assert await questions(core) == ["@bot what is for lunch?"]  # Cy's stays
        assert await questions(core, RANDOM) == []  # every channel of the workspace
        assert "peanuts" not in str(await logged(core))


@pytest.mark.parametrize("change", ["deleted", "edited"])
async def test_a_message_deleted_or_edited_on_the_platform_leaves_the_prompts_that_showed_it(
    change: str,
) -> None:
    async with running_core(config(http=KEEP)) as core:
        await ask(core, "@bot good morning?")
        await core.engine.handle_message(
            said("the guest wifi password is tangerine-42", message_id="m1")
        )
        await ask(core, "@bot what is the guest wifi password?")
        await ask(core, "@bot and the door code?")
        await ask(core, "@bot anything new?", RANDOM)
        assert "tangerine-42" in str((await logged(core))[0].messages)
        if change == "deleted":
            assert await core.engine.delete_message(GENERAL, "m1")
        else:
            assert await core.engine.edit_message(GENERAL, "m1", "the wifi is open now")
        # What was answered before it was said stays; another channel's too.
        assert await questions(core) == ["@bot good morning?"]
        assert await questions(core, RANDOM) == ["@bot anything new?"]
        assert "tangerine-42" not in str(await logged(core))


async def test_an_edit_that_changes_nothing_keeps_the_log() -> None:
    async with running_core(config(http=KEEP)) as core:
        await core.engine.handle_message(said("the door code is 1234", message_id="m1"))
        await ask(core, "@bot what is the door code?")
        assert await core.engine.edit_message(GENERAL, "m1", "the door code is 1234")
        assert await questions(core) == ["@bot what is the door code?"]


C1 = Conversation("slack", "T1", "C1")
C2 = Conversation("slack", "T1", "C2")
C3 = Conversation("slack", "T1", "C3")


async def test_a_deleted_message_leaves_the_prompts_of_its_memory_group_that_recalled_it() -> None:
    recall = {"strategy": "full", "max_context_tokens": 2000, "recall_tokens": 600}
    async with running_core(unit_config(memory=recall, http=KEEP)) as core:
        for where in (C1, C2):
            call = CommandCall(where, "settings", "memory-group support", "U1", "Ana", True)
            assert (await run_command(core.engine, call)).kind is ReplyKind.INFO
        await core.engine.handle_message(
            said("the staging deploy key is marmalade-7", message_id="m1", where=C2)
        )
        for i in range(6):
            await core.engine.handle_message(said(f"chatter {i}: lunch plans", where=C2))
        for where in (C1, C3):
            await ask(core, "@bot what is the staging deploy key?", where)
        (recalled,) = await logged(core, C1)
        assert [n.content for n in recalled.recall] == ["the staging deploy key is marmalade-7"]
        assert await core.engine.delete_message(C2, "m1")
        assert await logged(core, C1) == []
        assert await questions(core, C3) == ["@bot what is the staging deploy key?"]
