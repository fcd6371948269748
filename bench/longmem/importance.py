"""How well the importance score picks out what questions later need: over the benchmark's
messages, the share the bot marks important, and of those, the share that are evidence for a
question (or an earlier value of a changed fact): its precision, against the base rate.

    python bench/longmem/importance.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.longmem.data import Dataset, load
from bot.core.memory.importance import score

DATA = Path(__file__).resolve().parent / "corpus"


def report(dataset: Dataset) -> str:
    needed = {e for q in dataset.questions for e in (*q.evidence, *q.superseded)}
    lines = [
        "| messages | count | marked important | precision | base rate | evidence marked |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for language in ("en", "zh", None):
        messages = [
            m
            for m in dataset.messages
            if m.kind == "message" and (language is None or m.conversation.startswith(language))
        ]
        marked = [m for m in messages if score(m.text) > 0]
        evidence = [m for m in messages if m.id in needed]
        hits = [m for m in marked if m.id in needed]
        lines.append(
            f"| {language or 'all'} | {len(messages):,} | {len(marked) / len(messages):.1%} | "
            f"{len(hits) / max(1, len(marked)):.1%} | {len(evidence) / len(messages):.1%} | "
            f"{len(hits) / max(1, len(evidence)):.1%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(load(DATA)))
