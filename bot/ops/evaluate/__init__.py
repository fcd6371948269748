"""``bot eval``: a forgetting probe. Replays a conversation with planted facts through each
memory strategy and reports which facts are still in the prompt, and whether the model can
still answer questions about them.

A transcript is JSON Lines (docs/evaluation.md); each line is one object:

- ``{"user": "ana", "text": "...", "addressed": false}``: a message; the bot answers it when
  ``addressed`` (default false);
- ``{"pin": "...", "user": "ana"}``: someone pins a fact (``/pin``);
- ``{"fact": "f1", "user": "ana", "text": "...", "key": "...", "answer": "...",
  "pinned": false, "addressed": false}``: a planted fact, said as a message (and pinned too
  when ``pinned``). It counts as *present* when ``key`` (default: ``answer``), which must occur
  in ``text``, appears in the prompt: in a pin, a recent turn, the summary, or the earlier
  messages recall found;
- ``{"probe": "f1", "question": "...", "user": "ana"}``: a question about a fact, asked after
  the whole conversation was replayed; it is answered correctly when ``answer`` occurs in the
  model's reply (case-insensitive).

Each strategy replays into a fresh database in a temporary folder (never the configured one),
with the configured chat and summary endpoints. Background summaries are waited for after
every message (:meth:`Engine.drain`), so runs are repeatable and the summary path is used.
"""

from bot.ops.evaluate.replay import ModelFailed, evaluate, evaluate_strategy
from bot.ops.evaluate.report import FactResult, StrategyResult, format_report, locate
from bot.ops.evaluate.transcript import (
    Fact,
    PinLine,
    Probe,
    Say,
    Transcript,
    TranscriptError,
    load_transcript,
    parse_transcript,
)

__all__ = [
    "Fact",
    "FactResult",
    "ModelFailed",
    "PinLine",
    "Probe",
    "Say",
    "StrategyResult",
    "Transcript",
    "TranscriptError",
    "evaluate",
    "evaluate_strategy",
    "format_report",
    "load_transcript",
    "locate",
    "parse_transcript",
]
