"""Answers streamed into a Slack thread with Slack's streaming API: ``chat.startStream`` posts
the message, ``chat.appendStream`` adds to it, ``chat.stopStream`` finishes it.

The API takes standard Markdown (not mrkdwn) and only ever appends, so :class:`NativeText`
sends what the answer grew by since the last call, at most once every ``interval`` seconds a
message, waiting out a 429. What could still change meaning is held back until it settles:
trailing spaces, a line that may become a code fence (a lone backtick grows into three), a
``<`` that may open Slack's mention syntax, a Markdown link not yet closed. Mentions can
never be live: a ``<`` opening Slack's syntax for a mention or a link (``<!``, ``<@``, ``<#``,
``<http``) is followed by an invisible zero-width space; and a link is a link only where
mrkdwn's would be (:func:`~.render.link`), otherwise its text and its URL are both shown.

One streamed message holds at most :data:`MESSAGE_CHARS`; past about three quarters of it,
only text up to a paragraph or code-block boundary is sent, and the answer goes on in a new
message from there (a code block cut through is closed and reopened). When Slack refuses the
API (:data:`REFUSALS`: an old workspace, a token or channel it does not stream to), the refusal
is kept in :class:`StreamSupport` for the process and the answer is shown by updating a
message instead.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.adapters.live import EDIT_INTERVAL, Paced, RateLimited
from bot.adapters.slack.render import link
from bot.adapters.text import Fence, line_fences, split
from bot.config import SlackStreaming

log = logging.getLogger(__name__)

MESSAGE_CHARS = 12_000
"""Slack takes at most 12,000 characters of ``markdown_text`` a call (and a message's markdown
blocks hold as much): the most one streamed message is given."""
REFUSALS = frozenset(
    {
        "unknown_method",
        "not_allowed_token_type",
        "method_not_supported_for_channel_type",
        "channel_type_not_supported",
        "missing_scope",
        "feature_not_enabled",
        "not_allowed",
    }
)
"""``chat.startStream`` errors that mean this workspace (or app) does not stream: not tried
again by the process."""
_RESERVE = 8  # room kept for closing a code block a message is cut in
_DEFUSE = re.compile(r"<(?=[!@#]|https?:|mailto:)", re.IGNORECASE)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_LINK_HELD = 300  # a ``[`` this near the end, with no ``)`` after it, may open a link
_MAYBE_FENCE = re.compile(r"[ \t]*[`~]")
_PARAGRAPH = re.compile(r"\n[ \t]*\n")


class StreamSupport:
    """Whether answers may be streamed with Slack's streaming API: the ``slack.streaming``
    setting, and a refusal learned once for the process."""

    def __init__(self, mode: SlackStreaming) -> None:
        self.mode = mode
        self.refused: str | None = None

    def usable(self, thread: str | None) -> bool:
        """Slack streams only replies in a thread."""
        return self.mode is SlackStreaming.AUTO and self.refused is None and thread is not None

    def refuse(self, error: str) -> None:
        if self.refused is None:
            log.info("Slack refused chat.startStream (%s): answers are shown by updates", error)
        self.refused = error


class Refused(Exception):
    """Slack did not start the stream; nothing was shown."""


def defused(markdown: str) -> str:
    """No ``<!here>``, ``<@U1>`` or ``<#C1>`` in the text is read as a mention."""

    def shown(match: re.Match[str]) -> str:
        text, url = match.group(1), match.group(2)
        return match.group(0) if link(text, url).startswith("<") else f"{text} ({url})"

    return _LINK.sub(shown, _DEFUSE.sub("<\u200b", markdown))


def settled(body: str, sent: int, soft: int) -> int:
    """How much of a message's text may be sent while it still grows (at least ``sent``)."""
    end = len(body.rstrip())
    start = body.rfind("\n", 0, end) + 1
    if _MAYBE_FENCE.match(body, start, end):
        end = start
    if body[end - 1 : end] == "<":
        end -= 1
    bracket = body.rfind("[", max(sent, end - _LINK_HELD), end)
    if bracket >= 0 and ")" not in body[bracket:end]:
        end = bracket
    if end > soft:
        end = boundary(body, sent, end, paragraphs_only=True) or sent
    return max(end, sent)


