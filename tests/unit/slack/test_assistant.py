"""The assistant pane's pure parts: which events are its threads, and a thread's title."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.adapters.slack.assistant import (
    TITLE_CHARS,
    AssistantThread,
    in_assistant_thread,
    started_thread,
    title_from,
)


def test_a_started_thread_is_read_from_its_event() -> None:
    thread = {"user_id": "U1", "channel_id": "D1", "thread_ts": "1.2", "context": {}}
    body = {"event": {"type": "assistant_thread_started", "assistant_thread": thread}}
    assert started_thread(body) == AssistantThread(channel="D1", thread="1.2", user="U1")
    assert started_thread({"event": {"type": "assistant_thread_started"}}) is None
    other = {"event": {"type": "assistant_thread_context_changed", "assistant_thread": thread}}
    assert started_thread(other) is None


def test_only_replies_in_dm_threads_are_in_the_pane() -> None:
    assert in_assistant_thread({"channel_type": "im", "thread_ts": "1.0", "ts": "2.0"})
    assert not in_assistant_thread({"channel_type": "im", "ts": "2.0"})  # the DM itself
    assert not in_assistant_thread({"channel_type": "im", "thread_ts": "2.0", "ts": "2.0"})
    assert not in_assistant_thread({"channel_type": "channel", "thread_ts": "1.0", "ts": "2.0"})


def test_a_title_is_the_question_on_one_line_cut_at_a_word() -> None:
    assert title_from("  How do I\n rotate   logs? ") == "How do I rotate logs?"
    long = "Which of the three deployment plans we discussed costs the least over a year?"
    assert title_from(long) == "Which of the three deployment plans we discussed costs the…"
    assert title_from("x" * 100) == "x" * (TITLE_CHARS - 1) + "…"


@given(st.text())
def test_a_title_fits_and_is_one_line(question: str) -> None:
    title = title_from(question)
    assert len(title) <= TITLE_CHARS
    assert "\n" not in title and title == title.strip()
