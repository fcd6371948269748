"""The settings one conversation's turns and commands use: one frozen value.

Everything a turn reads from the memory and model sections of the config (the system prompt,
the models, the strategy, the budget, recall and summary options) and whether the bot answers
and records there, asked for at the start of each turn or command and passed down with it; no
part of the core keeps these in a constructor.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from bot.config import Cap, Config, Strategy


class Answering(StrEnum):
    """Which messages of a conversation the bot answers."""

    MENTIONS = "mentions"
    """What is addressed to it: DMs, mentions, replies to it, threads it answers in."""
    ALL = "all"
    """Every message."""
    NONE = "none"
    """Nothing: it listens (and records, as ``record`` says)."""


class Recording(StrEnum):
    """Which messages of a conversation the bot keeps."""

    ALL = "all"
    ADDRESSED = "addressed"
    """Only what it answers, and its answers."""


@dataclass(frozen=True)
class RecallSettings:
    """Recall of earlier messages (:mod:`.memory.recall`)."""

    tokens: int
    """The most tokens recall may take in a prompt (0: no recall)."""
    messages: int
    """The most messages recall shows."""
    embeddings: bool
    """Also search by meaning (when an embedding model is wired)."""
    vector_limit: int
    """How many of the newest stored vectors a search by meaning compares."""
    min_similarity: float

    @property
    def enabled(self) -> bool:
        return self.tokens > 0


@dataclass(frozen=True)
class SummarySettings:
    """Rolling summaries (:mod:`.memory.summarizer`)."""

    threshold: float
    """The share of the budget past which a compaction follows the reply."""
    target: float
    """The share of the budget a hybrid compaction folds down to."""
    rebuild_every: int
    """Every this many compactions the summary is rebuilt from the raw messages (0: never)."""
    max_input_tokens: int
    max_tokens: int
    """The most tokens the summary model may write."""
    retry_seconds: float
    """How long after a failed compaction the next is tried."""


@dataclass(frozen=True)
class SpendCaps:
    """The caps on what the models spend for a channel (its threads included) and for each
    person asking there (their spend in the whole workspace), per UTC day and month
    (:mod:`bot.core.caps`); None: no cap."""

    channel_day: Cap | None = None
    channel_month: Cap | None = None
    person_day: Cap | None = None
    person_month: Cap | None = None


@dataclass(frozen=True)
class Settings:
    """What one conversation's turns and commands are built with."""

    system_prompt: str
    chat_model: str
    summary_model: str
    strategy: Strategy
    max_context_tokens: int
    """The budget before calibration."""
    max_reply_tokens: int
    reply_deadline_seconds: float
    stream: bool
    """Show answers as the model writes them (where the platform can)."""
    window_turns: int
    """The most turns a prompt holds under the window strategy."""
    keep_recent_turns: int
    """The newest turns never folded into a summary nor given up for important ones."""
    profile_tokens: int
    """The most tokens the speaker's profile may take (0: profiles off)."""
    recall: RecallSettings
    summary: SummarySettings
    answer: Answering = Answering.MENTIONS
    record: Recording = Recording.ALL
    memory_group: str | None = None
    """The memory group whose channels' messages recall also searches (None: its own)."""
    share_private: bool = False
    """A private channel or DM lets its memory group find its messages."""
    summaries: bool = True
    """Off: no summary is made (the summary and hybrid strategies drop the oldest turns)."""
    spend: SpendCaps = SpendCaps()

    @classmethod
    def from_config(cls, config: Config) -> Settings:
        memory, llm = config.memory, config.llm
        return cls(
            system_prompt=config.system_prompt,
            chat_model=llm.chat_model,
            summary_model=llm.summary_model,
            strategy=memory.strategy,
            max_context_tokens=memory.max_context_tokens,
            max_reply_tokens=llm.max_reply_tokens,
            reply_deadline_seconds=llm.reply_deadline_seconds,
            stream=llm.stream,
            window_turns=memory.window_turns,
            keep_recent_turns=memory.keep_recent_turns,
            profile_tokens=memory.profile_tokens,
            recall=RecallSettings(
                tokens=memory.recall_tokens,
                messages=memory.recall_messages,
                embeddings=bool(memory.recall_embeddings),
                vector_limit=memory.recall_vector_limit,
                min_similarity=memory.recall_min_similarity,
            ),
            spend=SpendCaps(
                channel_day=config.budgets.channel.cap("day"),
                channel_month=config.budgets.channel.cap("month"),
                person_day=config.budgets.person.cap("day"),
                person_month=config.budgets.person.cap("month"),
            ),
            summary=SummarySettings(
                threshold=memory.summary_threshold,
                target=memory.summary_target,
                rebuild_every=memory.summary_rebuild_every,
                max_input_tokens=memory.summary_max_input_tokens,
                max_tokens=llm.summary_max_tokens,
                retry_seconds=memory.summary_retry_seconds,
            ),
        )

    @property
    def uses_summary(self) -> bool:
        return self.summaries and self.strategy in (Strategy.SUMMARY, Strategy.HYBRID)

    @property
    def max_turns(self) -> int | None:
        """The most turns a prompt holds (None: as many as fit)."""
        return self.window_turns if self.strategy is Strategy.WINDOW else None
