"""Splitting a prompt's tokens by script."""

from __future__ import annotations

from bot.core.memory.scripts import ScriptTokens, split_prompt, split_tokens


def count(text: str) -> int:
    return len(text)  # a character a token, for the tests


def test_a_prompt_is_split_by_script_counting_runs_apart() -> None:
    text = "deploy 明天下午三点 ok Привет мир 🎉"
    split = split_tokens(count, [text], len(text) + 4)  # + framing
    # "Привет мир 🎉" is one run: the space between two letters of a script stays in it.
    assert split == ScriptTokens(latin=len(text) + 4 - 6 - 12, cjk=6, other=12)
    assert split_tokens(count, ["plain ascii"], 15) == ScriptTokens(15)


def test_runs_counted_apart_never_take_more_than_the_whole() -> None:
    text = "中文"
    assert split_tokens(count, [text], 1) == ScriptTokens(latin=0, cjk=1)


def test_a_prompt_is_split_over_every_value_of_its_messages() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "name": "李", "content": "你好"},
    ]
    assert split_prompt(count, messages, 40) == ScriptTokens(latin=37, cjk=3)
