"""``bot eval`` on a transcript against the local test server (no model, no network).

The server is ``tests/support/fake_llm.py``. Its chat model echoes the question (so the
*answered* column means nothing here: point ``bot eval`` at a real endpoint for it). Its
summary model copies forward every line of its input that contains one of the transcript's
fact keys: an ideal summarizer for the planted facts, so the in-prompt figures show what each
strategy's layout keeps, not how well a real model summarizes. With ``--forgetful-summary``
its summaries keep no fact at all (only a count of the messages folded): the worst summarizer,
to show what recall brings back from messages the summary lost. Run from the repository root::

    .venv/bin/python bench/eval_local.py bench/transcripts/en.jsonl [--forgetful-summary] \
        [bot eval options]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml

from bot.cli import main as bot_main
from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS
from bot.ops.evaluate import load_transcript
from tests.support.fake_llm import FakeLLM, echo


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    forgetful = "--forgetful-summary" in argv
    argv = [arg for arg in argv if arg != "--forgetful-summary"]
    keys = [] if forgetful else [fact.key for fact in load_transcript(Path(argv[0])).facts.values()]

    def respond(body: dict[str, Any]) -> str:
        messages = body["messages"]
        if messages and messages[0]["content"] == SUMMARY_INSTRUCTIONS:
            text = messages[-1]["content"]
            kept: list[str] = []
            for line in text.splitlines():
                line = line.strip(" -")
                if any(key in line for key in keys) and f"- {line}" not in kept:
                    kept.append(f"- {line}")
            folded = text.split("New messages:", 1)[-1].count("\n[")
            return "Facts:\n" + "\n".join(kept) + f"\nNarrative:\n{folded} more messages."
        return str(echo(body))

    with FakeLLM.start_in_thread() as server, tempfile.TemporaryDirectory() as folder:
        server.responder = respond
        config = Path(folder) / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "system_prompt": "You are a helpful assistant in a team chat.",
                    "llm": {
                        "base_url": server.url,
                        "chat_model": "gpt-4o-mini",
                        "summary_model": "gpt-4o-mini",
                    },
                    "storage": {"path": str(Path(folder) / "unused.sqlite3")},
                    "logging": {"level": "WARNING"},
                }
            )
        )
        return bot_main(["eval", *argv, "--config", str(config)])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
