"""``/summarize since WHEN``: a digest of part of a conversation, for someone catching up.

Written by the summary model from the messages themselves, posted, and kept nowhere: the
rolling summary is left as it is. WHEN is read in UTC: ``yesterday``, ``today``, ``9:00``,
``2026-11-28``, ``3h`` / ``2 days``, or ``last 50`` (messages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.core.memory.kept import transcript_line
from bot.core.memory.tokens import MESSAGE_OVERHEAD, ChatTokenizer
from bot.core.models import StoredMessage, utc_minute
from bot.core.ports.llm import ChatModel, Completion
from bot.core.ports.store import Store
from bot.core.wording import counted

DIGEST_INSTRUCTIONS = """\
Someone is catching up on a group chat. Write a short digest of the messages below for \
them: the topics in order, what was decided or agreed (with numbers, dates and names exactly \
as written), open questions and who owes what. Attribute points to people. Use a few short \
bullet points; leave out small talk. Write in the language the messages mostly use. Do not \
invent anything and do not answer questions from the chat."""

MOST_MESSAGES = 2000
"""The most messages a digest reads (the newest, when there are more)."""
_PAGE = 500
_LAST = re.compile(r"^last\s+(\d{1,5})(?:\s+messages?)?$")
_AGO = re.compile(r"^(\d{1,4})\s*(m|min|mins|minutes?|h|hours?|d|days?|w|weeks?)(?:\s+ago)?$")
_CLOCK = re.compile(r"^(\d{1,2})[:.h](\d{2})$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}

USAGE = (
    "Usage: /summarize since WHEN — WHEN is yesterday, today, 9:00, 2026-11-28, 3h or 2 days "
    "(times in UTC), or /summarize last 50 for the last 50 messages."
)


@dataclass(frozen=True)
class Span:
    """What part of a conversation a digest covers: messages since a time, or the last N."""

    since: float | None = None
    last: int | None = None

    def describe(self) -> str:
        if self.last is not None:
            return f"of the last {counted(self.last, 'message')}"
        assert self.since is not None
        return f"since {utc_minute(self.since)} UTC"


def parse_span(argument: str, now: float) -> Span | None:
    """The span ``argument`` names (``since WHEN`` or ``last N``), or None when it names
    none."""
    text = " ".join(argument.strip().lower().split())
    if match := _LAST.match(text):
        count = int(match[1])
        return Span(last=min(count, MOST_MESSAGES)) if count > 0 else None
    if not text.startswith("since "):
        return None
    when = text.removeprefix("since ").strip()
    today = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if when == "today":
        return Span(since=today.timestamp())
    if when == "yesterday":
        return Span(since=(today - timedelta(days=1)).timestamp())
    if match := _AGO.match(when):
        seconds = int(match[1]) * _UNITS[match[2][0]]
        return Span(since=now - seconds)
    if match := _CLOCK.match(when):
        hour, minute = int(match[1]), int(match[2])
        if hour > 23 or minute > 59:
            return None
        at = today.replace(hour=hour, minute=minute)
        if at.timestamp() > now:  # 21:00 asked at 8:00 means yesterday's
            at -= timedelta(days=1)
        return Span(since=at.timestamp())
    if match := _DATE.match(when):
        try:
            day = datetime(int(match[1]), int(match[2]), int(match[3]), tzinfo=UTC)
        except ValueError:
            return None
        return Span(since=day.timestamp())
    return None


async def span_messages(store: Store, conversation_key: str, span: Span) -> list[StoredMessage]:
    """The conversation's messages in ``span``, oldest first (at most
    :data:`MOST_MESSAGES`, the newest)."""
    newest = await store.last_message_id(conversation_key=conversation_key)
    found: list[StoredMessage] = []
    wanted = span.last or MOST_MESSAGES
    through = newest
    while through is not None and through > 0 and len(found) < wanted:
        page = await store.recent_messages(
            conversation_key=conversation_key, through_id=through, after_turn=0, limit=_PAGE
        )
        for message in page:  # newest first
            if span.since is not None and message.created_at < span.since:
                return found[::-1]
            found.append(message)
            if len(found) >= wanted:
                break
        if len(page) < _PAGE:
            break
        through = min(message.id for message in page) - 1
    return found[::-1]


async def write_digest(
    messages: list[StoredMessage],
    *,
    model: ChatModel,
    tokenizer: ChatTokenizer,
    input_limit: int,
    max_tokens: int,
) -> tuple[str, int, Completion, int]:
    """The digest of the newest of ``messages`` that fit ``input_limit`` tokens; with how
    many it read, the model's completion (its usage) and the bot's count of the prompt."""
    chosen: list[str] = []
    used = 0
    for message in reversed(messages):
        line = transcript_line(message, input_limit)
        cost = message.tokens + MESSAGE_OVERHEAD
        if chosen and used + cost > input_limit:
            break
        chosen.append(line)
        used += cost
    chosen.reverse()
    prompt = [
        {"role": "system", "content": DIGEST_INSTRUCTIONS},
        {"role": "user", "content": "\n".join(chosen)},
    ]
    completion = await model.complete(prompt, max_tokens=max_tokens)
    return completion.text.strip(), len(chosen), completion, tokenizer.count_messages(prompt)
