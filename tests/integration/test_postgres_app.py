"""``storage.url`` runs the whole bot on PostgreSQL: what one process stores, another process
pointed at the same database sees."""

from __future__ import annotations

from pathlib import Path

from bot.config import parse_config
from bot.core.models import Conversation, IncomingMessage
from bot.store.postgres.store import PostgresStore
from bot.wiring import open_app
from tests.conftest import config_dict
from tests.support.fake_llm import FakeLLM


async def test_storage_url_keeps_the_conversation_in_postgresql(
    llm: FakeLLM, postgres_url: str, tmp_path: Path
) -> None:
    raw = config_dict(llm.url, tmp_path / "unused.sqlite3")
    config = parse_config(raw, {"DATABASE_URL": postgres_url})
    general = Conversation.console("general")
    async with open_app(config) as first:
        assert isinstance(first.store, PostgresStore)
        await first.engine.handle_message(
            IncomingMessage(general, "u1", "Ana", "my name is Ana", addressed=True)
        )
    async with open_app(config) as second:
        await second.engine.handle_message(
            IncomingMessage(general, "u1", "Ana", "what is my name?", addressed=True)
        )
    sent = llm.chat_requests[-1]["messages"]
    assert [m["content"] for m in sent[1:]] == [
        "[Ana] my name is Ana",
        "echo: [Ana] my name is Ana",
        "[Ana] what is my name?",
    ]
    assert not (tmp_path / "unused.sqlite3").exists()
