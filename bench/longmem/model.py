"""The model side of the long-memory benchmark: the tests' OpenAI-compatible server
(``tests/support/fake_llm.py``) answering as described here, deterministically.

**Chat** (the bot answering a mention): one short, fixed sentence in the language of the
message (Chinese when it holds Han characters), whatever was asked. The request is kept, so
the benchmark reads the prompt exactly as the model received it.

**Summary** (a request whose system message is the bot's ``SUMMARY_INSTRUCTIONS``), in the
shape a real summary model writes, without copying its input wholesale:

- ``Facts:``: the previous summary's fact lines, carried forward word for word (as the
  instructions ask), then one line for each message the bot lists under "Important messages",
  ``- DATE NAME: GIST``. The gist is a reduction of the message, as a note-taker would write it:
  in English its words with a digit, its capitalised words and its words of five letters or
  more (stop words left out), at most twelve, in their order; in Chinese its first three
  clauses (split at punctuation) without their trailing particles (了吗呢吧啊...), at most 28
  characters. No other message gets a fact line: the fake cannot tell a durable fact from
  chatter, so it trusts the bot's importance marks and nothing else.
- ``Narrative:``: one sentence: the dates covered, who spoke, how many messages, and the
  opening words of the three longest (four words of a message of eight or more; in Chinese,
  five characters of one of ten or more): never a whole message.
- No ``PROFILE`` lines: this model never proposes profile facts.
- The answer fits the request's ``max_tokens`` (counted with ``o200k_base``): when it would not,
  the oldest fact lines are dropped first.

The bot then does what it does with any summary: whatever an important message's numbers and
dates (or most of its words) are missing from, it appends verbatim under "Kept verbatim:".

With ``forgetful=True`` the summary holds no facts at all (``Facts:`` says nothing durable
was said) and the same narrative: only the bot's own "Kept verbatim:" part keeps anything.

**Embeddings**: by default the tests' server's hash vectors, which carry no meaning. With an
``embeddings_url``, each request is passed on to that OpenAI-compatible server with
``embedding_model`` as the model, and its vectors returned; with ``cache``, vectors are kept
in a SQLite file by model and text, so a repeated run asks the server only for new texts.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sqlite3
import struct
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bot.core.memory.summarizer import SUMMARY_INSTRUCTIONS
from tests.support.fake_llm import FakeLLM, Reply, encoding_for

HAN = re.compile(r"[\u4e00-\u9fff]")
ANSWER_EN = "Short answer from the test model."
ANSWER_ZH = "测试模型的简短回答。"
_LINE = re.compile(r"^\[(\d{4}-\d\d-\d\d) \d\d:\d\d\] ([^:]+): (.*)$")
_PREVIOUS = "Previous summary:"
_NEW = "New messages:"
_IMPORTANT = "Important messages (keep their facts exactly):"
_STOP_WORDS = """
    about above after again against all also always another because been before being below
    between both could does doing down during each every from further have having here
    however into itself just maybe might more most much never only other ought ours over
    really same should some still such than that their theirs them then there these they
    thing things think this those through under until very want what when where which while
    whom whose why will with would your yours yeah gonna kinda sorta okay pretty"""
_STOP_EN = frozenset(_STOP_WORDS.split())
_PARTICLES = re.compile(r"[了吗呢吧啊呀哈嘛哦噢啦哇呗嘿嗯]+$")
_CLAUSE = re.compile(r"[，。！？；、,.!?;~…\s：:（）()“”\"']+")
_NO_FACTS = {"en": "- nothing durable was said", "zh": "- 没有需要长期记住的事"}


def is_summary_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == SUMMARY_INSTRUCTIONS


def language_of(text: str) -> str:
    return "zh" if HAN.search(text) else "en"


def gist(text: str) -> str:
    """A note-taker's reduction of a message (see the module's docstring)."""
    text = " ".join(text.split())
    if language_of(text) == "zh":
        clauses = [_PARTICLES.sub("", c) for c in _CLAUSE.split(text)]
        kept = [c for c in clauses if len(c) > 1][:3]
        return "，".join(kept)[:28]
    words = []
    for token in text.split():
        core = token.strip(".,!?;:()\"'“”‘’…-—")
        if not core:
            continue
        if (
            any(ch.isdigit() for ch in core)
            or (core[0].isupper() and core not in ("I", "I'm", "I'll", "I've", "I'd"))
            or (len(core) >= 5 and core.casefold() not in _STOP_EN)
        ):
            words.append(core)
        if len(words) == 12:
            break
    return " ".join(words)


def _sections(content: str) -> tuple[str, list[str], list[str]]:
    """The previous summary, the new lines and the important lines of a summary request."""
    previous, _, rest = content.partition(f"\n\n{_NEW}\n")
    previous = previous.removeprefix(_PREVIOUS).strip()
    if previous == "(none)":
        previous = ""
    new, _, important = rest.partition(f"\n\n{_IMPORTANT}\n")
    return previous, _joined(new), _joined(important)


def _joined(block: str) -> list[str]:
    """Transcript lines, a message's further lines (indented) joined to its first."""
    lines: list[str] = []
    for line in block.splitlines():
        if line.startswith("  ") and lines:
            lines[-1] += " " + line.strip()
        elif line.strip():
            lines.append(line)
    return lines


def _previous_facts(previous: str) -> list[str]:
    facts, _, _ = previous.partition("\nNarrative:")
    return [
        line
        for line in facts.splitlines()
        if line.startswith("- ") and line not in _NO_FACTS.values()
    ]


