"""The prompt log in-process: with the page on, each answer leaves the exact prompt it was made
from, its layers' tokens (adding up), and what recall put in it and why; with the page off,
nothing; a channel keeps only its latest few; a store refusing the log costs no answer."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from bot.core.memory.tokens import REPLY_PRIMING
from bot.core.models import Conversation, FactSource, IncomingMessage, Person
from bot.core.ports.prompts import PromptRecord
from bot.core.ports.store import NewSummary, StorageError
from bot.core.prompt.layout import LAYERS
from bot.store.memory import MemoryStore
from tests.support.core import Core, running_core, unit_config

GENERAL = Conversation.console("general")
BO = Person.of(GENERAL, "bo")
MEMORY = {
    "strategy": "hybrid",
    "max_context_tokens": 900,
    "recall_tokens": 250,
}
PAGE = {"port": 0, "page": {"enabled": True, "keep_prompts": 2}}


def said(text: str, *, addressed: bool = False, message_id: str | None = None) -> IncomingMessage:
    return IncomingMessage(GENERAL, "bo", "Bo", text, addressed=addressed, message_id=message_id)


def config(**sections: Any) -> Any:
    return unit_config(memory=MEMORY, **sections)


async def ask(core: Core, question: str) -> str:
    reply = await core.engine.handle_message(said(question, addressed=True))
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


async def logged(core: Core) -> list[PromptRecord]:
    return list(await core.store.logged_prompts(channel_key=GENERAL.channel_key, limit=10))


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
