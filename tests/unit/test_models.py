"""The message rendering a prompt is built from."""

from __future__ import annotations

from bot.core.models import Role, StoredMessage


def test_a_user_message_says_who_wrote_it_and_a_reply_does_not() -> None:
    user = StoredMessage(1, 1, Role.USER, "u1", "李明", "明天上午十点开会", 9, 0.0)
    reply = StoredMessage(2, 1, Role.ASSISTANT, "bot", "assistant", "好的", 2, 0.0)
    assert [user.prompt_message(), reply.prompt_message()] == [
        {"role": "user", "content": "[李明] 明天上午十点开会"},
        {"role": "assistant", "content": "好的"},
    ]
