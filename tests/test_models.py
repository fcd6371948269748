"""The message rendering a prompt is built from."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.models import Role, StoredMessage, prompt_messages

stored = st.builds(
    StoredMessage,
    id=st.integers(1, 10**6),
    turn_id=st.integers(1, 10**6),
    role=st.sampled_from(list(Role)),
    author_id=st.text(max_size=5),
    author_name=st.text(max_size=12),
    content=st.text(max_size=40),
    tokens=st.integers(0, 100),
    created_at=st.floats(0, 2e9),
)


@given(st.lists(stored, max_size=8))
def test_many_messages_render_as_each_does_alone(rows: list[StoredMessage]) -> None:
    assert prompt_messages(rows) == [row.prompt_message() for row in rows]


def test_a_user_message_says_who_wrote_it_and_a_reply_does_not() -> None:
    user = StoredMessage(1, 1, Role.USER, "u1", "李明", "明天上午十点开会", 9, 0.0)
    reply = StoredMessage(2, 1, Role.ASSISTANT, "bot", "assistant", "好的", 2, 0.0)
    assert prompt_messages([user, reply]) == [
        {"role": "user", "content": "[李明] 明天上午十点开会"},
        {"role": "assistant", "content": "好的"},
    ]
