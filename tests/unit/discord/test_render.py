"""Splitting replies for Discord's 2,000-character messages."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.adapters.discord.render import MESSAGE_LIMIT, split_message

FENCE_LINE = re.compile(r"^```", re.MULTILINE)


def balanced(text: str) -> bool:
    return len(FENCE_LINE.findall(text)) % 2 == 0


def test_short_text_is_one_part() -> None:
    assert [p.text for p in split_message("hello\n\nworld")] == ["hello\n\nworld"]
    assert split_message("  \n") == []


def test_breaks_at_paragraphs_not_mid_paragraph() -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 60 for i in range(20)]
    text = "\n\n".join(paragraphs)
    parts = split_message(text)
    assert len(parts) > 1
    assert "".join(p.body for p in parts) == text
    for part in parts:
        assert len(part.text) <= MESSAGE_LIMIT
        assert part.text.startswith("Paragraph ")
        assert part.text.rstrip().endswith("word")


def test_a_long_code_block_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"print({i})  # line {i}" for i in range(300))
    text = f"Here is the script:\n\n```python\n{code}\n```\n\nRun it with python."
    parts = split_message(text)
    assert len(parts) >= 3
    assert "".join(p.body for p in parts) == text
    for part in parts:
        assert len(part.text) <= MESSAGE_LIMIT
        assert balanced(part.text)
    assert parts[1].text.startswith("```python\nprint(")
    assert parts[0].text.endswith("\n```")


def test_an_unclosed_fence_from_the_model_is_closed() -> None:
    parts = split_message("look:\n```js\nconsole.log(1)\n")
    assert [p.text for p in parts] == ["look:\n```js\nconsole.log(1)\n```"]


def test_a_line_longer_than_a_message_is_cut() -> None:
    text = "x" * 5000 + "\n\n" + "y " * 1500
    parts = split_message(text)
    assert "".join(p.body for p in parts) == text
    assert all(len(p.text) <= MESSAGE_LIMIT for p in parts)


words = st.text(alphabet="abcdefgh ", min_size=1, max_size=120)
prose = st.lists(words, min_size=1, max_size=12).map(" ".join)
code = st.tuples(
    st.sampled_from(["", "python", "js"]),
    st.lists(st.text(alphabet="abc(){}= ;", max_size=300), min_size=1, max_size=40),
).map(lambda t: f"```{t[0]}\n" + "\n".join(t[1]) + "\n```")
blocks = st.lists(st.one_of(prose, code), min_size=1, max_size=30)


@settings(max_examples=150, deadline=None)
@given(blocks, st.sampled_from(["\n\n", "\n"]))
def test_parts_fit_are_balanced_and_join_to_the_text(chunks: list[str], sep: str) -> None:
    text = sep.join(chunks)
    parts = split_message(text)
    assert "".join(p.body for p in parts).strip() == text.strip()
    for part in parts:
        assert len(part.text) <= MESSAGE_LIMIT
        assert balanced(part.text)
        assert part.body.strip("\n") in part.text
