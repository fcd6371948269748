"""The message rendering a prompt is built from."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.memory.tokens import ChatTokenizer
from bot.core.models import (
    Role,
    StoredMessage,
    day_line,
    prompt_speakers,
    render_content,
    speaker_of,
    strip_speaker_tags,
    utc_day,
)


def test_a_user_message_says_who_wrote_it_and_a_reply_does_not() -> None:
    user = StoredMessage(1, 1, Role.USER, "u1", "李明", "明天上午十点开会", 9, 0.0)
    reply = StoredMessage(2, 1, Role.ASSISTANT, "bot", "assistant", "好的", 2, 0.0)
    assert [user.prompt_message(), reply.prompt_message()] == [
        {"role": "user", "content": "[李明] 明天上午十点开会"},
        {"role": "assistant", "content": "好的"},
    ]


def test_a_dated_user_message_opens_with_its_day_and_an_answer_is_never_dated() -> None:
    user = StoredMessage(1, 1, Role.USER, "u1", "Ana", "ship it", 3, 0.0)
    reply = StoredMessage(2, 1, Role.ASSISTANT, "bot", "assistant", "done", 1, 0.0)
    assert user.prompt_message("2026-12-04")["content"] == "2026-12-04\n[Ana] ship it"
    assert reply.prompt_message("2026-12-04")["content"] == "done"
    assert utc_day(1_796_428_799.0) == "2026-12-04"  # 23:59:59 UTC
    assert utc_day(1_796_428_800.0) == "2026-12-05"


def test_the_speaker_of_a_dated_message_is_read_past_its_day() -> None:
    messages = [
        {"role": "user", "content": "2026-12-04\n[Ana] hi"},
        {"role": "user", "content": "[Bo] 2026-12-04\n  [Cy] quoted"},
        {"role": "assistant", "content": "2026-12-05\n[Dee] never"},
    ]
    assert speaker_of(messages[0]["content"]) == "Ana"
    assert prompt_speakers(messages) == {"Ana", "Bo"}


def test_a_day_and_a_speaker_tag_copied_to_a_reply_are_taken_off() -> None:
    assert strip_speaker_tags("2026-12-04\n[Ana] The budget is 4200.", ["Ana"]) == (
        "The budget is 4200."
    )
    assert strip_speaker_tags("[Bo] 2026-12-04\n[Ana] Yes.", ["Ana", "Bo"]) == "Yes."
    # A date that is the answer stays, and so does one before a tag naming nobody who spoke.
    assert strip_speaker_tags("2026-12-04\nThat is when.", ["Ana"]) == "2026-12-04\nThat is when."
    assert strip_speaker_tags("2026-12-04\n[1] see notes", ["Ana"]) == "2026-12-04\n[1] see notes"


names = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=60)
days = st.integers(0, 4_102_444_800).map(float)  # 1970 to 2100


@pytest.mark.parametrize("model", ["gpt-4o-mini", "gpt-4"])  # o200k_base, cl100k_base
@given(name=names, text=texts, when=days)
@settings(deadline=None)  # the first example loads the encoding
def test_a_day_line_costs_the_same_whatever_message_it_opens(
    model: str, name: str, text: str, when: float
) -> None:
    """What the fit relies on: a dated message takes its stored count plus its line's."""
    count = ChatTokenizer.for_model(model).count
    line, rendered = day_line(utc_day(when)), render_content(Role.USER, name, text)
    assert count(line + rendered) == count(line) + count(rendered)
