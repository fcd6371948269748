"""``bot usage``: what the models cost, for operators: by model and by channel, or as CSV
lines by UTC day, conversation, model and purpose."""

from __future__ import annotations

import argparse
import csv
import re
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from bot.commands_cli import EXIT_OK, EXIT_USAGE, Commands
from bot.commands_cli.conversations import conversation_of
from bot.config import Config
from bot.core.cost import NO_PRICE, Prices, money
from bot.core.models import Conversation
from bot.core.ports.spend import Spend, SpendLine
from bot.core.ports.store import Store
from bot.wiring import prices

CSV_HEADER = (
    "day",
    "conversation",
    "model",
    "purpose",
    "requests",
    "prompt_tokens",
    "cached_tokens",
    "completion_tokens",
    "cost",
)
_SPAN = re.compile(r"^(\d{1,5})([mhdw])$")
_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def since(value: str, now: float | None = None) -> float:
    """``--since``: a UTC date (``2026-12-01``) or a span back from now (``7d``, ``24h``)."""
    text = value.strip().lower()
    if match := _SPAN.match(text):
        return (time.time() if now is None else now) - int(match[1]) * _SECONDS[match[2]]
    try:
        day = datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a date (2026-12-01) nor a span (7d, 24h, 30m, 2w)"
        ) from None
    return day.timestamp()


def add_parser(commands: Commands, common: argparse.ArgumentParser) -> None:
    usage = commands.add_parser(
        "usage", parents=[common], help="what the models cost, by model and channel (or CSV)"
    )
    usage.add_argument(
        "--since",
        metavar="WHEN",
        type=since,
        help="from a UTC date (2026-12-01) or a span back from now (7d, 24h); default: all",
    )
    usage.add_argument(
        "--channel",
        metavar="NAME|KEY",
        help="one channel (and its threads): a console channel name or a key like slack:T1:C1",
    )
    usage.add_argument(
        "--csv",
        action="store_true",
        help="one line per UTC day, conversation, model and purpose, with a header",
    )


async def usage(store: Store, args: argparse.Namespace, config: Config) -> int:
    channel_key = None
    if args.channel is not None:
        try:
            channel_key = conversation_of(args.channel).channel_key
        except ValueError as exc:
            print(f"bot usage: --channel: {exc}", file=sys.stderr)
            return EXIT_USAGE
    lines = await store.spend_lines(since=args.since, until=None, channel_key=channel_key)
    if args.csv:
        write_csv(lines)
        return EXIT_OK
    rows = await store.spend(since=args.since, until=None, channel_key=channel_key)
    table = prices(config)
    when = f"since {_shown(args.since)} UTC" if args.since is not None else "in total"
    where = f"channel {channel_key}" if channel_key else "all channels"
    print(f"Spend {when}, {where}:")
    if not rows:
        print("nothing")
        return EXIT_OK
    print("\n".join(model_table(rows, table)))
    if channel_key is None:
        print()
        print("\n".join(channel_table(lines)))
    return EXIT_OK


def _shown(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%d %H:%M")


def write_csv(lines: Sequence[SpendLine]) -> None:
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(CSV_HEADER)
    for line in lines:
        out.writerow(
            (
                line.day,
                line.conversation_key,
                line.model,
                line.purpose,
                line.requests,
                line.prompt_tokens,
                line.cached_tokens,
                line.completion_tokens,
                f"{line.cost:.6f}",
            )
        )


def model_table(rows: Sequence[Spend], table: Prices) -> list[str]:
    """Spend by model, with a total; a model without a price flagged."""
    width = max(len("model"), *(len(row.model) for row in rows))
    head = f"{'model':<{width}}  {'requests':>8}  {'prompt':>12}  {'cached':>12}  "
    out = [head + f"{'completion':>12}  cost"]
    for row in rows:
        cost = money(row.cost) if table.priced(row.model) or row.cost else NO_PRICE
        out.append(_row(row.model, width, row, cost))
    total = Spend(
        "total",
        sum(r.requests for r in rows),
        sum(r.prompt_tokens for r in rows),
        sum(r.cached_tokens for r in rows),
        sum(r.completion_tokens for r in rows),
        sum(r.cost for r in rows),
    )
    out.append(_row("total", width, total, money(total.cost)))
    return out


def _row(name: str, width: int, row: Spend, cost: str) -> str:
    return (
        f"{name:<{width}}  {row.requests:>8,}  {row.prompt_tokens:>12,}  "
        f"{row.cached_tokens:>12,}  {row.completion_tokens:>12,}  {cost}"
    )


def channel_table(lines: Sequence[SpendLine]) -> list[str]:
    """Spend by channel (its threads in it); calls made for no conversation (embedding
    stored messages in bulk) on a line of their own."""
    by_channel: dict[str, tuple[int, float]] = {}
    for line in lines:
        key = line.conversation_key
        channel = Conversation.from_key(key).channel_key if key else "(no conversation)"
        requests, cost = by_channel.get(channel, (0, 0.0))
        by_channel[channel] = (requests + line.requests, cost + line.cost)
    width = max(len("channel"), *(len(key) for key in by_channel))
    out = [f"{'channel':<{width}}  {'requests':>8}  cost"]
    for channel, (requests, cost) in sorted(by_channel.items()):
        out.append(f"{channel:<{width}}  {requests:>8,}  {money(cost)}")
    return out
