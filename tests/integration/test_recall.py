"""Recall end to end, on SQLite (FTS5) and PostgreSQL alike: the real openai SDK against the
local server (chat and embeddings), the real engine and commands. Where a test also looks into
the SQLite file (the FTS5 index itself), that part runs on SQLite only."""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import ConfigError
from bot.core.commands import run_command
from bot.core.memory.recall import RECALL_HEADING
from bot.core.memory.terms import COMMON_FLOOR, index_text, query_terms
from bot.core.models import CommandCall, Conversation, IncomingMessage
from bot.store.sqlite.search import match_expression
from bot.store.sqlite.store import SqliteStore
from bot.wiring import App, open_app
from tests.conftest import ConfigFactory, Storage, is_summary_request
from tests.support import old_schemas
from tests.support.fake_llm import FakeLLM, Reply, count_prompt_tokens, fake_embedding
from tests.support.stores import StoreKind

pytestmark = pytest.mark.stores("sqlite", "postgres")

GENERAL = Conversation.console("general")
RANDOM = Conversation.console("random")
THREAD = Conversation("console", "local", "general", thread="t1")
SMALL = {"strategy": "full", "max_context_tokens": 600, "recall_tokens": 250}


def said(
    text: str,
    who: str = "Ana",
    where: Conversation = GENERAL,
    addressed: bool = False,
    message_id: str | None = None,
) -> IncomingMessage:
    return IncomingMessage(
        where, who.lower(), who, text, addressed=addressed, message_id=message_id
    )


def last_prompt(llm: FakeLLM) -> list[dict[str, str]]:
    bodies = [body for body in llm.chat_requests if not is_summary_request(body)]
    messages: list[dict[str, str]] = bodies[-1]["messages"]
    return messages


def recall_block(messages: list[dict[str, str]]) -> str:
    """The recall message of a prompt ('' when there is none)."""
    recalls = [m["content"] for m in messages[1:] if m["role"] == "system"]
    assert len(recalls) <= 1
    if recalls:
        assert messages[1]["content"] == recalls[0], "recall comes right after the system message"
        assert recalls[0].startswith(RECALL_HEADING)
    return recalls[0] if recalls else ""


def turns(messages: list[dict[str, str]]) -> str:
    return "\n".join(m["content"] for m in messages if m["role"] != "system")


async def chatter(app: App, count: int, where: Conversation = GENERAL) -> None:
    for i in range(count):
        text = f"chatter {i}: lunch plans, the weather and the coffee machine again"
        await app.engine.handle_message(said(text, who="Bo", where=where))


@pytest.mark.parametrize(
    ("fact", "question", "key"),
    [
        (
            "For the visitors tomorrow, the guest wifi password is tangerine-42.",
            "@bot what is the guest WiFi password?",
            "tangerine-42",
        ),
        (
            "明天有客人来，访客WiFi密码是 xingyun-88。",
            "@bot 访客密码是什么？",
            "xingyun-88",
        ),
        ("团建规划会在七楼的猎户座会议室。", "@bot 哪个会议室？", "猎户座"),
    ],
    ids=["english", "chinese", "chinese-two-character-word"],
)
async def test_an_early_fact_is_recalled_after_it_left_the_window(
    make_config: ConfigFactory, llm: FakeLLM, fact: str, question: str, key: str
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said(fact, who="Li"))
        await chatter(app, 40)
        await app.engine.handle_message(said(question, addressed=True))
        calibration = app.engine.calibrator.get("gpt-4o-mini")
    prompt = last_prompt(llm)
    assert key not in turns(prompt), "the fact should have left the recent window"
    block = recall_block(prompt)
    assert f"[Li] {fact}" in block
    assert count_prompt_tokens("gpt-4o-mini", prompt) <= 600
    assert count_prompt_tokens("gpt-4o-mini", [{"role": "system", "content": block}]) <= 250
    assert calibration is not None  # counted exactly, recall too
    assert calibration.lowest == calibration.highest == 1.0


