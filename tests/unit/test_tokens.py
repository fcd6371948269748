"""Token counting as the API counts it, offline."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from bot.core.memory.tokens import (
    ENCODING_SHA256,
    ChatTokenizer,
    encoding_name_for,
    install_encodings,
)

# The example from OpenAI's cookbook "How to count tokens with tiktoken", with the counts the
# API itself reported for it.
COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate "
        "jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities "
        "for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client "
        "deliverable.",
    },
]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-3.5-turbo-0613", 129),
        ("gpt-4-0613", 129),
        ("gpt-4", 129),
        ("gpt-4o", 124),
        ("gpt-4o-mini", 124),
    ],
)
def test_reproduces_the_cookbooks_published_counts(model: str, expected: int) -> None:
    assert ChatTokenizer.for_model(model).count_messages(COOKBOOK_MESSAGES) == expected


@pytest.mark.parametrize(
    ("model", "encoding", "exact"),
    [
        ("gpt-4o-mini", "o200k_base", True),
        ("gpt-4.1", "o200k_base", True),
        ("gpt-5-mini", "o200k_base", True),
        ("o3-mini", "o200k_base", True),
        ("gpt-4-turbo", "cl100k_base", True),
        ("gpt-3.5-turbo", "cl100k_base", True),
        ("openai/gpt-4o", "o200k_base", True),
        ("llama3.1:8b", "o200k_base", False),
        ("qwen2.5:7b-instruct", "o200k_base", False),
    ],
)
def test_encoding_per_model_with_a_stated_fallback(model: str, encoding: str, exact: bool) -> None:
    assert encoding_name_for(model) == (encoding, exact)
    tokenizer = ChatTokenizer.for_model(model)
    assert ("counted exactly" in tokenizer.describe()) is exact


def test_special_token_strings_are_plain_text() -> None:
    tokenizer = ChatTokenizer.for_model("gpt-4o")
    assert tokenizer.count("<|endoftext|>") > 1
    assert tokenizer.count("<|im_start|>system<|im_end|>") > 3


def test_chinese_is_counted_not_estimated() -> None:
    text = "我叫张伟，是一名后端开发工程师，主要用 Python 和 Go"
    o200k = ChatTokenizer.for_model("gpt-4o").count(text)
    cl100k = ChatTokenizer.for_model("gpt-4").count(text)
    assert o200k < cl100k
    assert o200k > len(text) / 4  # characters / 4 would under-count Chinese


def test_encodings_install_without_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    target = install_encodings(tmp_path / "cache")
    files = sorted((tmp_path / "cache").iterdir())
    assert target == tmp_path / "cache"
    assert sorted(hashlib.sha256(f.read_bytes()).hexdigest() for f in files) == sorted(
        ENCODING_SHA256.values()
    )
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(target)
    assert previous is None
