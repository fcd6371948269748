"""What a server's model list says of a model's context window.

OpenAI's ``GET /models`` says nothing of it; some servers add it to each entry: vLLM as
``max_model_len`` (the length it serves), OpenRouter as ``context_length``, Groq as
``context_window``, llama.cpp's ``llama-server`` as ``meta.n_ctx_train`` (the length the model
was trained for: ``--ctx-size`` may serve less). llama-cpp-python's server tells it only in a
context-length error, which the bot remembers (:class:`~bot.core.memory.calibration.Calibrator`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_FIELDS: tuple[tuple[str, ...], ...] = (
    ("max_model_len",),
    ("context_length",),
    ("context_window",),
    ("meta", "n_ctx_train"),
)
"""Where an entry may tell the window, the length served before the length trained for."""


@dataclass(frozen=True)
class Window:
    tokens: int
    """The model's context window in the server's tokens: prompt and answer together."""
    field: str
    """Where the server said it (``max_model_len``, ``meta.n_ctx_train``, ...)."""


def told_window(entry: Mapping[str, object]) -> Window | None:
    """The context window one ``/models`` entry tells, or None when it tells none."""
    for path in _FIELDS:
        value: object = entry
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return Window(value, ".".join(path))
    return None