async def test_a_name_written_with_its_accent_also_finds_it_written_without(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """Search folds accents as SQLite's FTS5 does (``Zoë`` finds ``Zoe``), on every store; the
    accented word is searched once the conversation holds it."""
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("Zoe parks in bay 17, next to the café", who="Li"))
        await app.engine.handle_message(said("Zoë joined the team this week", who="Li"))
        await chatter(app, 40)
        await app.engine.handle_message(said("@bot where does Zoë leave her car?", addressed=True))
    block = recall_block(last_prompt(llm))
    assert "[Li] Zoe parks in bay 17" in block and "[Li] Zoë joined" in block


async def test_recall_starts_when_a_conversation_answered_all_along_outgrows_the_window(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """Every message is answered, so a prompt is built while the whole conversation still
    fits (nothing to recall) and on every turn after it stops fitting."""
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("明天有客人来，访客WiFi密码是 xingyun-88。", who="Li"))
        blocks = []
        for i in range(12):
            text = f"@bot chatter {i}: lunch plans, the weather and the coffee machine"
            await app.engine.handle_message(said(text, who="Bo", addressed=True))
            blocks.append(recall_block(last_prompt(llm)))
        await app.engine.handle_message(said("@bot 访客密码是什么？", addressed=True))
    prompt = last_prompt(llm)
    assert blocks[0] == "", "nothing is recalled while the whole conversation fits"
    assert "xingyun-88" not in turns(prompt), "the fact should have left the recent window"
    assert "[Li] 明天有客人来，访客WiFi密码是 xingyun-88。" in recall_block(prompt)


async def test_a_question_full_of_everyday_words_still_finds_the_rare_one(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """Each search scores a bounded number of messages, taking the question's rarest terms
    first: the everyday words it shares with hundreds of messages are the ones left out."""
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("the guest wifi password is tangerine-42", who="Li"))
        await chatter(app, 160)  # lunch, plans, weather, coffee, machine: 160 messages each
        await app.engine.handle_message(
            said("@bot lunch plans, weather, coffee machine, and the guest wifi?", addressed=True)
        )
    prompt = last_prompt(llm)
    assert "tangerine-42" not in turns(prompt), "the fact should have left the recent window"
    assert "[Li] the guest wifi password is tangerine-42" in recall_block(prompt)


async def test_another_channels_chatter_never_hides_a_fact(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """How common a word is, is decided within the conversation being answered: a word
    another channel says all day is still searched for here."""
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("the zebra code is 5150", who="Li"))
        await chatter(app, 40)
        for i in range(240):  # more than any threshold across the whole database
            await app.engine.handle_message(said(f"zebra crossing {i}", where=RANDOM))
        await app.engine.handle_message(said("zebra?", addressed=True))
    prompt = last_prompt(llm)
    assert "5150" not in turns(prompt), "the fact should have left the recent window"
    assert "[Li] the zebra code is 5150" in recall_block(prompt)


async def test_a_word_most_of_the_conversation_holds_is_not_searched(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("the lunch code is 5150", who="Li"))
        await chatter(app, COMMON_FLOOR + 20)  # every line says "lunch"
        await app.engine.handle_message(said("lunch?", addressed=True))
    assert recall_block(last_prompt(llm)) == ""


async def test_a_question_sharing_only_a_particle_pair_recalls_nothing(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("小王的猫很可爱", who="Li"))
        await chatter(app, 40)
        await app.engine.handle_message(said("老王的狗叫什么？", addressed=True))
    assert "小王的猫" not in recall_block(last_prompt(llm))  # "王的": two words' edges


async def test_without_recall_the_same_budget_forgets_the_fact(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory={**SMALL, "recall_tokens": 0})) as app:
        await app.engine.handle_message(said("the guest wifi password is tangerine-42", who="Li"))
        await chatter(app, 40)
        await app.engine.handle_message(said("what is the wifi password?", addressed=True))
    prompt = last_prompt(llm)
    assert recall_block(prompt) == ""
    assert "tangerine-42" not in turns(prompt)


