"""Token counting the way the chat completions API counts a prompt.

Exact for OpenAI models: tiktoken with the model's encoding, plus the chat format's overhead
(3 tokens a message, 1 for a ``name``, 3 to prime the reply). Models tiktoken does not know
(Llama, Qwen, Mistral served by Ollama or vLLM...) are counted with ``o200k_base`` as a stated
fallback; :mod:`bot.core.memory.calibration` then corrects budgets from the server's reported usage.

tiktoken downloads its encoding files on first use. The ``bpe-openai`` package ships the same
files (byte-identical; tiktoken checks their sha256), so :func:`install_encodings` seeds
tiktoken's cache from it and the bot never needs the network to count.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import tiktoken

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3
ROLE_TOKENS = 1
""""system", "user" and "assistant" are one token each in every encoding used here."""
MESSAGE_OVERHEAD = TOKENS_PER_MESSAGE + ROLE_TOKENS
"""What a message without ``name`` costs beyond its content."""
FALLBACK_ENCODING = "o200k_base"

_OFFICIAL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "channel-memory-bot" / "tiktoken"


def _bundled_data_dir() -> Path:
    # Located without importing bpe_openai, whose import loads a tokenizer we don't use.
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the bpe-openai package, which carries tiktoken's encodings, is missing")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def install_encodings(cache_dir: Path | None = None) -> Path:
    """Make tiktoken find its encodings in ``cache_dir`` without downloading them.

    Uses ``TIKTOKEN_CACHE_DIR`` when set, else ``cache_dir``, else a per-user cache; sets the
    variable so tiktoken looks there. Files already present are kept when their hash matches.
    """
    env_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    target = Path(env_dir) if env_dir else (cache_dir or default_cache_dir())
    target.mkdir(parents=True, exist_ok=True)
    for name, digest in ENCODING_SHA256.items():
        path = target / hashlib.sha1(_OFFICIAL.format(name=name).encode()).hexdigest()
        if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() == digest:
            continue
        data = gzip.decompress((_bundled_data_dir() / f"{name}.tiktoken.gz").read_bytes())
        if hashlib.sha256(data).hexdigest() != digest:
            raise RuntimeError(f"bundled {name} encoding does not match its published hash")
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(target)
    return target


def encoding_name_for(model: str) -> tuple[str, bool]:
    """The encoding for ``model`` and whether counting with it is exact."""
    candidates = [model]
    if "/" in model:  # e.g. "openai/gpt-4o" on OpenRouter
        candidates.append(model.rsplit("/", 1)[1])
    for name in candidates:
        try:
            return tiktoken.encoding_name_for_model(name), True
        except KeyError:
            continue
    return FALLBACK_ENCODING, False


@dataclass(frozen=True)
class ChatTokenizer:
    """Counts text and chat messages for one model."""

    model: str
    encoding_name: str
    exact: bool
    _encoding: tiktoken.Encoding

    @classmethod
    def for_model(cls, model: str) -> ChatTokenizer:
        name, exact = encoding_name_for(model)
        return cls(
            model=model, encoding_name=name, exact=exact, _encoding=tiktoken.get_encoding(name)
        )

    def counts_exactly(self, model: str) -> bool:
        """Whether this count of a prompt is ``model``'s server's: tiktoken knows the model,
        and its encoding is this one."""
        return encoding_name_for(model) == (self.encoding_name, True)

    def count(self, text: str) -> int:
        """Tokens of ``text``; special-token strings such as ``<|endoftext|>`` are plain text."""
        return len(self._encoding.encode_ordinary(text))

    def truncate(self, text: str, tokens: int) -> str:
        """The start of ``text`` that takes at most ``tokens`` (cut on a character boundary:
        a token that ends mid-character is left out)."""
        encoded = self._encoding.encode_ordinary(text)
        if len(encoded) <= tokens:
            return text
        return self._encoding.decode(encoded[: max(tokens, 0)], errors="ignore")

    def count_messages(self, messages: Iterable[Mapping[str, str]]) -> int:
        """Tokens of a whole prompt in chat format, reply priming included."""
        total = REPLY_PRIMING
        for message in messages:
            total += TOKENS_PER_MESSAGE
            for key, value in message.items():
                total += self.count(value)
                if key == "name":
                    total += TOKENS_PER_NAME
        return total

    def describe(self, model: str | None = None) -> str:
        """How prompts for ``model`` (None: this tokenizer's) are counted."""
        model = model or self.model
        if self.counts_exactly(model):
            return f"{model}: counted exactly with {self.encoding_name}"
        own, known = encoding_name_for(model)
        if not known:
            return (
                f"{model}: not a model tiktoken knows; counted with {self.encoding_name} "
                "and calibrated from the server's reported usage"
            )
        return (
            f"{model}: counted with {self.encoding_name} (as for {self.model}; its own is "
            f"{own}) and calibrated from the server's reported usage"
        )