def boundary(body: str, low: int, high: int, *, paragraphs_only: bool = False) -> int | None:
    """The last point in ``body[low:high]`` a message may end at: after a paragraph break
    outside code or a code block's closing line, else (unless ``paragraphs_only``) after a
    line, else after a word; None when there is none."""
    fences = line_fences(body)
    best = None
    for match in _PARAGRAPH.finditer(body, 0, high):
        point = match.end()
        if low <= point <= high and _open_at(fences, point) is None:
            best = point
    for fence in fences:
        point = fence.end + 1
        if not fence.opens and low <= point <= high and body[fence.end : point] == "\n":
            best = max(best or 0, point)
    if best is not None or paragraphs_only:
        return best
    for mark in ("\n", " "):
        point = body.rfind(mark, low, high) + 1
        if point > low:
            return point
    return None


def _open_at(fences: Sequence[Fence], point: int) -> Fence | None:
    """The fence whose block is open at ``point``."""
    before = [fence for fence in fences if fence.start < point]
    return before[-1] if before and before[-1].opens else None


class NativeText:
    """One answer streamed into a thread, in as many messages as it takes."""

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        channel: str,
        thread: str,
        team: str | None,
        user: str | None,
        support: StreamSupport,
        started: Callable[[], Awaitable[None]] | None = None,
        limit: int = MESSAGE_CHARS,
        interval: float = EDIT_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``started``: called once the first message is shown (to take a thinking message
        away)."""
        self._client = client
        self._channel = channel
        self._thread = thread
        self._team = team or None
        self._user = user or None
        self._support = support
        self._started = started
        self._limit = limit
        self._soft = limit * 3 // 4
        self.message_ids: list[str] = []
        self.refused = False
        """Slack did not start the stream: nothing is shown, the answer goes another way."""
        self._wanted = ""
        self._base = 0  # where in the answer the message being streamed starts
        self._prefix = ""  # what reopens a code block cut at that start
        self._sent = ""  # what that message holds so far
        self._ts: str | None = None  # that message, once started
        self._broken = False  # an append failed: the rest is sent by editing and posting
        self._paced = Paced(self._catch_up, interval=interval, clock=clock, name="streamed answer")

    def show(self, text: str) -> None:
        """The answer so far (all of it, growing), as Markdown."""
        self._wanted = defused(text)
        if not (self.refused or self._broken):
            self._paced.kick()

    async def finish(self, text: str) -> str | None:
        """Show the finished answer and stop the stream; the first message's ts (None when
        Slack refused the stream: :attr:`refused`)."""
        await self._paced.stop()
        self._wanted = defused(text)
        while not self.refused:
            try:
                if self._broken:
                    await self._replace()
                else:
                    await self._advance(final=True)
                break
            except RateLimited as limited:
                await asyncio.sleep(limited.retry_after)
            except Refused:
                break
            except SlackClientError as exc:
                log.warning("streaming an answer to %s failed: %s", self._channel, exc)
                if self._broken:
                    break
                self._broken = True
        return self.message_ids[0] if self.message_ids else None

    async def abandon(self) -> None:
        """Stop (the answer failed or was cancelled): what is shown stays, finished."""
        await self._paced.stop()
        if self._ts is not None and not self._broken:
            with suppress(SlackClientError, RateLimited):
                await self._call("chat.stopStream", self._client.chat_stopStream, ts=self._ts)
            self._ts = None

    async def _catch_up(self) -> bool:
        """One step towards the newest text; False once there is nothing to send."""
        try:
            return await self._advance(final=False)  # a RateLimited is waited out by Paced
        except Refused:
            return False
        except SlackClientError as exc:
            log.warning("streaming an answer to %s failed: %s", self._channel, exc)
            self._broken = True
            return False

    async def _advance(self, *, final: bool) -> bool:
        """Bring the messages up to the answer (all of it when ``final``, then stopped);
        False when there was nothing to send."""
        called = False
        while True:
            body = self._prefix + self._wanted[self._base :]
            if not body.startswith(self._sent):  # the text changed: edited whole at the end
                if final:
                    await self._replace()
                return called
            if len(body) > self._limit - _RESERVE:
                await self._cut(body)
                called = True
                continue
            end = len(body) if final else settled(body, len(self._sent), self._soft)
            delta = body[len(self._sent) : end]
            if final:
                await self._end(delta)
                return True
            if delta:
                await self._append(delta)
            return called or bool(delta)

    async def _cut(self, body: str) -> None:
        """End the message at a boundary past what it holds; the rest goes in a new one."""
        room = self._limit - _RESERVE
        low = max(len(self._sent), len(self._prefix) + 1)
        point = boundary(body, low, room) or max(low, room)
        fence = _open_at(line_fences(body[:point]), point)
        close, reopen = "", ""
        if fence is not None:
            close = ("" if body[:point].endswith("\n") else "\n") + fence.close
            reopen = fence.reopen + "\n"
        await self._end(body[len(self._sent) : point] + close)
        self._base += point - len(self._prefix)
        self._prefix = reopen

    async def _append(self, delta: str) -> None:
        if self._ts is None:
            await self._start(delta)
        else:
            await self._call(
                "chat.appendStream",
                self._client.chat_appendStream,
                ts=self._ts,
                markdown_text=delta,
            )
        self._sent += delta

    async def _end(self, delta: str) -> None:
        """Stop the message being streamed with ``delta`` added (started with it if it was
        not)."""
        if self._ts is None:  # nothing of this message was sent: ``delta`` is all of it
            if not delta.strip():
                return
            await self._start(delta)
            delta = ""
        assert self._ts is not None
        extra = {"markdown_text": delta} if delta else {}
        await self._call("chat.stopStream", self._client.chat_stopStream, ts=self._ts, **extra)
        self._ts, self._sent = None, ""

    async def _start(self, text: str) -> None:
        try:
            answer = await self._client.chat_startStream(
                channel=self._channel,
                thread_ts=self._thread,
                markdown_text=text,
                recipient_team_id=self._team,
                recipient_user_id=self._user,
            )
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                raise RateLimited(_retry_after(exc)) from None
            error = str(exc.response.get("error"))
            if error in REFUSALS:
                self._support.refuse(error)
            if self.message_ids:
                raise
            log.info("no stream in %s (%s): updating a message instead", self._channel, error)
            self.refused = True
            raise Refused(error) from None
        except SlackClientError:
            if self.message_ids:
                raise
            self.refused = True
            raise Refused("unreachable") from None
        self._ts = str(answer["ts"])
        self.message_ids.append(self._ts)
        if len(self.message_ids) == 1 and self._started is not None:
            await self._started()

    async def _call(self, name: str, method: Callable[..., Awaitable[object]], **args: str) -> None:
        try:
            await method(channel=self._channel, **args)
        except SlackApiError as exc:
            if exc.response.status_code == 429:
                raise RateLimited(_retry_after(exc)) from None
            log.warning("%s in %s failed: %s", name, self._channel, exc.response.get("error"))
            raise

    async def _replace(self) -> None:
        """Show the finished answer by editing the messages streamed (after their stream
        stopped) and posting the rest: for an answer whose text changed, or a stream Slack
        ended early."""
        if self._ts is not None:
            with suppress(SlackClientError, RateLimited):
                await self._call("chat.stopStream", self._client.chat_stopStream, ts=self._ts)
        parts = [part.text for part in split(self._wanted, self._limit, line_fences)]
        kept = self.message_ids[: len(parts)]
        for ts, part in zip(kept, parts, strict=False):
            await self._client.chat_update(channel=self._channel, ts=ts, markdown_text=part)
        for ts in self.message_ids[len(parts) :]:
            await self._client.chat_delete(channel=self._channel, ts=ts)
        for part in parts[len(kept) :]:
            posted = await self._client.chat_postMessage(
                channel=self._channel, thread_ts=self._thread, markdown_text=part
            )
            kept.append(str(posted["ts"]))
        self.message_ids, self._ts, self._broken = kept, None, False


def _retry_after(exc: SlackApiError) -> float:
    try:
        return max(1.0, float(exc.response.headers.get("Retry-After", 1)))
    except (TypeError, ValueError):
        return 1.0
