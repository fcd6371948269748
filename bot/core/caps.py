"""Caps on what the models spend (``budgets`` in the config; ``/settings spend-day`` and the
like per channel), summed from the ledger (:mod:`bot.core.ports.spend`) over UTC days and months.

Before a question is answered or a digest written, every cap covering it is checked: a channel's
(its threads included), the asking person's (their calls in the whole workspace) and the
workspace's. One reached, the model is not called and the reply says which cap, what was used
and when it resets; the question is stored all the same. Background summaries are no one's:
the channel's and the workspace's caps cover them, and they are skipped once one is reached,
never before. Embeddings count against the caps but are never stopped: they are cheap, and an
index with holes would make recall by meaning worse after the reset.

The notice at ``budgets.notice_at`` needs no state: it rides on the answer whose call took a cap
from below the share to at or above it, which one call does per period (two answers recorded
at the same moment in different channels under one person's or workspace's cap may both tell).
When a summary takes a cap across, no answer is told: the next one starts above the share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.config import BudgetsConfig, Cap
from bot.core.cost import Meter, money
from bot.core.models import Conversation, IncomingMessage, Reply, ReplyKind
from bot.core.settings import Settings, SettingsSource

PERIODS = ("day", "month")
_WHEN = {"day": "today", "month": "this month"}
_SUBJECT = {"channel": "This channel", "person": "You", "workspace": "This workspace"}
_OWNER = {"channel": "its", "person": "your", "workspace": "its"}
_TITLE = {**_SUBJECT, "person": "You, in this workspace"}
_STOPPED = {
    "channel": "No answers here",
    "person": "No answers for you in this workspace",
    "workspace": "No answers in this workspace",
}


@dataclass(frozen=True)
class Limit:
    """A cap in force for a call: whose spend it covers, over which period."""

    scope: str
    """``channel``, ``person`` or ``workspace``."""
    period: str
    """``day`` or ``month`` (UTC)."""
    cap: Cap


@dataclass(frozen=True)
class Use:
    """What was spent against a cap in its current period."""

    limit: Limit
    money: float
    tokens: int
    """Prompt and completion tokens (cached ones included)."""
    now: float
    resets_at: float

    @property
    def ratio(self) -> float:
        """The share of the cap used: of its money or of its tokens, whichever is larger."""
        cap = self.limit.cap
        shares = [self.money / cap.money] if cap.money else []
        shares += [self.tokens / cap.tokens] if cap.tokens else []
        return max(shares, default=0.0)

    @property
    def reached(self) -> bool:
        return self.ratio >= 1

    @property
    def shown(self) -> str:
        """``$0.80 of $1.00``, ``120,000 of 150,000 tokens``, or both for a cap of both."""
        cap, parts = self.limit.cap, []
        if cap.money is not None:
            parts.append(f"{money(self.money)} of {money(cap.money)}")
        if cap.tokens is not None:
            parts.append(f"{self.tokens:,} of {cap.tokens:,} tokens")
        return "; ".join(parts)

    @property
    def resets(self) -> str:
        """``at 00:00 UTC (in 3 h 12 min)``; a month's: ``on 2027-01-01 at 00:00 UTC (in
        26 days 5 h)``."""
        at = datetime.fromtimestamp(self.resets_at, UTC)
        day = f"on {at:%Y-%m-%d} " if self.limit.period == "month" else ""
        return f"{day}at 00:00 UTC (in {_duration(self.resets_at - self.now)})"

    @property
    def whose(self) -> str:
        """``its budget for today``, ``your budget for this month``."""
        limit = self.limit
        return f"{_OWNER[limit.scope]} budget for {_WHEN[limit.period]}"

    @property
    def line(self) -> str:
        """``This channel, today: $0.80 of $1.00, resets at 00:00 UTC (in 3 h 12 min)``."""
        limit = self.limit
        reached = " (reached)" if self.reached else ""
        return (
            f"{_TITLE[limit.scope]}, {_WHEN[limit.period]}: {self.shown}{reached}; "
            f"resets {self.resets}"
        )

    def refusal(self) -> str:
        scope = self.limit.scope
        verb = "have" if scope == "person" else "has"
        return (
            f"{_SUBJECT[scope]} {verb} reached {self.whose} ({self.shown}). {_STOPPED[scope]} "
            f"until it resets {self.resets}; messages are still remembered."
        )

    def notice(self, share: float) -> str:
        scope = self.limit.scope
        verb = "have" if scope == "person" else "has"
        if self.reached:
            return (
                f"{_SUBJECT[scope]} {verb} now used all of {self.whose} ({self.shown}): "
                f"{_STOPPED[scope].lower()} until it resets {self.resets}."
            )
        used = max(int(self.ratio * 100 + 1e-9), round(share * 100))  # 0.84 is 84%, not 83
        return (
            f"{_SUBJECT[scope]} {verb} used {used}% of {self.whose} ({self.shown}); "
            f"it resets {self.resets}."
        )


def _duration(seconds: float) -> str:
    minutes = max(int(seconds // 60), 1)
    days, hours, minutes = minutes // 1440, minutes // 60 % 24, minutes % 60
    if days:
        return f"{days} days {hours} h" if hours else f"{days} days"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


def period_bounds(now: float, period: str) -> tuple[float, float]:
    """When the UTC day or month holding ``now`` starts, and when the next starts."""
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "day":
        return day.timestamp(), (day + timedelta(days=1)).timestamp()
    start = day.replace(day=1)
    after = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start.timestamp(), after.timestamp()


class CapReached(Exception):
    """Work skipped because a cap covering it is reached."""

    def __init__(self, use: Use) -> None:
        super().__init__(use.refusal())
        self.use = use


@dataclass(frozen=True)
class Check:
    """The caps covering one answer, as they stood before it (:meth:`Caps.check`)."""

    caps: Caps
    conversation: Conversation
    person: str
    settings: Settings
    before: Sequence[Use]

    @property
    def reached(self) -> Use | None:
        """The first cap reached, if any."""
        return next((use for use in self.before if use.reached), None)

    @property
    def refusal(self) -> Reply | None:
        """The reply instead of an answer, when a cap is reached."""
        reached = self.reached
        return None if reached is None else Reply(reached.refusal(), kind=ReplyKind.INFO)

    async def noted(self, text: str) -> str:
        """``text`` (the answer, its call recorded), with a line for each cap the call took
        across ``budgets.notice_at``."""
        if not self.before:
            return text
        after = await self.caps.uses(self.conversation, self.person, self.settings)
        share = self.caps.config.notice_at
        lines = [
            now.notice(share)
            for then, now in zip(self.before, after, strict=False)
            if then.limit == now.limit and then.ratio < share <= now.ratio
        ]
        return "\n\n".join([text, *lines])


class Caps:
    """Sums the ledger against the caps in force for a conversation and a person."""

    def __init__(
        self, *, meter: Meter, config: BudgetsConfig, settings: SettingsSource | None = None
    ) -> None:
        """``meter``: its ledger is summed, its clock says when now is; ``settings``: the
        conversations' own caps, for :meth:`quiet`."""
        self.meter = meter
        self.config = config
        self._settings = settings
        # (conversation key, person for a person's cap, else "") this process refused at a
        # cap: later messages there that do not ask the bot are kept without a word.
        self._told: set[tuple[str, str]] = set()

    def refuse(self, check: Check) -> Reply | None:
        """``check``'s refusal (None: under every cap), its conversation noted as told."""
        reached = check.reached
        if reached is None:
            return None
        self._told.add(self._told_key(check.conversation, check.person, reached))
        return check.refusal

    async def quiet(self, message: IncomingMessage) -> bool:
        """Whether to keep ``message`` without answering or refusing it: it does not ask the
        bot itself (the channel answers every message), and a cap reached there still is,
        the conversation told so already. Refusing each message would flood the channel."""
        conversation = message.conversation
        if message.asked or self._settings is None:
            return False
        if not any(key == conversation.key for key, _ in self._told):
            return False
        settings = await self._settings.for_conversation(conversation)
        reached = (await self.check(conversation, message.author_id, settings)).reached
        if reached is None:
            self._told = {told for told in self._told if told[0] != conversation.key}
            return False
        return self._told_key(conversation, message.author_id, reached) in self._told

    @staticmethod
    def _told_key(conversation: Conversation, person: str, use: Use) -> tuple[str, str]:
        return conversation.key, person if use.limit.scope == "person" else ""

    def limits(self, conversation: Conversation, settings: Settings, person: str) -> list[Limit]:
        """The caps in force (``person`` "": for no one's work, such as summaries)."""
        spend = settings.spend
        caps = [
            ("channel", "day", spend.channel_day),
            ("channel", "month", spend.channel_month),
        ]
        if person:
            caps += [("person", "day", spend.person_day), ("person", "month", spend.person_month)]
        if conversation.shares_workspace:
            caps += [("workspace", p, self.config.workspace.cap(p)) for p in PERIODS]
        return [Limit(scope, period, cap) for scope, period, cap in caps if cap is not None]

    async def uses(self, conversation: Conversation, person: str, settings: Settings) -> list[Use]:
        """Each cap in force, with what was spent against it in its current period."""
        now = self.meter.clock()
        workspace = conversation.workspace_scope
        scopes = {
            "channel": {"channel_key": conversation.channel_key},
            "person": {"workspace": workspace, "person": person},
            "workspace": {"workspace": workspace},
        }
        uses = []
        for limit in self.limits(conversation, settings, person):
            uses.append(await self._use(limit, now, scopes[limit.scope]))
        return uses

    async def _use(self, limit: Limit, now: float, scope: dict[str, str]) -> Use:
        start, end = period_bounds(now, limit.period)
        rows = await self.meter.ledger.spend(since=start, until=None, **scope)
        tokens = sum(row.prompt_tokens + row.completion_tokens for row in rows)
        return Use(limit, sum(row.cost for row in rows), tokens, now, end)

    async def check(self, conversation: Conversation, person: str, settings: Settings) -> Check:
        """The caps covering an answer to ``person`` (or a digest for them), before it."""
        before = await self.uses(conversation, person, settings)
        return Check(self, conversation, person, settings, before)

    async def allow_summary(self, conversation: Conversation, settings: Settings) -> None:
        """:class:`CapReached` when a cap covering the conversation's summaries is reached."""
        for use in await self.uses(conversation, "", settings):
            if use.reached:
                raise CapReached(use)

    async def workspace_use(self, workspace: str) -> dict[str, float]:
        """The share used of each of the workspace's caps in force (``budgets.workspace``),
        by period (``day``, ``month``): 1.0 is the cap reached. ``workspace`` is
        ``platform:workspace``, as the ledger keys it. For gauges."""
        now = self.meter.clock()
        shares = {}
        for period in PERIODS:
            cap = self.config.workspace.cap(period)
            if cap is not None:
                limit = Limit("workspace", period, cap)
                shares[period] = (await self._use(limit, now, {"workspace": workspace})).ratio
        return shares