async def test_messages_kept_while_recall_was_off_are_recalled_once_it_is_on(
    make_config: ConfigFactory, llm: FakeLLM, tmp_path: Path, store_kind: StoreKind
) -> None:
    off = make_config(memory={**SMALL, "recall_tokens": 0})
    async with open_app(off) as app:
        engine = app.engine
        await engine.handle_message(said("the guest wifi password is tangerine-42", who="Li"))
        await engine.handle_message(said("明天有客人来，访客WiFi密码是 xingyun-88。", who="Li"))
        await engine.handle_message(said("the locker code is 1111", message_id="m1"))
        await engine.handle_message(said("the vault code is 2222", message_id="m2"))
        await chatter(app, 40)
        assert await engine.delete_message(GENERAL, "m1")
        assert await engine.edit_message(GENERAL, "m2", "the vault code is now 9090")
        # with recall off, storing a message did no indexing work
        unindexed = await app.store.term_counts(
            conversation_key=GENERAL.key, terms=["tangerine", "chatter"]
        )
        assert unindexed == {"tangerine": 0, "chatter": 0}
    if store_kind == "sqlite":  # the FTS5 table itself
        db = sqlite3.connect(tmp_path / "bot.sqlite3")
        assert db.execute("SELECT COUNT(*) FROM message_index").fetchone()[0] == 0
        db.close()
    async with open_app(make_config(memory=SMALL)) as app:
        docs = await app.store.term_counts(
            conversation_key=GENERAL.key,
            terms=["tangerine", "1111", "2222", "9090", "密码", "chatter"],
        )
        await app.engine.handle_message(
            said("@bot what is the guest WiFi password?", addressed=True)
        )
        english = recall_block(last_prompt(llm))
        await app.engine.handle_message(said("@bot 访客密码是什么？", addressed=True))
        chinese = recall_block(last_prompt(llm))
        await app.engine.handle_message(said("@bot and the locker code?", addressed=True))
        locker = recall_block(last_prompt(llm))
    assert "[Li] the guest wifi password is tangerine-42" in english
    assert "xingyun-88" in chinese
    assert "1111" not in locker  # deleted while recall was off: never indexed
    # indexed once each, as they read now
    assert docs == {"tangerine": 1, "1111": 0, "2222": 0, "9090": 1, "密码": 1, "chatter": 40}


async def test_a_reset_while_recall_is_off_leaves_nothing_in_the_index(
    make_config: ConfigFactory, llm: FakeLLM, tmp_path: Path, store_kind: StoreKind
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("the vault code is 4242"))
        await app.engine.handle_message(said("the vault code is 7719", where=RANDOM))
        await chatter(app, 40)
    async with open_app(make_config(memory={**SMALL, "recall_tokens": 0})) as app:
        await chatter(app, 3)
        await run_command(app.engine, CommandCall(GENERAL, "reset", "", "ana", "Ana"))
        general = await app.store.term_counts(
            conversation_key=GENERAL.key, terms=["4242", "vault", "chatter"]
        )
        random = await app.store.term_counts(conversation_key=RANDOM.key, terms=["7719"])
    assert general == {"4242": 0, "vault": 0, "chatter": 0}
    assert random == {"7719": 1}
    if store_kind == "sqlite":  # the FTS5 table and the counts table themselves
        db = sqlite3.connect(tmp_path / "bot.sqlite3")
        match = "SELECT rowid FROM message_index WHERE message_index MATCH '4242'"
        assert db.execute(match).fetchall() == []
        assert db.execute("SELECT COUNT(*) FROM message_index").fetchone()[0] == 1  # random's
        docs = dict(db.execute("SELECT conversation || ' ' || term, docs FROM search_terms"))
        db.close()
        assert not [key for key in docs if key.startswith(f"{GENERAL.key} ")]  # none of general's
        assert docs[f"{RANDOM.key} 7719"] == 1
    async with open_app(make_config(memory=SMALL)) as app:
        await chatter(app, 40)
        await app.engine.handle_message(said("what is the vault code?", addressed=True))
    assert "4242" not in "\n".join(m["content"] for m in last_prompt(llm))


