"""The context window each server's ``/models`` entry tells, in that server's own shape."""

from __future__ import annotations

from bot.llm.windows import Window, told_window


def test_each_servers_field_is_read() -> None:
    vllm = {"id": "m", "object": "model", "max_model_len": 32768}
    assert told_window(vllm) == Window(32768, "max_model_len")
    openrouter = {"id": "m", "context_length": 128000}
    assert told_window(openrouter) == Window(128000, "context_length")
    groq = {"id": "m", "context_window": 8192}
    assert told_window(groq) == Window(8192, "context_window")
    llama_server = {
        "id": "m",
        "owned_by": "llamacpp",
        "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576},
    }
    assert told_window(llama_server) == Window(8192, "meta.n_ctx_train")


def test_the_length_served_wins_over_the_length_trained_for() -> None:
    both = {"id": "m", "max_model_len": 4096, "meta": {"n_ctx_train": 8192}}
    assert told_window(both) == Window(4096, "max_model_len")


def test_an_entry_that_tells_nothing_usable_gives_none() -> None:
    assert told_window({"id": "m", "object": "model", "owned_by": "me", "permissions": []}) is None
    assert told_window({"id": "m", "max_model_len": 0}) is None
    assert told_window({"id": "m", "max_model_len": "4096"}) is None
    assert told_window({"id": "m", "context_length": True}) is None
    assert told_window({"id": "m", "meta": None}) is None
