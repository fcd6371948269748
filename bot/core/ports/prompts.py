"""The prompt log: the last prompts each channel's answers were made from, as sent, with their
layers and what recall found and why; and each conversation's summary versions. What the
operators' page shows (``/stats`` and ``/usage`` link to it).

Only the latest few prompts of a channel are kept (``keep``); ``/reset`` deletes a
conversation's, exports leave them out (they repeat what the messages, pins and summaries
already hold). What memory no longer holds leaves the log too: ``/forget`` deletes the prompts
of the person's questions (their profile is in them), a message deleted or edited on the
platform the prompts that may show it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from bot.core.models import Conversation, Person, StoredMessage, Summary


@dataclass(frozen=True)
class RecallNote:
    """One earlier message recall put in a prompt, and why it was chosen."""

    stored_id: int
    conversation_key: str
    """Where it was said: the prompt's own conversation, or another of its memory group."""
    author_name: str
    content: str
    created_at: float
    why: str
    """In words: ``words: budget, march``, ``meaning: 2nd nearest``, both, or a 📌 mark."""


@dataclass(frozen=True)
class PromptRecord:
    """One prompt an answer was made from."""

    at: float
    """When the answer made from it came back, in seconds since the epoch."""
    conversation_key: str
    channel_key: str
    question_id: int
    """The stored message it answered."""
    question: str
    person: str
    """Who asked it: their platform user id (their profile is in the prompt)."""
    model: str
    tokens: int
    """The whole prompt as the bot counted it, in the units of ``budget`` and ``layers`` (the
    model's server's count of it is in the ledger, :mod:`.spend`)."""
    budget: int
    """What the prompt was fitted to (after calibration)."""
    layers: Mapping[str, int]
    """Tokens per layer (:data:`bot.core.prompt.layout.LAYERS`, in prompt order); they add
    up to ``tokens`` but for the few tokens that prime the reply."""
    messages: Sequence[Mapping[str, str]]
    """The exact prompt: role and content of each message, in order."""
    recall: Sequence[RecallNote] = ()
    id: int = 0
    """Given by the store (0 before it is logged)."""


class PromptLog(Protocol):
    async def log_prompt(self, *, record: PromptRecord, keep: int) -> None:
        """Keep ``record``, and of its channel (with its threads) only the ``keep`` latest
        prompts, older ones deleted in the same transaction."""
        ...

    async def logged_prompts(self, *, channel_key: str, limit: int) -> Sequence[PromptRecord]:
        """The channel's (and its threads') latest prompts, newest first, at most ``limit``."""
        ...

    async def forget_prompts(self, *, person: Person) -> int:
        """Delete the logged prompts of the questions ``person`` asked, in every channel of
        their workspace: ``/forget``, their profile being in them. How many went."""
        ...

    async def drop_prompts(
        self, *, conversation: Conversation, message: StoredMessage, group: bool
    ) -> int:
        """Delete the logged prompts that may show ``message``, of ``conversation``, deleted
        or edited on the platform: its channel's (threads' with it) whose question is that
        message or was stored after it, or that were answered (``at``) at or after it was
        said; and, when ``group`` (the channel is in a memory group), those of the channels
        of its workspace whose recall notes show it. How many went."""
        ...

    async def summary_history(self, *, conversation_key: str, limit: int) -> Sequence[Summary]:
        """The conversation's summaries since its last reset (a reset deletes them), newest
        first, at most ``limit``: each version, with what it covered."""
        ...
