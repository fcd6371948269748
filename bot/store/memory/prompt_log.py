"""The prompt log in memory: each channel's latest prompts; and the summaries' history."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bot.core.models import Summary
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

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        held = [s for s in self.summaries.values() if s.conversation_key == conversation_key]
        return sorted(held, key=lambda summary: summary.id, reverse=True)[:limit]
