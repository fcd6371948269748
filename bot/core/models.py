"""The plain values that cross the seam between platform adapters and the core."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import NamedTuple

EVERY_CHANNEL = "*"
"""The channel part of a workspace's own key (:attr:`Conversation.workspace_key`): no
platform names a channel ``*``, so its pins are no channel's."""
NO_WORKSPACE = "dm"
"""The workspace of conversations outside any workspace or server (Discord's DMs): each stands
alone, and nothing is shared between them (no workspace pins, no memory group)."""


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True)
class Conversation:
    """Where a conversation happens: a channel, or a thread inside one.

    A thread is its own conversation but shares its channel's pins.
    """

    platform: str
    workspace: str
    channel: str
    thread: str | None = None

    def __post_init__(self) -> None:
        # ':' separates the parts of a key: inside a part, two conversations could share one.
        for part in (self.platform, self.workspace, self.channel, self.thread):
            if part is not None and (not part or ":" in part):
                raise ValueError(f"a conversation part must be non-empty, without ':': {part!r}")

    @property
    def key(self) -> str:
        base = self.channel_key
        return f"{base}:{self.thread}" if self.thread else base

    @property
    def channel_key(self) -> str:
        """The key pins live under: the channel, for a thread too."""
        return f"{self.platform}:{self.workspace}:{self.channel}"

    @property
    def shares_workspace(self) -> bool:
        """Whether the conversation is in a workspace or server (not a DM outside one)."""
        return self.workspace != NO_WORKSPACE

    @property
    def workspace_scope(self) -> str:
        """``platform:workspace``: how the ledger, budgets and metrics name its workspace."""
        return f"{self.platform}:{self.workspace}"

    @property
    def workspace_prefix(self) -> str:
        """What every key of the conversation's workspace starts with."""
        return f"{self.workspace_scope}:"

    @property
    def workspace_key(self) -> str:
        """The key pins kept in every channel of the workspace live under (``/pin
        --everywhere``)."""
        return self.workspace_prefix + EVERY_CHANNEL

    @property
    def pin_keys(self) -> tuple[str, ...]:
        """The keys of the pins its prompts carry: its channel's, then its workspace's."""
        if not self.shares_workspace:
            return (self.channel_key,)
        return (self.channel_key, self.workspace_key)

    @classmethod
    def console(cls, channel: str) -> Conversation:
        return cls(platform="console", workspace="local", channel=channel)

    @classmethod
    def from_key(cls, key: str) -> Conversation:
        parts = key.split(":", 3)
        if len(parts) < 3 or not all(parts):
            raise ValueError(f"not a conversation key: {key!r}")
        return cls(*parts)


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class IncomingMessage:
    """A message someone wrote on a platform, as the core sees it."""

    conversation: Conversation
    author_id: str
    author_name: str
    text: str
    addressed: bool
    """Whether the bot should answer it (a DM, a mention, a reply to the bot)."""
    message_id: str | None = None
    sent_at: datetime = field(default_factory=utcnow)
    asked: bool = True
    """Whether it asks the bot itself (False: answered only because the channel is set to
    answer every message)."""


@dataclass(frozen=True)
class CommandCall:
    """A slash command (or a console line starting with ``/``)."""

    conversation: Conversation
    name: str
    argument: str
    user_id: str
    user_name: str
    can_manage: bool = True
    """Whether the caller may run admin commands such as ``/reset`` and change settings."""
    private: bool = False
    """A private channel or a DM: its messages reach no other channel's prompt unless an
    admin of it opts in (``/settings share-private on``)."""
    link_to: Callable[[str], str | None] | None = field(default=None, compare=False)
    """A link to a message of the conversation, by its platform id (Slack's permalink,
    Discord's jump URL), where the platform has them."""


@dataclass(frozen=True)
class Edit:
    """A person changed the text of a message they wrote."""

    conversation: Conversation
    message_id: str
    text: str


@dataclass(frozen=True)
class Deletion:
    """A message was deleted on its platform."""

    conversation: Conversation
    message_id: str


@dataclass(frozen=True)
class Reaction:
    """A 📌 added (``on``) or removed on a message of a conversation's channel or one of its
    threads (pins mark messages channel-wide: Slack's reaction events do not say which)."""

    conversation: Conversation
    message_id: str
    on: bool


class ReplyKind(StrEnum):
    ANSWER = "answer"
    INFO = "info"
    ERROR = "error"


@dataclass(frozen=True)
class Attachment:
    """A file sent with a reply (a chart): its name, bytes and type, and what it shows in
    words, for those who cannot see it."""

    filename: str
    data: bytes
    mime_type: str
    alt_text: str


@dataclass(frozen=True)
class Reply:
    text: str
    kind: ReplyKind = ReplyKind.ANSWER
    ephemeral: bool = False
    """Shown only to the person who asked, where the platform can."""
    stored_id: int | None = None
    """The stored answer's id: the handler links it to the platform message once sent
    (:meth:`bot.core.engine.Engine.attach_message_id`)."""
    attachments: tuple[Attachment, ...] = ()
    """Files posted with the text; where one cannot be posted, the text still is, with a
    line saying so."""


class StoredMessage(NamedTuple):
    """A stored message (a named tuple: prompts are built from hundreds of them a turn)."""

    id: int
    turn_id: int
    role: Role
    author_id: str
    author_name: str
    content: str
    tokens: int
    """Tokens of ``rendered`` as sent to the model, counted once at insert."""
    created_at: float
    message_id: str | None = None
    important: bool = False
    """Scored important when stored (:mod:`.memory.importance`) or marked with a 📌 reaction."""

    @property
    def rendered(self) -> str:
        return render_content(self.role, self.author_name, self.content)

    def prompt_message(self, day: str | None = None) -> dict[str, str]:
        """The message as the chat completions API takes it; ``day``: the date it opens with
        (:func:`day_line`; a user message's only: the prompt's dates say when people spoke)."""
        content = render_content(self.role, self.author_name, self.content)
        if day is not None and self.role is Role.USER:
            content = day_line(day) + content
        return {"role": _ROLE_NAMES[self.role], "content": content}


