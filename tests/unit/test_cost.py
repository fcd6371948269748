"""The price table and what a call costs: list prices by default, the config's over them,
local models free, a remote model without a price flagged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import ConfigError, load_config, parse_config
from bot.core.cost import DEFAULT_PRICES, Price, Prices, money
from bot.wiring import prices
from tests.conftest import config_dict


def _config(base_url: str, **llm: Any) -> Any:
    return parse_config(config_dict(base_url, Path("unused.sqlite3"), llm=llm), {})


def test_a_call_costs_its_uncached_cached_and_completion_tokens_at_their_prices() -> None:
    price = Price(input=2.0, cached_input=0.5, output=8.0)
    # (1,000,000 - 400,000) × 2 + 400,000 × 0.5 + 250,000 × 8, per million
    cost = price.cost(prompt_tokens=1_000_000, cached_tokens=400_000, completion_tokens=250_000)
    assert cost == pytest.approx(1.2 + 0.2 + 2.0)
    assert price.cost(prompt_tokens=1000, cached_tokens=0, completion_tokens=0) == 0.002
    # a server saying more were cached than were sent bills no more than the prompt
    over = price.cost(prompt_tokens=100, cached_tokens=500, completion_tokens=0)
    assert over == pytest.approx(100 * 0.5 / 1_000_000)


def test_common_openai_models_are_priced_by_default_at_a_remote_endpoint() -> None:
    table = prices(_config("https://api.openai.com/v1"))
    assert table.get("gpt-4o-mini") == Price(0.15, 0.075, 0.60)
    assert table.get("text-embedding-3-small") == Price(0.02, 0.02, 0.0)
    for name in ("gpt-4o", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "o3", "o4-mini"):
        assert table.priced(name), name
    assert table.cost(
        "gpt-4o", prompt_tokens=2_000_000, cached_tokens=1_000_000, completion_tokens=100_000
    ) == pytest.approx(2.5 + 1.25 + 1.0)


def test_the_config_prices_a_model_over_the_default_and_cached_input_defaults_to_input() -> None:
    config = _config(
        "https://api.openai.com/v1",
        prices={"gpt-4o-mini": {"input": 1, "output": 3}, "my-model": {"input": 0.5}},
    )
    table = prices(config)
    assert table.get("gpt-4o-mini") == Price(1.0, 1.0, 3.0)
    assert table.get("my-model") == Price(0.5, 0.5, 0.0)
    assert table.get("gpt-4o") == DEFAULT_PRICES["gpt-4o"]  # the others keep theirs


@pytest.mark.parametrize(
    "base_url", ["http://localhost:11434/v1", "http://127.0.0.1:8080/v1", "http://[::1]:8000/v1"]
)
def test_models_at_a_local_endpoint_are_free_unless_the_config_prices_them(base_url: str) -> None:
    free = prices(_config(base_url))
    assert free.get("gpt-4o-mini") == Price(0.0, 0.0, 0.0)  # the list price is not applied
    assert free.priced("gpt-4o-mini")
    priced = prices(_config(base_url, prices={"gpt-4o-mini": {"input": 4, "output": 8}}))
    assert priced.cost(
        "gpt-4o-mini", prompt_tokens=500_000, cached_tokens=0, completion_tokens=0
    ) == pytest.approx(2.0)


def test_a_summary_model_at_a_private_address_is_free_while_the_remote_chat_model_is_not() -> None:
    config = _config("https://api.openai.com/v1", summary_base_url="http://10.0.0.5:8000/v1")
    table = prices(config)
    assert table.get("gpt-4o-mini") == Price(0.0, 0.0, 0.0)  # also the summary model: local


def test_a_remote_model_without_a_price_costs_nothing_and_is_flagged() -> None:
    table = Prices({})
    assert not table.priced("some-new-model")
    assert (
        table.cost("some-new-model", prompt_tokens=10**6, cached_tokens=0, completion_tokens=10**6)
        == 0
    )


def test_money_is_shown_in_dollars_to_the_digit_that_matters() -> None:
    assert money(0) == "$0"
    assert money(0.00039) == "$0.00039"
    assert money(1.5) == "$1.50"
    assert money(1234.5) == "$1,234.50"


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ("{input: -1}", "llm.prices.m.input: Input should be greater than or equal to 0"),
        ("{input: 1, output: -2}", "llm.prices.m.output"),
        ("{input: 1, cached_input: .nan}", "llm.prices.m.cached_input"),
        ("{output: 1}", "llm.prices.m.input: Field required"),
    ],
)
def test_a_bad_price_is_refused_naming_its_key(tmp_path: Path, price: str, message: str) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"system_prompt: hi\nllm: {{chat_model: a, summary_model: b, prices: {{m: {price}}}}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as raised:
        load_config(path, env={})
    assert message in str(raised.value)
