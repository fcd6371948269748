"""Embedding models that tell a question from a stored text (E5's ``query: `` and
``passage: ``): the marks the config names reach the embeddings server as prefixes or as
``input_type``, a question is searched with as a question and kept as a stored text, and
changing the marks embeds what is stored again. The real openai SDK against the local server."""

from __future__ import annotations

import pytest

from bot.wiring import App, open_app
from tests.conftest import ConfigFactory
from tests.integration.test_recall import (
    GENERAL,
    SMALL,
    chatter,
    last_prompt,
    recall_block,
    said,
)
from tests.support.fake_llm import FakeLLM, fake_embedding

pytestmark = pytest.mark.stores("sqlite", "postgres")

FACT = "Visitors use the guest network, key tangerine-42"
QUESTION = "how do guests get online?"
E5 = {"query": "query: ", "document": "passage: "}


def asymmetric_embedding(text: str) -> list[float]:
    """A model trained with marks: a marked question about getting online and a marked text
    about the network point the same way; unmarked, they are hashed like any other text."""
    lowered = text.lower()
    if lowered.startswith("query: ") and "online" in lowered:
        return [1.0] + [0.0] * 15
    if lowered.startswith("passage: ") and "network" in lowered:
        return [1.0] + [0.0] * 15
    return fake_embedding(text)


async def conversation(app: App) -> None:
    """The fact, chatter that pushes it out of the window, then the question."""
    await app.engine.handle_message(said(FACT, who="Li"))
    await chatter(app, 40)
    await app.engine.drain()
    await app.engine.handle_message(said(QUESTION, addressed=True))
    await app.engine.drain()


def embedded(llm: FakeLLM) -> list[tuple[str | None, str]]:
    """What the embeddings server was sent: (input_type, text) per text."""
    bodies = [r.body for r in llm.requests if r.path == "/v1/embeddings"]
    return [(body.get("input_type"), text) for body in bodies for text in body["input"]]


async def test_with_the_models_marks_a_question_finds_what_it_missed_without(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.embedder = asymmetric_embedding
    config = make_config(
        memory={**SMALL, "recall_embeddings": True},
        llm={"embedding_model": "embed-small", "embedding_prefixes": E5},
    )
    async with open_app(config) as app:
        await conversation(app)
        stored = await app.store.messages_after_turn(
            conversation_key=GENERAL.key, after_turn=0, limit=1000
        )
        kept = await app.store.vectors(
            conversation_key=GENERAL.key,
            before_id=10**9,
            model="embed-small (passage:)",
            limit=1000,
        )
    assert "tangerine-42" in recall_block(last_prompt(llm))
    texts = [text for _, text in embedded(llm)]
    # Every stored message once as a stored text (the question too, in the background), and
    # the question once more as a question; no input_type sent.
    assert sorted(texts) == sorted(
        [f"passage: {m.content}" for m in stored] + [f"query: {QUESTION}"]
    )
    assert {kind for kind, _ in embedded(llm)} == {None}
    assert len(kept) == len(stored)


async def test_without_marks_the_same_model_misses_it(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.embedder = asymmetric_embedding
    config = make_config(
        memory={**SMALL, "recall_embeddings": True}, llm={"embedding_model": "embed-small"}
    )
    async with open_app(config) as app:
        await conversation(app)
    assert "tangerine-42" not in recall_block(last_prompt(llm))
    assert not [text for _, text in embedded(llm) if text.startswith(("query: ", "passage: "))]


async def test_input_types_are_sent_beside_the_unmarked_text(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    def by_input_type(text: str) -> list[float]:
        return fake_embedding(text)

    llm.embedder = by_input_type
    types = {"query": "query", "document": "passage"}
    config = make_config(
        memory={**SMALL, "recall_embeddings": True},
        llm={"embedding_model": "embed-small", "embedding_input_types": types},
    )
    async with open_app(config) as app:
        await conversation(app)
    sent = embedded(llm)
    assert ("query", QUESTION) in sent
    assert ("passage", QUESTION) in sent
    assert ("passage", FACT) in sent
    assert {kind for kind, _ in sent} == {"query", "passage"}
    assert not [text for _, text in sent if text.startswith(("query: ", "passage: "))]


async def test_setting_marks_embeds_the_stored_messages_again(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.embedder = asymmetric_embedding
    memory = {**SMALL, "recall_embeddings": True}
    async with open_app(make_config(memory=memory, llm={"embedding_model": "embed-small"})) as app:
        await conversation(app)
        count = len(
            await app.store.messages_after_turn(
                conversation_key=GENERAL.key, after_turn=0, limit=1000
            )
        )
    before = len(embedded(llm))
    marked = {"embedding_model": "embed-small", "embedding_prefixes": E5}
    async with open_app(make_config(memory=memory, llm=marked)) as app:
        await app.engine.backfill_embeddings()  # as `bot run` does when it starts
        await app.engine.drain()
        missing = await app.store.unembedded(
            before_id=None, model="embed-small (passage:)", limit=10
        )
    again = [text for _, text in embedded(llm)[before:]]
    assert len(again) == count and all(text.startswith("passage: ") for text in again)
    assert not missing