async def test_recall_never_shows_another_conversations_messages(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("random: the vault code is 7719", where=RANDOM))
        await app.engine.handle_message(said("general: the vault code is 4242"))
        await chatter(app, 40)
        await app.engine.handle_message(said("thread: nothing about it here", where=THREAD))
        await app.engine.handle_message(said("what is the vault code?", addressed=True))
        general = last_prompt(llm)
        await app.engine.handle_message(
            said("what is the vault code?", where=THREAD, addressed=True)
        )
        thread = last_prompt(llm)
    assert "4242" in recall_block(general)
    assert "7719" not in "\n".join(m["content"] for m in general)
    assert "7719" not in "\n".join(m["content"] for m in thread)
    assert "4242" not in "\n".join(m["content"] for m in thread)  # a thread is its own history


async def test_recall_repeats_nothing_already_in_the_prompt(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        pinned = "The release freeze starts on December 15"
        await app.engine.handle_message(said(pinned))
        await run_command(app.engine, CommandCall(GENERAL, "pin", pinned, "ana", "Ana"))
        await app.engine.handle_message(said("the freeze was moved once before, in 2023"))
        await chatter(app, 40)
        await app.engine.handle_message(said("reminder: the freeze is strict"))
        await app.engine.handle_message(said("when does the freeze start?", addressed=True))
    prompt = last_prompt(llm)
    block = recall_block(prompt)
    assert "moved once before" in block  # an old message, out of the window: recalled
    assert pinned not in block  # already in the pins
    assert "freeze is strict" in turns(prompt) and "freeze is strict" not in block
    assert "when does the freeze start" not in block  # the message being answered


async def test_reset_removes_messages_from_the_index_and_vectors(
    make_config: ConfigFactory, llm: FakeLLM, tmp_path: Path, store_kind: StoreKind
) -> None:
    config = make_config(
        memory={**SMALL, "recall_embeddings": True}, llm={"embedding_model": "embed-small"}
    )
    async with open_app(config) as app:
        await app.engine.handle_message(said("the vault code is 4242"))
        await app.engine.handle_message(said("the vault code is 7719", where=RANDOM))
        await chatter(app, 40)
        await app.engine.drain()
        reset = CommandCall(GENERAL, "reset", "", "ana", "Ana")
        await run_command(app.engine, reset)
        await chatter(app, 3)
        await app.engine.handle_message(said("what is the vault code?", addressed=True))
        await app.engine.drain()
        general = await app.store.term_counts(conversation_key=GENERAL.key, terms=["4242", "vault"])
        random = await app.store.term_counts(conversation_key=RANDOM.key, terms=["7719"])
        embedded = [
            len(await app.store.vectors(conversation_key=c.key, before_id=10**9, model=m, limit=99))
            for c, m in ((GENERAL, "embed-small"), (RANDOM, "embed-small"))
        ]
    assert "4242" not in "\n".join(m["content"] for m in last_prompt(llm))
    # general: the question and its (echoed) answer; random: its message
    assert (general, random) == ({"4242": 0, "vault": 2}, {"7719": 1})
    assert embedded == [3 + 2, 1]  # general's since the reset; random's message
    if store_kind != "sqlite":
        return
    # the FTS5 table and the vectors in the SQLite file
    db = sqlite3.connect(tmp_path / "bot.sqlite3")
    rows = db.execute("SELECT rowid FROM message_index WHERE message_index MATCH '4242'")
    assert rows.fetchall() == []
    indexed = db.execute("SELECT COUNT(*) FROM message_index").fetchone()[0]
    vectors = db.execute("SELECT COUNT(*) FROM message_vectors").fetchone()[0]
    stored = db.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
    assert indexed == vectors == stored == 1 + 3 + 2  # random's message; general since reset
    assert db.execute("SELECT rowid FROM message_index WHERE message_index MATCH '7719'").fetchall()


async def test_deleting_and_editing_a_message_update_what_recall_finds(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        engine = app.engine
        await engine.handle_message(said("the vault code is 4242", message_id="m1"))
        await engine.handle_message(said("the locker code is 1111", message_id="m2"))
        await chatter(app, 40)
        assert await engine.delete_message(GENERAL, "m1")
        assert await engine.edit_message(GENERAL, "m2", "the vault code is now 9090")
        await engine.handle_message(said("what is the vault code?", addressed=True))
        block = recall_block(last_prompt(llm))
        await engine.handle_message(said("and the locker code?", addressed=True))
        locker = recall_block(last_prompt(llm))
        docs = await app.store.term_counts(
            conversation_key=GENERAL.key, terms=["4242", "1111", "9090", "locker", "vault"]
        )
    assert "4242" not in block
    assert "[Ana] the vault code is now 9090" in block
    assert "1111" not in locker
    # how common each term is follows too (the questions and their echoed answers count)
    assert docs == {"4242": 0, "1111": 0, "9090": 1, "locker": 2, "vault": 3}


async def test_an_imported_channel_is_searchable(
    make_config: ConfigFactory, llm: FakeLLM, fresh_storage: Storage
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("the guest wifi password is tangerine-42"))
        await chatter(app, 40)
        exported = await app.store.export_records(channel_key=GENERAL.channel_key)
    elsewhere = make_config(memory=SMALL, storage=fresh_storage("moved"))
    async with open_app(elsewhere) as app:
        await app.store.import_records(records=exported)
        await app.engine.handle_message(said("what is the wifi password?", addressed=True))
    assert "tangerine-42" in recall_block(last_prompt(llm))


async def test_stats_shows_each_layers_share_including_recall(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    async with open_app(make_config(memory=SMALL)) as app:
        await run_command(app.engine, CommandCall(GENERAL, "pin", "deploys on Fridays", "a", "A"))
        await app.engine.handle_message(said("the guest wifi password is tangerine-42"))
        await chatter(app, 40)
        await app.engine.handle_message(said("what is the wifi password?", addressed=True))
        reply = await run_command(app.engine, CommandCall(GENERAL, "stats", "", "ana", "Ana"))
        prompt = (await app.engine.preview(GENERAL)).prompt
    layers = prompt.breakdown.as_dict()
    assert list(layers) == ["system", "pins", "profile", "summary", "recall", "recent"]
    assert layers["recall"] > 0 and layers["pins"] > 0 and layers["profile"] == 0
    assert sum(layers.values()) + 3 == prompt.tokens  # + the reply priming
    for layer, tokens in layers.items():
        share = f"{tokens / prompt.tokens:.1%}"
        assert any(
            line.split()[:3] == [layer, f"{tokens:,}", share] for line in reply.text.split("\n")
        )
    assert "(1 earlier message found by search)" in reply.text


async def test_stats_says_when_recall_is_off(app: App) -> None:
    await app.engine.handle_message(said("hello"))
    reply = await run_command(app.engine, CommandCall(GENERAL, "stats", "", "ana", "Ana"))
    assert "recall" in reply.text and "off (memory.recall_tokens: 0)" in reply.text


# -- search by meaning --------------------------------------------------------------------------

CONNECTIVITY = ("network", "online", "internet")


def topical_embedding(text: str) -> list[float]:
    """Texts about connectivity point one way, whatever their words; others are hashed."""
    if any(word in text.lower() for word in CONNECTIVITY):
        return [1.0] + [0.0] * 15
    return fake_embedding(text)


async def test_embeddings_recall_a_message_that_shares_no_word_with_the_question(
    make_config: ConfigFactory, llm: FakeLLM, fresh_storage: Storage
) -> None:
    llm.embedder = topical_embedding
    fact = "Visitors use the guest network, key tangerine-42"
    question = "how do guests get online?"  # no word in common with the fact but "guest"s
    for embeddings in (False, True):
        config = make_config(
            memory={**SMALL, "recall_embeddings": embeddings},
            llm={"embedding_model": "embed-small"},
            storage=fresh_storage(str(embeddings)),
        )
        async with open_app(config) as app:
            await app.engine.handle_message(said(fact, who="Li"))
            await chatter(app, 40)
            await app.engine.drain()
            await app.engine.handle_message(said(question, addressed=True))
            await app.engine.drain()
            stored = await app.store.messages_after_turn(
                conversation_key=GENERAL.key, after_turn=0, limit=1000
            )
            vectors = await app.store.vectors(
                conversation_key=GENERAL.key, before_id=10**9, model="embed-small", limit=1000
            )
        block = recall_block(last_prompt(llm))
        assert ("tangerine-42" in block) is embeddings
    embedded = [r.body for r in llm.requests if r.path == "/v1/embeddings"]
    assert embedded and all(body["model"] == "embed-small" for body in embedded)
    texts = [text for body in embedded for text in body["input"]]
    # each message of the second run embedded once (the question too), and its vector kept
    assert sorted(texts) == sorted(m.content for m in stored)
    assert len(vectors) == len(stored)


async def test_a_history_kept_before_embeddings_were_on_is_embedded_in_the_background(
    make_config: ConfigFactory,
    llm: FakeLLM,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.core.memory.recall")
    monkeypatch.setenv("BOT_PROGRESS_SECONDS", "0")  # a progress line per batch
    llm.embedder = topical_embedding
    async with open_app(make_config(memory=SMALL)) as app:
        await app.engine.handle_message(said("Visitors use the guest network, key tangerine-42"))
        await chatter(app, 70)  # more than one batch of 64
    assert not [r for r in llm.requests if r.path == "/v1/embeddings"]
    config = make_config(
        memory={**SMALL, "recall_embeddings": True}, llm={"embedding_model": "embed-small"}
    )
    async with open_app(config) as app:
        await app.engine.backfill_embeddings()  # as `bot run` does when it starts
        await app.engine.drain()
        await app.engine.handle_message(said("how do guests get online?", addressed=True))
        await app.engine.drain()
        missing = await app.store.unembedded(before_id=None, model="embed-small", limit=10)
    assert "tangerine-42" in recall_block(last_prompt(llm))
    assert list(missing) == []
    batches = [len(r.body["input"]) for r in llm.requests if r.path == "/v1/embeddings"]
    assert batches[:2] == [64, 7]  # the 71 stored messages, newest first, then the new ones
    logged = [r.getMessage() for r in caplog.records if r.name == "bot.core.memory.recall"]
    assert logged[:4] == [
        "embedding stored messages: started",
        "embedding stored messages: 64 messages so far",
        "embedding stored messages: 71 messages so far",
        "embedded 71 stored messages for recall by meaning",
    ]


async def test_a_failing_embeddings_endpoint_leaves_keyword_recall_working(
    make_config: ConfigFactory, llm: FakeLLM, caplog: pytest.LogCaptureFixture
) -> None:
    llm.embeddings_status = 500
    config = make_config(
        memory={**SMALL, "recall_embeddings": True},
        llm={"embedding_model": "embed-small", "max_retries": 0},
    )
    with caplog.at_level(logging.WARNING):
        async with open_app(config) as app:
            await app.engine.handle_message(said("the guest wifi password is tangerine-42"))
            await chatter(app, 40)
            reply = await app.engine.handle_message(said("wifi password?", addressed=True))
            await app.engine.drain()
    assert reply is not None and reply.text.startswith("echo:")
    assert "tangerine-42" in recall_block(last_prompt(llm))
    assert "message failed" in caplog.text and "keyword recall only" in caplog.text


def test_embeddings_need_a_model(tmp_path: Path) -> None:
    from bot.config import load_config

    path = tmp_path / "config.yaml"
    path.write_text(
        "system_prompt: hi\nllm: {chat_model: m, summary_model: m}\n"
        "memory: {recall_embeddings: true}\n"
    )
    with pytest.raises(ConfigError, match=r"recall_embeddings needs llm\.embedding_model"):
        load_config(path, {})
    path.write_text(
        "system_prompt: hi\nllm: {chat_model: m, summary_model: m}\n"
        "memory: {max_context_tokens: 1000, recall_tokens: 600}\n"
    )
    with pytest.raises(ConfigError, match="memory: recall_tokens must be at most half"):
        load_config(path, {})


# -- the index ----------------------------------------------------------------------------------
# How text becomes terms (no store), and SQLite's own index: its FTS5 match syntax and a file
# from before recall. These open no bot, so the stores marker leaves them as they are: SQLite's
# (the contract suite searches every store; test_store_postgres.py its migrations).


def test_chinese_runs_are_indexed_as_characters_and_pairs() -> None:
    assert index_text("访客WiFi密码是 x") == " 访 客 访客 WiFi 密 码 是 密码 码是  x"
    assert query_terms("访客密码是什么？WiFi Zoë") == ["访客", "客密", "密码", "wifi", "zoë"]
    assert query_terms("猫") == ["猫"]
    assert query_terms("我的密码呢") == ["密码"]  # pairs with a particle or pronoun: no term


NASTY = (
    '"',
    '""',
    "*",
    "NEAR(a b)",
    "a AND OR NOT b",
    "-x ^y :z",
    "col:term",
    "(((",
    "'; DROP TABLE messages; --",
    "\x00",
    "🎉",
)


async def test_a_database_from_before_recall_is_indexed_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = old_schemas.connect(path)
    old_schemas.build(db, 1)
    db.execute(
        "INSERT INTO conversations VALUES ('console:local:general', 'console:local:general', 0, 0)"
    )
    db.execute(
        "INSERT INTO messages (conversation, role, author_id, author_name, content, tokens,"
        " created_at) VALUES ('console:local:general', 'user', 'a', 'Ana', '访客密码是 x-1', 9, 0)"
    )
    db.close()
    store = await SqliteStore.open(str(path))
    try:
        found = await store.search_messages(
            conversation_key=GENERAL.key,
            terms=query_terms("密码"),
            before_id=10,
            limit=5,
        )
    finally:
        await store.close()
    assert [(m.id, m.content) for m in found] == [(1, "访客密码是 x-1")]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.one_of(
        st.sampled_from(NASTY), st.text(st.characters(exclude_categories=["Cn", "Cs"]), max_size=40)
    )
)
def test_no_user_text_makes_an_invalid_search(query: str) -> None:
    """Whatever a user writes, the search runs (a term is quoted; operators are plain text),
    and English or Chinese words find the message that holds them. (Characters newer than the
    tokenizer's Unicode tables may tokenize differently: no error, maybe no match.)"""
    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2')"
    )
    db.execute("INSERT INTO t (body) VALUES (?)", (index_text("NEAR AND drop 访客 " + query),))
    terms = query_terms(query)
    if terms:
        found = db.execute("SELECT rowid FROM t WHERE t MATCH ?", (match_expression(terms),))
        rows = found.fetchall()  # no syntax error, whatever the text
        if query.isascii() or any("\u4e00" <= c <= "\u9fff" for c in query):
            assert rows == [(1,)], "a message holding the very words was not found"


@pytest.mark.stores("sqlite", reason="a timing test: one store is enough to time the queue")
async def test_a_question_is_answered_at_once_while_thousands_of_messages_wait_to_be_embedded(
    make_config: ConfigFactory, llm: FakeLLM
) -> None:
    """The embeddings server computes one request at a time (as a small local model does),
    50 ms a request and 2 ms a text. 3,000 messages arrive (a busy channel, or a catch-up);
    a question asked then is answered within a second of its model's reply."""
    llm.embedding_seconds = (0.05, 0.002)
    config = make_config(
        memory={**SMALL, "recall_embeddings": True}, llm={"embedding_model": "embed-small"}
    )
    async with open_app(config) as app:
        await app.engine.handle_message(said("the guest wifi password is tangerine-42"))
        for i in range(3000):
            await app.engine.handle_message(said(f"chatter {i} about lunch", who="Bo"))
        llm.script(Reply("noted", delay=0.3))
        started = time.monotonic()
        reply = await app.engine.handle_message(said("wifi password?", addressed=True))
        took = time.monotonic() - started
        waiting = app.engine.background.embedding_backlog
        await app.engine.aclose(grace=0)
    assert reply is not None and reply.text == "noted"
    assert took - 0.3 < 1.0, f"{took:.2f} s, the model's reply taking 0.3 s"
    assert waiting > 1000  # thousands still waited to be embedded
    assert "tangerine-42" in recall_block(last_prompt(llm))  # found by its keywords
    requests = [r for r in llm.requests if r.path.endswith("/embeddings")]
    assert len(requests) < 3000 / 32  # batched, not one request a message
