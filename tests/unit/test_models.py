"""The message rendering a prompt is built from, and the prompt's reuse of it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.core.models import Role, StoredMessage
from bot.core.prompt.assembler import _Rendered


@given(
    st.lists(
        st.tuples(
            st.lists(st.integers(1, 40), max_size=30, unique=True), st.sets(st.integers(1, 40))
        ),
        max_size=12,
    )
)
def test_prompts_in_a_row_render_each_row_as_it_reads_now(
    prompts: list[tuple[list[int], set[int]]],
) -> None:
    """Rendering kept from an earlier prompt never shows a row as it was before an edit."""
    render = _Rendered(size=16)
    held: dict[int, StoredMessage] = {}
    for ids, edited in prompts:
        rows = []
        for message_id in sorted(ids):
            row = held.get(message_id)
            if row is None or message_id in edited:  # an edit: a new row with the new text
                version = 0 if row is None else int(row.content) + 1
                row = StoredMessage(
                    message_id, message_id, Role.USER, "u", "Ana", str(version), 1, 0.0
                )
                held[message_id] = row
            rows.append(row)
        assert render(rows) == [row.prompt_message() for row in rows]


def test_a_user_message_says_who_wrote_it_and_a_reply_does_not() -> None:
    user = StoredMessage(1, 1, Role.USER, "u1", "李明", "明天上午十点开会", 9, 0.0)
    reply = StoredMessage(2, 1, Role.ASSISTANT, "bot", "assistant", "好的", 2, 0.0)
    assert [user.prompt_message(), reply.prompt_message()] == [
        {"role": "user", "content": "[李明] 明天上午十点开会"},
        {"role": "assistant", "content": "好的"},
    ]
