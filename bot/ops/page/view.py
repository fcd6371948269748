"""What a channel's page shows, read from the store for that channel only: its last prompts
with their layers and recall's reasons, the exact last prompt, its pins, its conversations'
summary versions with what changed, and 30 days of spend."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from bot.core.cost import money
from bot.core.models import Conversation, Pin, Summary
from bot.core.ports.prompts import PromptLog, PromptRecord, RecallNote
from bot.core.ports.spend import Ledger, SpendLine
from bot.core.prompt.layout import LAYERS
from bot.core.wording import counted

PROMPTS_SHOWN = 10
SUMMARY_VERSIONS = 10
USAGE_DAYS = 30


class PageStore(PromptLog, Ledger, Protocol):
    """What the page reads."""

    async def pins(self, *, channel_key: str) -> Sequence[Pin]: ...


def when(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class Layer:
    name: str
    tokens: int
    percent: float
    """Of the prompt's budget, for the bar's width."""


@dataclass(frozen=True)
class PromptView:
    at: str
    conversation_key: str
    question: str
    model: str
    tokens: int
    budget: int
    layers: Sequence[Layer]
    recall: Sequence[RecallNote]
    messages: Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class DiffLine:
    kind: str
    """``added``, ``removed`` or ``same``."""
    text: str


@dataclass(frozen=True)
class SummaryVersion:
    at: str
    model: str
    tokens: int
    covers: str
    content: str
    changes: Sequence[DiffLine]
    """From the previous version; empty for the first."""


@dataclass(frozen=True)
class UsageRow:
    day: str
    model: str
    purpose: str
    requests: int
    prompt_tokens: int
    completion_tokens: int
    cost: str


@dataclass(frozen=True)
class ChannelPage:
    channel_key: str
    prompts: Sequence[PromptView]
    """Newest first."""
    pins: Sequence[Pin]
    summaries: Mapping[str, Sequence[SummaryVersion]]
    """Per conversation (the channel's, its threads'), newest version first."""
    usage: Sequence[UsageRow]


def prompt_view(record: PromptRecord) -> PromptView:
    scale = max(record.budget, record.tokens, 1)
    layers = [
        Layer(name, record.layers.get(name, 0), 100 * record.layers.get(name, 0) / scale)
        for name in LAYERS
    ]
    return PromptView(
        at=when(record.at),
        conversation_key=record.conversation_key,
        question=record.question,
        model=record.model,
        tokens=record.tokens,
        budget=record.budget,
        layers=layers,
        recall=record.recall,
        messages=record.messages,
    )


def changes(before: str, after: str) -> list[DiffLine]:
    """The lines removed and added from ``before`` to ``after``, with one line around each."""
    kinds = {"+": "added", "-": "removed", " ": "same"}
    lines = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1)
    return [
        DiffLine(kinds[line[0]], line[1:])
        for line in lines
        if line[:1] in kinds and not line.startswith(("+++", "---"))
    ]


def summary_versions(summaries: Sequence[Summary]) -> list[SummaryVersion]:
    """Newest first, each with what changed from the one before it."""
    oldest_first = list(reversed(summaries))
    versions = []
    for index, summary in enumerate(oldest_first):
        previous = oldest_first[index - 1] if index else None
        covers = (
            f"{counted(summary.message_count, 'message')}, through turn "
            f"{summary.covers_through_turn}"
            f" (messages #{summary.first_message_id}–#{summary.last_message_id})"
            + (f", compacted {summary.compactions}×" if summary.compactions else "")
            + (", rebuilt" if summary.rebuilt else "")
        )
        versions.append(
            SummaryVersion(
                at=when(summary.created_at),
                model=summary.model,
                tokens=summary.tokens,
                covers=covers,
                content=summary.content,
                changes=changes(previous.content, summary.content) if previous else [],
            )
        )
    return versions[::-1]


def usage_rows(lines: Sequence[SpendLine]) -> list[UsageRow]:
    """The channel's and its threads' calls summed per day, model and purpose, newest first."""
    summed: dict[tuple[str, str, str], list[float]] = {}
    for line in lines:
        totals = summed.setdefault((line.day, line.model, line.purpose), [0, 0, 0, 0.0])
        totals[0] += line.requests
        totals[1] += line.prompt_tokens
        totals[2] += line.completion_tokens
        totals[3] += line.cost
    return [
        UsageRow(day, model, purpose, int(t[0]), int(t[1]), int(t[2]), money(t[3]))
        for (day, model, purpose), t in sorted(summed.items(), reverse=True)
    ]


async def channel_page(store: PageStore, channel_key: str, *, now: float) -> ChannelPage:
    """Everything the page shows for ``channel_key`` (a channel's key, threads included)."""
    channel = Conversation.from_key(channel_key)
    logged = await store.logged_prompts(channel_key=channel_key, limit=PROMPTS_SHOWN)
    records = [record for record in logged if record.channel_key == channel_key]
    pins = [pin for key in channel.pin_keys for pin in await store.pins(channel_key=key)]
    keys = dict.fromkeys([channel_key, *(r.conversation_key for r in records)])
    summaries = {
        key: summary_versions(
            await store.summary_history(conversation_key=key, limit=SUMMARY_VERSIONS)
        )
        for key in keys
    }
    spent = await store.spend_lines(
        since=now - USAGE_DAYS * 86400, until=None, channel_key=channel_key
    )
    return ChannelPage(
        channel_key=channel_key,
        prompts=[prompt_view(record) for record in records],
        pins=pins,
        summaries={key: versions for key, versions in summaries.items() if versions},
        usage=usage_rows(spent),
    )
