"""The one splitter both platforms post through (``bot.adapters.text.split``): every part
within the limit, the parts carrying the whole text in order, and every part's code fences
balanced under the platform's own rule (Markdown fence lines for Discord, any triple backtick
for Slack)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.adapters.discord import translate as discord
from bot.adapters.slack import translate as slack
from bot.adapters.text import (
    Fence,
    Fences,
    Part,
    any_fences,
    line_fences,
    mentioned,
    named_mentions,
    shorten,
    split,
    without_mentions_of,
)

RULES = {"line": line_fences, "any": any_fences}


def balanced(text: str, fences: Fences) -> bool:
    found = fences(text)
    return not found or not found[-1].opens


def open_fence(text: str, fences: Fences, point: int) -> Fence | None:
    """The fence whose block is open at ``point`` of ``text``."""
    opened = None
    for fence in fences(text):
        if fence.start >= point:
            break
        opened = fence if fence.opens else (opened if point < fence.end else None)
    return opened


def carried(part: Part, opened: str | None, closed: str | None) -> str:
    """What a part shows of its body: its text without the fence reopened at its start and
    the one closed at its end."""
    text = part.text
    if opened is not None:
        assert text.startswith(opened + "\n")
        text = text[len(opened) + 1 :]
    if closed is not None:
        assert text.endswith("\n" + closed)
        text = text[: -len(closed) - 1]
    return text


_PIECES = st.sampled_from(
    [
        "word ", "a", " ", "\n", "\n\n", "```", "```python\n", "\n```\n", "~~~\n", "`", "``",
        "<https://x.io/a|read this>", "&amp;", "&lt;", "é", "x" * 40, "    indented\n",
    ]
)  # fmt: skip
TEXTS = st.lists(_PIECES, max_size=300).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXTS, st.integers(min_value=0, max_value=200), st.sampled_from(sorted(RULES)))
def test_parts_fit_carry_the_text_in_order_and_balance_their_fences(
    text: str, extra: int, rule: str
) -> None:
    fences = RULES[rule]
    limit = (3 * 100 + 10 if rule == "line" else 20) + extra  # room to reopen and close
    parts = split(text, limit, fences)
    for part in parts:
        assert len(part.text) <= limit, part
        assert balanced(part.text, fences), part
        assert part.body.strip()
    # The bodies are consecutive slices of the text: only blank stretches are left out.
    joined = "".join(part.body for part in parts)
    assert "".join(joined.split()) == "".join(text.split())
    position = 0
    for part in parts:
        found = text.find(part.body, position)
        assert found >= 0 and not text[position:found].strip()
        position = found + len(part.body)
    assert not text[position:].strip()
    # Each part shows its body whole (less the newlines at its ends), after the fence its
    # block reopens with and before the one that closes it.
    position = 0
    for part in parts:
        begins = text.find(part.body, position)
        position = begins + len(part.body)
        opened, closed = open_fence(text, fences, begins), open_fence(text, fences, position)
        shown = carried(part, opened and opened.reopen, closed and closed.close)
        assert shown == part.body.strip("\n")


def test_a_code_block_cut_in_two_is_closed_and_reopened_with_its_language() -> None:
    code = "\n".join(f"x = {i}" for i in range(60))
    text = f"Before.\n\n```python\n{code}\n```\n\nAfter."
    parts = split(text, 200, line_fences)
    assert len(parts) > 2
    assert "".join(p.body for p in parts) == text
    middle = parts[1]
    assert carried(middle, "```python", "```") == middle.body.strip("\n")
    assert all(balanced(p.text, line_fences) for p in parts)
    assert parts[-1].text.endswith("After.")


def test_cuts_prefer_paragraphs_then_lines_then_words() -> None:
    paragraphs = "\n\n".join(f"paragraph {i} " + "word " * 12 for i in range(10))
    assert all(p.text.startswith("paragraph") for p in split(paragraphs, 200, line_fences))
    lines = "\n".join(f"line {i} " + "word " * 12 for i in range(20))
    assert all(p.text.startswith("line") for p in split(lines, 200, line_fences))
    words = "word " * 200
    parts = split(words, 100, line_fences)
    assert all(p.text.strip() and set(p.text.split()) == {"word"} for p in parts)


def test_links_entities_and_backtick_runs_are_never_cut() -> None:
    text = " ".join(f"<https://x.io/{i}|part {i} here> &amp; ```` " for i in range(40))
    for part in split(text, 120, any_fences):
        assert part.text.count("<") == part.text.count(">")
        assert part.text.count("&") == part.text.count("&amp;")


def test_short_or_blank_text() -> None:
    assert [p.text for p in split("hello\n\nworld", 100, line_fences)] == ["hello\n\nworld"]
    assert split("  \n", 100, any_fences) == []
    assert [p.text for p in split("look:\n```js\nx()\n", 100, line_fences)] == [
        "look:\n```js\nx()\n```"
    ]


def test_a_reply_too_long_is_shortened_at_a_break() -> None:
    assert shorten("short", 100) is None
    long = shorten("a" * 60 + "\n\nsecond part " + "x" * 200, 100)
    assert long is not None and long.shown == "a" * 60


@pytest.mark.parametrize(
    ("syntax", "bot", "ana", "written"),
    [
        (slack.MENTION, "U0BOT", "U0ANA", "<@U0BOT>  ask <@U0ANA|ana> and <@U0BOB> about it"),
        (discord.USER_MENTION, "900", "7001", "<@!900>  ask <@7001> and <@7002> about it"),
    ],
    ids=["slack", "discord"],
)
def test_mentions_read_the_same_on_every_platform(
    syntax: re.Pattern[str], bot: str, ana: str, written: str
) -> None:
    assert mentioned(written, syntax) >= {bot, ana}
    text = without_mentions_of(written, {bot}, syntax)
    shown = named_mentions(text, {ana: "Ana"}, syntax)
    # The bot's own mention goes with the spaces after it; known people read as @name; an
    # unknown one stays as written.
    assert shown.startswith("ask @Ana and <@")
    assert shown.endswith("> about it")
