"""The prompt log in memory: each channel's latest prompts; and the summaries' history."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from bot.core.models import Conversation, Person, StoredMessage, Summary
from bot.core.ports.prompts import PromptRecord
from bot.store.memory.tables import Tables


class PromptLog(Tables):
    """The :class:`bot.core.ports.prompts.PromptLog` part of the in-memory store."""

    async def log_prompt(self, *, record: PromptRecord, keep: int) -> None:
        kept = dataclasses.replace(
            record,
            id=self.next_id("prompt_log", self.prompt_rows),
            layers=dict(record.layers),
            messages=tuple({"role": m["role"], "content": m["content"]} for m in record.messages),
            recall=tuple(record.recall),
        )
        self.prompt_rows[kept.id] = kept
        for old in self._newest(record.channel_key)[keep:]:
            del self.prompt_rows[old.id]

    async def logged_prompts(self, *, channel_key: str, limit: int) -> Sequence[PromptRecord]:
        return self._newest(channel_key)[:limit]

    def _newest(self, channel_key: str) -> list[PromptRecord]:
        """The channel's logged prompts, newest first."""
        held = [r for r in self.prompt_rows.values() if r.channel_key == channel_key]
        return sorted(held, key=lambda record: record.id, reverse=True)

    async def forget_prompts(self, *, person: Person) -> int:
        prefix = f"{person.platform}:{person.workspace}:"
        return self._drop(lambda r: r.person == person.user_id and r.channel_key.startswith(prefix))

    async def drop_prompts(
        self, *, conversation: Conversation, message: StoredMessage, group: bool
    ) -> int:
        def shows(record: PromptRecord) -> bool:
            if record.channel_key == conversation.channel_key and (
                record.question_id >= message.id or record.at >= message.created_at
            ):
                return True
            return (
                group
                and record.channel_key.startswith(conversation.workspace_prefix)
                and any(
                    (n.conversation_key, n.stored_id) == (conversation.key, message.id)
                    for n in record.recall
                )
            )

        return self._drop(shows)

    def _drop(self, which: Callable[[PromptRecord], bool]) -> int:
        """Delete the logged prompts ``which`` picks; how many."""
        gone = [r.id for r in self.prompt_rows.values() if which(r)]
        for id_ in gone:
            del self.prompt_rows[id_]
        return len(gone)

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        held = [s for s in self.summaries.values() if s.conversation_key == conversation_key]
        return sorted(held, key=lambda summary: summary.id, reverse=True)[:limit]