def _topics(texts: list[str], language: str) -> list[str]:
    """What a narrative names: the opening words of the three longest messages (never a
    whole message: four words of one of eight or more, five characters of one of ten)."""
    longest = sorted(texts, key=len, reverse=True)[:3]
    if language == "zh":
        return [text.strip()[:5] + "…" for text in longest if len(text.strip()) >= 10]
    return [" ".join(text.split()[:4]) + "…" for text in longest if len(text.split()) >= 8]


def summarize(content: str, max_tokens: int, *, forgetful: bool = False) -> str:
    """The fake summary model's answer to a summary request's user message."""
    previous, new, important = _sections(content)
    parsed = [m for m in (_LINE.match(line) for line in new) if m]
    texts = [m[3] for m in parsed]
    language = language_of(" ".join(texts))
    facts = [] if forgetful else _previous_facts(previous)
    if not forgetful:
        for line in important:
            match = _LINE.match(line)
            if match:
                fact = f"- {match[1]} {match[2]}: {gist(match[3])}"
                if fact not in facts:
                    facts.append(fact)
    names = list(dict.fromkeys(m[2] for m in parsed if not m[2].startswith("assistant")))
    dates = [m[1] for m in parsed] or ["?"]
    topics = _topics(texts, language)
    if language == "zh":
        quoted = "”“".join(topics)
        narrative = (
            f"{dates[0]}至{dates[-1]}：{'、'.join(names)}聊了{len(texts)}条，提到“{quoted}”等。"
        )
    else:
        quoted = '", "'.join(topics)
        narrative = (
            f"{dates[0]} to {dates[-1]}: {', '.join(names)} wrote {len(texts)} messages, "
            f'among them "{quoted}".'
        )
    encoding = encoding_for("gpt-4o-mini")
    while True:
        shown = facts or [_NO_FACTS[language]]
        text = "Facts:\n" + "\n".join(shown) + "\nNarrative:\n" + narrative
        if len(encoding.encode_ordinary(text)) <= max_tokens or not facts:
            return text
        facts = facts[1:]


class VectorCache:
    """Embeddings kept by model and text in a SQLite file."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (model TEXT, digest TEXT, vector BLOB, "
            "PRIMARY KEY (model, digest))"
        )

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, model: str, text: str) -> list[float] | None:
        row = self._db.execute(
            "SELECT vector FROM vectors WHERE model = ? AND digest = ?", (model, self._digest(text))
        ).fetchone()
        if row is None:
            return None
        blob: bytes = row[0]
        return list(struct.unpack(f"<{len(blob) // 4}f", blob))

    def put(self, model: str, text: str, vector: list[float]) -> None:
        blob = struct.pack(f"<{len(vector)}f", *vector)
        self._db.execute(
            "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", (model, self._digest(text), blob)
        )
        self._db.commit()

    def close(self) -> None:
        self._db.close()


class BenchModel(FakeLLM):
    """The tests' server answering as the module's docstring says, keeping each chat request."""

    def __init__(
        self,
        *,
        forgetful: bool = False,
        embeddings_url: str | None = None,
        embedding_model: str | None = None,
        cache: Path | None = None,
    ) -> None:
        super().__init__()
        self.forgetful = forgetful
        self.prompts: list[dict[str, Any]] = []
        """The chat requests (not summaries), in the order they came."""
        self.summaries = 0
        self.responder = self._respond
        self._embeddings_url = embeddings_url.rstrip("/") if embeddings_url else None
        self._embedding_model = embedding_model
        self._cache = VectorCache(cache) if cache is not None else None
        self._http: aiohttp.ClientSession | None = None

    def _respond(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        if is_summary_request(body):
            self.summaries += 1
            limit = int(body.get("max_tokens") or body.get("max_completion_tokens") or 800)
            return Reply(text=summarize(messages[-1]["content"], limit, forgetful=self.forgetful))
        self.prompts.append(body)
        last = str(messages[-1].get("content", "")) if messages else ""
        return Reply(text=ANSWER_ZH if language_of(last) == "zh" else ANSWER_EN)

    async def aclose(self) -> None:
        await super().aclose()
        if self._http is not None:
            await self._http.close()
            self._http = None
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    async def _embeddings(self, request: web.Request) -> web.Response:
        if self._embeddings_url is None:
            return await super()._embeddings(request)
        body = await request.json()
        inputs = body.get("input", [])
        texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
        model = self._embedding_model or str(body.get("model", ""))
        vectors = await self._vectors(model, texts, body.get("input_type"))
        data = []
        for index, vector in enumerate(vectors):
            value: list[float] | str = vector
            if body.get("encoding_format") == "base64":
                value = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "index": index, "embedding": value})
        usage = {"prompt_tokens": 0, "total_tokens": 0}
        return web.json_response({"object": "list", "data": data, "model": model, "usage": usage})

    async def _vectors(
        self, model: str, texts: list[str], input_type: str | None
    ) -> list[list[float]]:
        """The server's vectors (``input_type`` passed on when the bot sends one)."""
        kept_as = f"{model}|{input_type}" if input_type else model
        found = {t: self._cache.get(kept_as, t) for t in texts} if self._cache else {}
        missing = [t for t in dict.fromkeys(texts) if found.get(t) is None]
        if missing:
            if self._http is None:
                self._http = aiohttp.ClientSession()
            url = f"{self._embeddings_url}/embeddings"
            payload: dict[str, Any] = {"model": model, "input": missing, "encoding_format": "float"}
            if input_type:
                payload["input_type"] = input_type
            async with self._http.post(url, json=payload) as response:
                response.raise_for_status()
                answer = await response.json()
            rows = sorted(answer["data"], key=lambda row: row["index"])
            for text, row in zip(missing, rows, strict=True):
                vector = [float(x) for x in row["embedding"]]
                found[text] = vector
                if self._cache is not None:
                    self._cache.put(kept_as, text, vector)
        return [found[t] or [] for t in texts]