_ROLE_NAMES = {role: role.value for role in Role}  # faster than Role.value, per message


PROMPT_RENDERING = "2"
"""Changes when the way stored rows read in the prompt changes: their counts are redone."""
CONTINUATION = "  "
"""What starts each further line of text people wrote, wherever the prompt shows it."""
_LINE_BREAK = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")


def quote_lines(text: str) -> str:
    """Text people wrote, its further lines indented: it can never begin a line of the
    prompt's own structure (a section heading, a speaker, a pin, a fact)."""
    if _LINE_BREAK.search(text) is None:
        return text
    return ("\n" + CONTINUATION).join(_LINE_BREAK.split(text))


def indent_headings(text: str, headings: re.Pattern[str]) -> str:
    """``text`` (the model's own, folded from what people wrote) with any line that reads like
    one of ``headings`` indented, so it cannot open a section of its own."""
    if headings.search(text) is None:
        return text
    return "\n".join(
        CONTINUATION + line if headings.match(line.strip()) else line for line in text.split("\n")
    )


def clean_name(name: str) -> str:
    """A display name on one line, without the brackets that frame a speaker."""
    return _LINE_BREAK.sub(" ", name).replace("[", "(").replace("]", ")")


def render_content(role: Role, author_name: str, text: str) -> str:
    """How a message reads in the prompt: user messages say who wrote them, on their first
    line; the model's own answers read as written."""
    if role is Role.USER:
        return f"[{clean_name(author_name)}] {quote_lines(text)}"
    return text


def day_line(day: str) -> str:
    """What opens the first user message of a day among a prompt's recent turns, when they
    span days (:mod:`bot.core.prompt.dates`): the day (:func:`utc_day`) on a line of its own,
    before the speaker's tag. A line break followed by ``[`` always starts a new token, so the
    message costs what its stored count says plus what the line alone costs."""
    return f"{day}\n"


_DAY_LINE = r"\d{4}-\d{2}-\d{2}\n"
_SPEAKER_TAG = re.compile(rf"(?:{_DAY_LINE})?\[([^\]\n]{{1,100}})\][ \t]*")


def speaker_of(content: str) -> str | None:
    """Who a user message in the prompt says wrote it (:func:`render_content`'s tag, after
    the :func:`day_line` that may open it)."""
    match = _SPEAKER_TAG.match(content)
    return match.group(1) if match else None


def prompt_speakers(messages: Iterable[Mapping[str, str]]) -> set[str]:
    """Who speaks in a prompt's user messages."""
    found = set()
    for message in messages:
        if message.get("role") == "user" and (who := speaker_of(message.get("content", ""))):
            found.add(who)
    return found


def utc_date(seconds: float) -> str:
    """A day as recalled lines show it to the model: ``2026-12-04`` (UTC); the minute would
    cost a recalled line a third more tokens and seldom matters to what is asked."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


def utc_minute(seconds: float) -> str:
    """A time as messages show it to people and models: ``2026-12-04 15:30`` (UTC)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M")


def utc_day(seconds: float) -> str:
    """The UTC day of a time, as the prompt's recent turns are dated: ``2026-12-04``."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d")


def strip_speaker_tags(reply: str, speakers: Iterable[str]) -> str:
    """A reply without the speaker tags (``[Ana] ``) a model copied to its start from the
    user messages it was shown, with the date line that may open one (``2026-12-04``, then
    ``[Ana] ``): small models imitate that prefix, and a reply that starts by naming someone
    reads as theirs. Tags naming nobody who spoke (``[1]``) are kept, and so is a date line
    no such tag follows (it may be the answer)."""
    names = {clean_name(name).casefold() for name in speakers} | {"assistant", "assistant (you)"}
    text = reply.lstrip()
    while (match := _SPEAKER_TAG.match(text)) and match.group(1).strip().casefold() in names:
        text = text[match.end() :]
    return text if text.strip() else reply


@dataclass(frozen=True)
class Pin:
    id: int
    channel_key: str
    text: str
    tokens: int
    author_name: str
    created_at: float
    author_id: str = ""
    """Who pinned it: they (or an admin) may unpin it."""

    @property
    def everywhere(self) -> bool:
        """Kept in every channel of its workspace (``/pin --everywhere``), not one channel's."""
        return self.channel_key.endswith(":" + EVERY_CHANNEL)


class FactSource(StrEnum):
    USER = "user"
    """Set by the person with ``/remember``."""
    SUMMARY = "summary"
    """Proposed by the summary model while compacting (inferred)."""


@dataclass(frozen=True)
class Person:
    """Someone on a platform, in one workspace or server: whom a profile belongs to."""

    platform: str
    workspace: str
    user_id: str

    @classmethod
    def of(cls, conversation: Conversation, user_id: str) -> Person:
        return cls(conversation.platform, conversation.workspace, user_id)


@dataclass(frozen=True)
class ProfileFact:
    """A durable fact about a person (name, role, time zone, preferences)."""

    id: int
    person: Person
    text: str
    tokens: int
    source: FactSource
    created_at: float


@dataclass(frozen=True)
class Summary:
    id: int
    conversation_key: str
    content: str
    tokens: int
    covers_through_turn: int
    """Every message whose turn id is at most this is folded into the summary."""
    message_count: int
    first_message_id: int
    last_message_id: int
    compactions: int
    rebuilt: bool
    model: str
    created_at: float
