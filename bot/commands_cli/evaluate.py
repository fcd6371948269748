"""``bot eval``: the forgetting probe, replayed through each strategy."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from bot.commands_cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, Commands
from bot.config import Config, Strategy
from bot.core.progress import shown


def add_parsers(commands: Commands, common: argparse.ArgumentParser) -> None:
    evaluate = commands.add_parser(
        "eval",
        parents=[common],
        help="forgetting probe: replay a transcript with planted facts through each strategy",
    )
    evaluate.add_argument(
        "transcript", type=Path, help="a JSON Lines transcript (docs/evaluation.md)"
    )
    evaluate.add_argument(
        "--strategy",
        dest="strategies",
        action="append",
        choices=[s.value for s in Strategy],
        help="a strategy to evaluate (repeatable; default: all four)",
    )
    evaluate.add_argument(
        "--budget", type=int, help="prompt budget in tokens (default: memory.max_context_tokens)"
    )
    evaluate.add_argument(
        "--recall-tokens",
        type=int,
        help="memory.recall_tokens for the replay (0: no recall; default: the configured one)",
    )
    evaluate.add_argument("--json", action="store_true", help="print the figures as JSON")


def _with_overrides(args: argparse.Namespace, config: Config) -> Config:
    """``config`` with ``--budget`` and ``--recall-tokens`` applied (ValueError: refused)."""
    overrides = {
        key: value
        for key, value in (
            ("max_context_tokens", args.budget),
            ("recall_tokens", args.recall_tokens),
        )
        if value is not None
    }
    if not overrides:
        return config
    memory = config.memory.model_validate({**config.memory.model_dump(), **overrides})
    return config.model_copy(update={"memory": memory})


async def evaluate(args: argparse.Namespace, config: Config) -> int:
    """``bot eval``: never opens the configured database; each strategy gets a fresh one."""
    from bot.ops.evaluate import (
        ModelFailed,
        TranscriptError,
        format_report,
        load_transcript,
    )
    from bot.ops.evaluate import (
        evaluate as replay,
    )

    try:
        transcript = load_transcript(args.transcript)
    except TranscriptError as exc:
        print(f"bot eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        config = _with_overrides(args, config)
    except ValueError as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        detail = first["msg"].removeprefix("Value error, ") if first else str(exc)
        print(f"bot eval: --budget/--recall-tokens: {detail}", file=sys.stderr)
        return EXIT_USAGE
    strategies = [Strategy(s) for s in args.strategies or [s.value for s in Strategy]]
    steps = len(transcript.steps) + len(transcript.probes)
    try:
        with shown("eval", total=steps * len(strategies), unit="step", final=True) as progress:
            results = await replay(config, transcript, strategies, progress.advance)
    except ModelFailed as exc:
        print(f"bot eval: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print(json.dumps([r.as_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        print(
            format_report(
                transcript, results, model=config.llm.chat_model, name=str(args.transcript)
            )
        )
    return EXIT_OK
