"""``bot eval``'s results: where each planted fact was found in a prompt, per strategy, and
the table printed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.core.prompt.assembler import Prompt
from bot.core.wording import counted
from bot.ops.evaluate.transcript import Transcript


@dataclass
class FactResult:
    id: str
    pinned: bool
    where: str | None
    """``pin``, ``turn``, ``summary`` or ``recall``: where the key was found in the final
    prompt."""
    answered: bool | None = None
    """Whether an answer to a probe of the fact contained the answer (None: not probed)."""
    asked_where: str | None = None
    """Where the key was in the prompt built to answer a probe of the fact (None: nowhere,
    or not probed). Recall searches with the message being answered, so this is where recall
    shows."""


@dataclass
class StrategyResult:
    strategy: str
    budget: int
    recall_tokens: int
    prompt_tokens: int
    max_reported_tokens: int
    summaries: int
    facts: list[FactResult] = field(default_factory=list)
    answers: list[tuple[str, bool]] = field(default_factory=list)
    """(fact id, answered correctly) per probe, in order."""
    errors: list[str] = field(default_factory=list)

    @property
    def present(self) -> int:
        return sum(1 for f in self.facts if f.where is not None)

    def present_where(self, *, pinned: bool) -> int:
        return sum(1 for f in self.facts if f.where is not None and f.pinned is pinned)

    @property
    def present_when_asked(self) -> int:
        return sum(1 for f in self.facts if f.asked_where is not None)

    @property
    def probed(self) -> int:
        return sum(1 for f in self.facts if f.answered is not None)

    @property
    def probes(self) -> int:
        return len(self.answers)

    @property
    def answered(self) -> int:
        return sum(1 for _, correct in self.answers if correct)

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "budget": self.budget,
            "recall_tokens": self.recall_tokens,
            "prompt_tokens": self.prompt_tokens,
            "max_reported_prompt_tokens": self.max_reported_tokens,
            "summaries": self.summaries,
            "facts_present": self.present,
            "pinned_present": self.present_where(pinned=True),
            "unpinned_present": self.present_where(pinned=False),
            "probes": self.probes,
            "answered": self.answered,
            "present_when_asked": self.present_when_asked,
            "facts": [
                {
                    "id": f.id,
                    "pinned": f.pinned,
                    "where": f.where,
                    "answered": f.answered,
                    "asked_where": f.asked_where,
                }
                for f in self.facts
            ],
            "errors": self.errors,
        }


def locate(prompt: Prompt, key: str) -> str | None:
    if any(key in pin.text for pin in prompt.pins):
        return "pin"
    if any(key in row.content for row in prompt.window):
        return "turn"
    if prompt.summary is not None and key in prompt.summary.content:
        return "summary"
    if any(key in row.content for row in prompt.recalled):
        return "recall"
    return None


def format_report(
    transcript: Transcript, results: Sequence[StrategyResult], *, model: str, name: str
) -> str:
    facts = list(transcript.facts.values())
    pinned = sum(1 for f in facts if f.pinned)
    lines = [
        f"{name}: {counted(transcript.messages, 'message')}, "
        f"{counted(len(facts), 'planted fact')} ({pinned} pinned, {len(facts) - pinned} not), "
        f"{counted(len(transcript.probes), 'probe')}; "
        f"model {model}",
        "",
        f"{'strategy':<8}  {'prompt/budget':>13}  {'max sent':>8}  {'summaries':>9}  "
        f"{'facts in prompt':>15}  {'pinned':>6}  {'unpinned':>8}  {'in summary':>10}  "
        f"{'answered':>8}  {'recall':>6}  {'when asked':>10}  {'via recall':>10}",
    ]
    for r in results:
        in_summary = sum(1 for f in r.facts if f.where == "summary")
        lines.append(
            f"{r.strategy:<8}  {f'{r.prompt_tokens}/{r.budget}':>13}  "
            f"{r.max_reported_tokens:>8}  {r.summaries:>9}  "
            f"{f'{r.present}/{len(facts)}':>15}  "
            f"{f'{r.present_where(pinned=True)}/{pinned}':>6}  "
            f"{f'{r.present_where(pinned=False)}/{len(facts) - pinned}':>8}  "
            f"{in_summary:>10}  {f'{r.answered}/{r.probes}':>8}  {r.recall_tokens:>6}  "
            f"{f'{r.present_when_asked}/{r.probed}':>10}  "
            f"{sum(1 for f in r.facts if f.asked_where == 'recall'):>10}"
        )
    for r in results:
        missing = [f.id for f in r.facts if f.where is None]
        if missing:
            lines.append(f"{r.strategy}: not in the prompt: {', '.join(missing)}")
        for error in r.errors:
            lines.append(f"{r.strategy}: {error}")
    return "\n".join(lines)
