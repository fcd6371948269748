"""Long-memory benchmark: how much of what a question needs reaches the prompt.

Replays the conversations of ``bench/longmem/corpus/`` (several people, many sessions over
months, English and Chinese; written by ``bench/longmem/make.py``) into the real bot as Slack
channel messages with their dates, then asks each question with a mention and looks for the
question's evidence messages in the prompt the model received (:mod:`.replay`,
:mod:`.measure`; the model is :mod:`.model`). Printed per configuration: the evidence messages
present in the prompt, the questions with all their evidence, the share of evidence each
layer brought, tokens per question against the budget, and the same by category and language.

Run from the repository root::

    .venv/bin/python bench/longmem/run.py                      # the standard configurations
    .venv/bin/python bench/longmem/run.py --budget 8000        # one configuration: the default
    .venv/bin/python bench/longmem/run.py --budget 4000 --strategy window --recall-tokens 0
    .venv/bin/python bench/longmem/run.py --budget 8000 --set summary_target=0.4
    .venv/bin/python bench/longmem/run.py --budget 8000 \\
        --embeddings-url http://127.0.0.1:11434/v1 --embedding-model nomic-embed-text

Without a configuration option it runs the standard three: the default configuration at
8,000 and at 2,000 tokens, and a plain window (``window`` strategy, recall off) at 4,000.
``--json FILE`` writes every figure and every question's outcome; ``--details`` prints the
evidence each question missed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

import yaml

from bench.longmem import data as longmem_data
from bench.longmem.measure import LAYERS, Outcome, Tally, groups, outcomes
from bench.longmem.model import BenchModel
from bench.longmem.replay import run as replay
from bot.core.memory.recall import Recaller
from bot.core.memory.tokens import install_encodings

DATA = Path(__file__).resolve().parent / "corpus"
STANDARD: dict[str, dict[str, Any]] = {
    "default 8,000": {"max_context_tokens": 8000},
    "default 2,000": {"max_context_tokens": 2000},
    "window 4,000, no recall": {
        "strategy": "window",
        "max_context_tokens": 4000,
        "recall_tokens": 0,
    },
}


@dataclass(frozen=True)
class Result:
    label: str
    memory: dict[str, Any]
    budget: int
    outcomes: list[Outcome]
    max_aside_tokens: int
    summaries: int
    seconds: float


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DATA, help="the dataset's folder")
    parser.add_argument("--conversations", nargs="*", help="only these conversation ids")
    parser.add_argument("--questions", type=int, help="at most this many questions each")
    group = parser.add_argument_group("one configuration (memory settings; others default)")
    group.add_argument("--budget", type=int, help="memory.max_context_tokens")
    group.add_argument("--strategy", choices=["full", "window", "summary", "hybrid"])
    group.add_argument("--recall-tokens", type=int, help="memory.recall_tokens (0: off)")
    group.add_argument("--recall-messages", type=int, help="memory.recall_messages")
    group.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any memory.KEY (the value read as YAML), e.g. summary_target=0.4",
    )
    group.add_argument(
        "--llm",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any llm.KEY (read as YAML), e.g. "
        "'embedding_input_types={query: query, document: passage}'",
    )
    group.add_argument("--embeddings-url", help="an OpenAI-compatible server for embeddings")
    group.add_argument("--embedding-model", help="its model (turns memory.recall_embeddings on)")
    group.add_argument(
        "--embeddings-cache", type=Path, help="a SQLite file keeping vectors between runs"
    )
    group.add_argument(
        "--meaning-only",
        action="store_true",
        help="recall by meaning alone (keyword search left out; for comparison only)",
    )
    parser.add_argument(
        "--summary",
        choices=["gist", "forgetful"],
        default="gist",
        help="the fake summary model (bench/longmem/model.py)",
    )
    parser.add_argument("--json", type=Path, help="write the figures and outcomes here")
    parser.add_argument("--details", action="store_true", help="list what each question missed")
    parser.add_argument(
        "--prompts", type=Path, help="write each question's prompt here (a folder per run)"
    )
    args = parser.parse_args(argv)
    if bool(args.embeddings_url) != bool(args.embedding_model):
        parser.error("--embeddings-url and --embedding-model go together")
    if args.meaning_only and not args.embedding_model:
        parser.error("--meaning-only needs --embedding-model")
    return args


def key_values(items: list[str], option: str, section: str) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"{option} {item}: expected KEY=VALUE")
        values[key.removeprefix(f"{section}.")] = yaml.safe_load(value)
    return values


def llm_settings(args: argparse.Namespace) -> dict[str, Any]:
    return key_values(args.llm, "--llm", "llm")


def configurations(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    memory: dict[str, Any] = {}
    if args.budget is not None:
        memory["max_context_tokens"] = args.budget
    if args.strategy is not None:
        memory["strategy"] = args.strategy
    if args.recall_tokens is not None:
        memory["recall_tokens"] = args.recall_tokens
    if args.recall_messages is not None:
        memory["recall_messages"] = args.recall_messages
    memory.update(key_values(args.set, "--set", "memory"))
    if args.embedding_model:
        memory["recall_embeddings"] = True
    if not memory:
        return dict(STANDARD)
    label = ", ".join(f"{k}={v}" for k, v in memory.items())
    return {label: memory}


async def run_all(args: argparse.Namespace, dataset: longmem_data.Dataset) -> list[Result]:
    install_encodings()
    results = []
    model = BenchModel(
        forgetful=args.summary == "forgetful",
        embeddings_url=args.embeddings_url,
        embedding_model=args.embedding_model,
        cache=args.embeddings_cache,
    )
    await model.start()
    try:
        for label, memory in configurations(args).items():
            if args.summary == "forgetful":
                label += " (forgetful summary)"
            label += "".join(f", {k}={v}" for k, v in llm_settings(args).items())
            if args.meaning_only:
                label += " (meaning only)"
            with tempfile.TemporaryDirectory(prefix="longmem-") as folder:
                replayed = await replay(
                    dataset,
                    memory=memory,
                    model=model,
                    folder=Path(folder),
                    embedding_model=args.embedding_model,
                    llm=llm_settings(args),
                )
            asked = [(a.question, a.messages) for a in replayed.asked]
            if args.prompts is not None:
                save_prompts(args.prompts / slug(label), asked)
            results.append(
                Result(
                    label=label,
                    memory=memory,
                    budget=int(memory.get("max_context_tokens", 8000)),
                    outcomes=outcomes(dataset, asked),
                    max_aside_tokens=replayed.max_aside_tokens,
                    summaries=replayed.summaries,
                    seconds=replayed.seconds,
                )
            )
            print(f"  {label}: {replayed.seconds:.1f} s", file=sys.stderr)
    finally:
        await model.aclose()
    return results


def slug(label: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in label).strip("-")


def save_prompts(folder: Path, asked: list[tuple[longmem_data.Question, list[Any]]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for question, messages in asked:
        text = json.dumps(messages, ensure_ascii=False, indent=1)
        (folder / f"{question.id}.json").write_text(text + "\n", encoding="utf-8")


def _pct(value: float) -> str:
    return f"{value:.1f}%"


def _both(t: Tally) -> str:
    """Evidence present / questions with all their evidence."""
    return f"{_pct(t.share(t.present))} / {_pct(t.share(t.complete, t.questions))}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def report(results: list[Result], dataset: longmem_data.Dataset) -> str:
    evidence = sum(len(q.evidence) for q in dataset.questions)
    out = [
        f"{len(dataset.conversations)} conversations, {len(dataset.messages):,} messages, "
        f"{len(dataset.questions)} questions, {evidence} evidence messages",
        "",
    ]
    rows = []
    for r in results:
        t = groups(r.outcomes)["all"]
        biggest = max([*t.tokens, r.max_aside_tokens])
        rows.append(
            [
                r.label,
                _pct(t.share(t.present)),
                _pct(t.share(t.complete, t.questions)),
                f"{t.mean_tokens:,.0f}",
                _pct(100 * t.mean_tokens / r.budget),
                f"{biggest:,} / {r.budget:,}",
                str(r.summaries),
            ]
        )
    header = [
        "configuration",
        "evidence in prompt",
        "questions with all",
        "tokens/question",
        "of budget",
        "largest prompt",
        "summaries",
    ]
    out += [table(header, rows), "", "Share of all evidence messages found in each layer:", ""]
    rows = []
    for r in results:
        t = groups(r.outcomes)["all"]
        shares = [_pct(t.share(t.by_layer[layer])) for layer in LAYERS]
        rows.append([r.label, *shares, _pct(t.share(t.gist_only))])
    out += [table(["configuration", *LAYERS, "gist only (not counted)"], rows), ""]
    out += ["Evidence in prompt / questions with all, by category and language:", ""]
    keys = [k for k in groups(results[0].outcomes) if k != "all"] if results else []
    rows = []
    for r in results:
        by = groups(r.outcomes)
        rows.append([r.label, *(_both(by[k]) for k in keys)])
    counts = {k: groups(results[0].outcomes)[k].questions for k in keys} if results else {}
    out += [table(["configuration", *(f"{k} ({counts[k]})" for k in keys)], rows), ""]
    rows = []
    for r in results:
        by = groups(r.outcomes)
        when, changed = by["when"], by["changed"]
        rows.append(
            [
                r.label,
                f"{when.dated} of {when.present}",
                f"{changed.stale_only} of {changed.questions}",
                *(f"{t // max(1, len(r.outcomes)):,}" for t in by["all"].tokens_by_layer.values()),
            ]
        )
    header = ["configuration", "when: dated/present", "changed: stale only"]
    header += [f"{layer} tokens" for layer in LAYERS]
    out += [table(header, rows)]
    return "\n".join(out)


def details(result: Result) -> str:
    lines = [f"## {result.label}: missing evidence"]
    for outcome in result.outcomes:
        missing = [w.message_id for w in outcome.found if w.layer is None]
        if missing:
            q = outcome.question
            lines.append(f"{q.id} [{q.category}] {q.question}  missing: {', '.join(missing)}")
    return "\n".join(lines)


def to_json(results: list[Result]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        figures = {
            name: {
                "questions": t.questions,
                "complete": t.complete,
                "evidence": t.evidence,
                "present": t.present,
                "by_layer": t.by_layer,
                "gist_only": t.gist_only,
                "dated": t.dated,
                "stale_only": t.stale_only,
                "mean_tokens": round(t.mean_tokens, 1),
                "max_tokens": max(t.tokens, default=0),
            }
            for name, t in groups(r.outcomes).items()
        }
        out.append(
            {
                "label": r.label,
                "memory": r.memory,
                "budget": r.budget,
                "summaries": r.summaries,
                "max_aside_tokens": r.max_aside_tokens,
                "seconds": round(r.seconds, 1),
                "figures": figures,
                "questions": [
                    {
                        "id": o.question.id,
                        "tokens": o.tokens,
                        "found": [asdict(w) for w in o.found],
                        "stale_only": o.stale_only,
                    }
                    for o in r.outcomes
                ],
            }
        )
    return out


def without_keywords() -> None:
    """Recall by meaning alone, for the comparison the figures report: the bot has no such
    setting (fusing both measures better), so the keyword search is replaced in this
    process."""

    async def no_hits(*_: object) -> list[object]:
        return []

    setattr(Recaller, "_keyword_hits", no_hits)  # noqa: B010


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    dataset = longmem_data.load(args.data)
    if args.conversations or args.questions is not None:
        wanted = set(args.conversations or (c.id for c in dataset.conversations))
        dataset = dataset.only(wanted, args.questions)
    started = time.perf_counter()
    if args.meaning_only:
        without_keywords()
    results = asyncio.run(run_all(args, dataset))
    print(report(results, dataset))
    if args.details:
        for result in results:
            print()
            print(details(result))
    if args.json:
        args.json.write_text(json.dumps(to_json(results), ensure_ascii=False, indent=1) + "\n")
    print(f"\n{time.perf_counter() - started:.0f} s in all", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
