"""Logging the prompt each answer was made from, for the page (``http.page``): its exact
messages, its layers' tokens, its model and budget, and what recall put in it and why. Only
while the page is enabled, and only a channel's latest few (``http.page.keep_prompts``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from bot.config.model import PageConfig
from bot.core.answering import Answered
from bot.core.models import Conversation, StoredMessage
from bot.core.ports.prompts import PromptLog, PromptRecord
from bot.core.ports.store import StorageError

log = logging.getLogger(__name__)


class PromptRecorder:
    def __init__(self, *, log: PromptLog, page: PageConfig, clock: Callable[[], float]) -> None:
        self._log = log
        self.enabled = page.enabled
        """Whether prompts are logged at all: only for the page."""
        self.keep = page.keep_prompts
        """How many each channel keeps."""
        self._clock = clock

    async def record(
        self, conversation: Conversation, question: StoredMessage, answered: Answered
    ) -> None:
        """Log the prompt ``answered`` was made from, answering ``question``; a store that
        refuses it costs the page this prompt, never the answer."""
        if not self.enabled:
            return
        prompt = answered.prompt
        record = PromptRecord(
            at=self._clock(),
            conversation_key=conversation.key,
            channel_key=conversation.channel_key,
            question_id=question.id,
            question=question.content,
            person=question.author_id,
            model=answered.model,
            tokens=prompt.tokens,
            budget=prompt.budget,
            # The head's parts are counted here, once per answer: a turn does not count them.
            layers=prompt.breakdown.as_dict(),
            messages=tuple(dict(message) for message in prompt.messages),
            recall=tuple(prompt.recall_notes),
        )
        try:
            await self._log.log_prompt(record=record, keep=self.keep)
        except StorageError as exc:
            log.warning("the prompt answering %s was not logged: %s", conversation.key, exc)
