"""The prompt log the page shows, on SQLite and PostgreSQL: the real openai SDK against the local
model server (chat and embeddings), the real engine, commands and store. An answer in a
channel of a memory group leaves its exact prompt and, for each message recall put in it,
where it was said and why (the words it shares with the question, its rank by meaning, both);
``/reset`` deletes the conversation's."""

from __future__ import annotations

import pytest

from bot.core.commands import run_command
from bot.core.models import CommandCall, Conversation, IncomingMessage, ReplyKind
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, is_summary_request
from tests.support.fake_llm import FakeLLM, fake_embedding

pytestmark = pytest.mark.stores("sqlite", "postgres")

C1 = Conversation("slack", "T1", "C1")
C2 = Conversation("slack", "T1", "C2")
MEMORY = {
    "strategy": "full",
    "max_context_tokens": 1200,
    "recall_tokens": 400,
    "recall_embeddings": True,
}
PAGE = {"port": 0, "page": {"enabled": True, "keep_prompts": 5}}


def topical(text: str) -> list[float]:
    """Texts about getting online point one way, whatever their words."""
    words = ("wifi", "network", "online")
    return [1.0] + [0.0] * 15 if any(w in text.lower() for w in words) else fake_embedding(text)


async def say(app: App, where: Conversation, text: str, *, addressed: bool = False) -> None:
    await app.engine.handle_message(IncomingMessage(where, "U2", "Bo", text, addressed=addressed))


async def run(app: App, name: str, argument: str, where: Conversation) -> None:
    reply = await run_command(app.engine, CommandCall(where, name, argument, "U1", "Ana"))
    assert reply.kind is ReplyKind.INFO, reply.text


async def test_an_answer_logs_its_prompt_with_what_recall_found_where_and_why(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    llm.embedder = topical
    config = make_config(memory=MEMORY, llm={"embedding_model": "embed-small"}, http=PAGE)
    async with open_app(config) as app:
        for where in (C1, C2):
            await run(app, "settings", "memory-group support", where)
        await say(app, C2, "Visitors use the guest network, key tangerine-42")
        await say(app, C1, "the guest wifi password was plum-3 last year")
        for i in range(40):  # the fact leaves C1's window
            await say(app, C1, f"chatter {i}: lunch plans, the weather and the coffee machine")
        await app.engine.drain()  # embedded in the background
        await say(app, C1, "@bot what is the guest wifi now?", addressed=True)
        sent = [b for b in llm.chat_requests if not is_summary_request(b)][-1]["messages"]
        (record,) = await app.store.logged_prompts(channel_key=C1.channel_key, limit=5)
        assert await app.store.logged_prompts(channel_key=C2.channel_key, limit=5) == []
        await run(app, "reset", "", C1)
        assert await app.store.logged_prompts(channel_key=C1.channel_key, limit=5) == []
    assert list(record.messages) == sent
    assert record.question == "@bot what is the guest wifi now?"
    notes = {note.content: note for note in record.recall}
    own = notes["the guest wifi password was plum-3 last year"]
    shared = notes["Visitors use the guest network, key tangerine-42"]
    assert own.conversation_key == C1.key and shared.conversation_key == C2.key
    assert own.why == "words: guest, wifi; meaning: 1st nearest", own.why
    # In C2, where it is rare, "the" is a word searched for too; a key is scored important.
    assert shared.why == "words: the, guest; meaning: 1st nearest; 📌 important", shared.why
    assert all(note.content in sent[1]["content"] for note in record.recall)
