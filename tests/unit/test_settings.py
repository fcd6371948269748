"""The settings a conversation's turns use, as the config gives them."""

from __future__ import annotations

from bot.config import Strategy, parse_config
from bot.core.models import Conversation
from bot.core.settings import Answering, Recording, Settings, SettingsSource

RAW = {
    "system_prompt": "Be brief.",
    "llm": {
        "chat_model": "a",
        "summary_model": "b",
        "embedding_model": "e",
        "max_reply_tokens": 300,
        "reply_deadline_seconds": 30,
        "summary_max_tokens": 500,
    },
    "memory": {
        "strategy": "window",
        "max_context_tokens": 4000,
        "window_turns": 7,
        "keep_recent_turns": 3,
        "profile_tokens": 120,
        "recall_tokens": 400,
        "recall_messages": 5,
        "recall_embeddings": True,
        "recall_vector_limit": 900,
        "recall_min_similarity": 0.4,
        "summary_threshold": 0.7,
        "summary_target": 0.4,
        "summary_rebuild_every": 3,
        "summary_max_input_tokens": 6000,
        "summary_retry_seconds": 15,
    },
}


def test_the_settings_are_the_configs_memory_and_model_options() -> None:
    settings = Settings.from_config(parse_config(RAW, env={}))
    assert settings.system_prompt == "Be brief."
    assert settings.strategy is Strategy.WINDOW and settings.max_turns == 7
    assert not settings.uses_summary
    assert (settings.max_context_tokens, settings.max_reply_tokens) == (4000, 300)
    assert (settings.reply_deadline_seconds, settings.keep_recent_turns) == (30, 3)
    assert settings.profile_tokens == 120
    recall = settings.recall
    assert (recall.tokens, recall.messages, recall.embeddings) == (400, 5, True)
    assert (recall.vector_limit, recall.min_similarity) == (900, 0.4)
    summary = settings.summary
    assert (summary.threshold, summary.target, summary.rebuild_every) == (0.7, 0.4, 3)
    assert (summary.max_input_tokens, summary.max_tokens, summary.retry_seconds) == (6000, 500, 15)


async def test_without_a_store_every_conversation_gets_the_configs_defaults() -> None:
    config = parse_config(RAW, env={})
    source = SettingsSource(config)
    for conversation in (Conversation.console("a"), Conversation("slack", "T1", "C1", "171.2")):
        assert await source.for_conversation(conversation) == Settings.from_config(config)


async def test_a_platforms_section_gives_the_defaults_of_answering_and_recording() -> None:
    raw = {**RAW, "slack": {"answer_channels": ["C9"], "record": "addressed"}}
    source = SettingsSource(parse_config(raw, env={}))
    everything = await source.for_conversation(Conversation("slack", "T1", "C9", "171.2"))
    assert everything.answer is Answering.ALL and everything.record is Recording.ADDRESSED
    usual = await source.for_conversation(Conversation("slack", "T1", "C1"))
    assert usual.answer is Answering.MENTIONS and usual.record is Recording.ADDRESSED
    console = await source.for_conversation(Conversation.console("a"))
    assert console.answer is Answering.MENTIONS and console.record is Recording.ALL
