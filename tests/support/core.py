"""The core wired in-process for the unit tier: the engine over the in-memory store and the
in-process chat model, configured as the other tiers are (tests/conftest.py's base config)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.charts import MatplotlibCharts
from bot.config import Config, parse_config
from bot.core.engine import Engine
from bot.core.memory.calibration import Calibrator
from bot.core.memory.tokens import ChatTokenizer
from bot.core.observe import NoObserver
from bot.core.ports.llm import ChatModels
from bot.core.settings.keys import chat_models, summary_models
from bot.store.memory import MemoryStore
from bot.wiring import build_engine, exact_models
from tests.conftest import config_dict
from tests.support.fake_chat import FakeChatModel


def unit_config(**sections: Any) -> Config:
    """The tests' base config with ``sections`` merged in; no endpoint or file is used."""
    data = config_dict("http://127.0.0.1:9/v1", Path("unused.sqlite3"), **sections)
    return parse_config(data, {})


@dataclass
class Core:
    engine: Engine
    store: MemoryStore
    model: FakeChatModel
    """Answers and summaries alike (one endpoint), under the config's chat model."""
    models: dict[str, FakeChatModel]
    """Every chat and summary model a conversation may choose, by name (``model`` among
    them)."""


@asynccontextmanager
async def running_core(
    config: Config, *, store: MemoryStore | None = None, model: FakeChatModel | None = None
) -> AsyncIterator[Core]:
    """An engine as ``bot.wiring.open_app`` builds it, closed afterwards; ``model`` answers
    under the config's chat model, a model of its own under each other name allowed."""
    store = store if store is not None else MemoryStore()
    model = model if model is not None else FakeChatModel(config.llm.chat_model)
    models = {model.model: model}
    for name in (*chat_models(config), *summary_models(config)):
        models.setdefault(name, FakeChatModel(name))
    tokenizer = ChatTokenizer.for_model(config.llm.chat_model)
    calibrator = Calibrator(store, exact_models=exact_models(config, tokenizer))
    await calibrator.load()
    charts = MatplotlibCharts()
    engine = build_engine(
        config,
        store,
        chat=ChatModels(*(models[name] for name in chat_models(config))),
        summary=ChatModels(*(models[name] for name in summary_models(config))),
        embedder=None,
        tokenizer=tokenizer,
        calibrator=calibrator,
        observer=NoObserver(),
        charts=charts,
    )
    try:
        yield Core(engine=engine, store=store, model=model, models=models)
    finally:
        await engine.aclose()
        charts.close()
