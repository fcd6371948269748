"""Per-turn memory cost side by side: our engine, LangChain ``trim_messages``, LlamaIndex
``ChatMemoryBuffer`` and LlamaIndex's newer ``Memory``, on the same conversation, the same
tokenizer and the same budget.

Needs the peer libraries, which are bench-only (``pip install -e '.[bench]'`` in a venv of its
own; never the bot's or CI's)::

    python3 -m venv /work/bench-venv
    /work/bench-venv/bin/pip install -e '.[bench]'
    /work/bench-venv/bin/python bench/peers.py

Every contender gets the same messages: a multi-user conversation in English and Chinese
(``bench/engine_speed.py``'s generator), rendered the same way (user messages start with
``[name]``), after the same system prompt, with ``o200k_base`` (``gpt-4o-mini``'s encoding).
A turn is measured the way each is used in a bot that keeps the history:

- ours: ``Engine.record`` (store the message in SQLite) + ``Assembler.build`` (fit the prompt
  into the budget), as ``Engine.handle_message`` calls them; a real SQLite file wired by
  ``open_app`` (the model endpoint is a dummy, never contacted);
- LangChain: append the new message to the list, then ``trim_messages(strategy="last",
  include_system=True, start_on="human", max_tokens=budget)`` with an exact chat-format
  counter (the cookbook formula, the way LangChain's how-to guide writes ``tiktoken_counter``);
- LlamaIndex: ``ChatMemoryBuffer.put()`` then ``get(initial_token_count=...)``, with
  ``tokenizer_fn`` the same tiktoken encoding and the system prompt's cost as the initial
  count (it accepts no chat-format counter: it counts message contents joined by spaces).
- LlamaIndex ``Memory``: ``aput()`` then ``aget()``, the same ``tokenizer_fn``, its token limit
  the budget less the system prompt, all of it for the chat history (no memory blocks).

Afterwards, untimed, the measured message is removed again so every turn sees N messages
(LlamaIndex's ``Memory`` has no public delete: there it stays). The contenders are measured
round-robin, one turn each per round.
Every prompt is then counted by one independent counter, the cookbook formula (3 a message +
its role + its content, 3 to prime the reply), and compared with the budget.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tiktoken
from engine_speed import (
    CHANNEL,
    SYSTEM_PROMPT,
    USERS,
    ChatGenerator,
    CpuSteal,
    machine_facts,
    make_config,
    plan_turns,
    store_reply,
)
from langchain_core import __version__ as langchain_version
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.messages import trim_messages as lc_trim_messages
from llama_index.core import __version__ as llama_version
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.memory import ChatMemoryBuffer, Memory

from bot.config import Strategy
from bot.core.engine import Engine
from bot.core.memory.tokens import install_encodings
from bot.core.models import IncomingMessage
from bot.wiring import open_app

MODEL = "gpt-4o-mini"
TARGET_LANGCHAIN = 100.0  # at 10,000 messages
TARGET_LLAMA = 1000.0  # at 2,000 messages


@dataclass(frozen=True)
class Msg:
    role: str  # "user" or "assistant"
    name: str
    text: str

    @property
    def content(self) -> str:
        return f"[{self.name}] {self.text}" if self.role == "user" else self.text


# -- the conversation -----------------------------------------------------------------------


def history(size: int, seed: int) -> list[Msg]:
    gen = ChatGenerator(seed)
    out: list[Msg] = []
    for turn in plan_turns(gen, size, question_share=0.3):
        out.append(Msg("user", turn.author_name, turn.text))
        if turn.reply is not None:
            out.append(Msg("assistant", "assistant", turn.reply))
    return out


def measured_messages(count: int, seed: int) -> list[Msg]:
    gen = ChatGenerator(seed + 2)
    out = []
    for _ in range(count):
        _, name, language = gen.user()
        text = gen.question(language) if gen.rng.random() < 0.5 else gen.chatter(language)
        out.append(Msg("user", name, text))
    return out


# -- one counter for every prompt ----------------------------------------------------------


class CookbookCounter:
    """3 a message + its role + its content, 3 to prime the reply (OpenAI cookbook)."""

    def __init__(self, enc: tiktoken.Encoding) -> None:
        self.enc = enc

    def message(self, role: str, content: str) -> int:
        return 3 + len(self.enc.encode_ordinary(role)) + len(self.enc.encode_ordinary(content))

    def prompt(self, messages: Sequence[tuple[str, str]]) -> int:
        return 3 + sum(self.message(role, content) for role, content in messages)


# -- contenders -----------------------------------------------------------------------------


@dataclass
class Figures:
    name: str
    size: int
    times: list[float] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)
    prompt_messages: list[int] = field(default_factory=list)
    skipped: str = ""

    @property
    def median_ms(self) -> float:
        return statistics.median(self.times) * 1000


class Ours:
    name = "ours"

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._ids = 0

    async def prefill(self, messages: Sequence[Msg]) -> None:
        at = datetime.now(UTC) - timedelta(seconds=45 * len(messages))
        ids = {name: uid for uid, name, _ in USERS}
        last = None
        for msg in messages:
            at += timedelta(seconds=30)
            if msg.role == "assistant":
                assert last is not None
                await store_reply(self.engine, last, msg.text, at.timestamp())
                continue
            last = await self.engine.record(self._incoming(msg, ids[msg.name], at))

    def _incoming(self, msg: Msg, author_id: str, at: datetime | None = None) -> IncomingMessage:
        self._ids += 1
        return IncomingMessage(
            conversation=CHANNEL,
            author_id=author_id,
            author_name=msg.name,
            text=msg.text,
            addressed=True,
            message_id=f"m{self._ids}",
            sent_at=at or datetime.now(UTC),
        )

    async def turn(self, msg: Msg) -> tuple[float, list[tuple[str, str]]]:
        incoming = self._incoming(msg, msg.name)
        t0 = time.perf_counter()
        stored = await self.engine.record(incoming)
        settings = await self.engine.settings_for(CHANNEL)
        prompt = await self.engine.assembler.build(
            settings=settings,
            conversation_key=CHANNEL.key,
            channel_key=CHANNEL.channel_key,
            through_id=stored.id,
            current_id=stored.id,
            budget=self.engine.budget(settings),
        )
        elapsed = time.perf_counter() - t0
        assert incoming.message_id is not None
        await self.engine.delete_message(CHANNEL, incoming.message_id)
        return elapsed, [(m["role"], m["content"]) for m in prompt.messages]


def _lc_message(msg: Msg) -> BaseMessage:
    if msg.role == "user":
        return HumanMessage(content=msg.content)
    return AIMessage(content=msg.content)


class LangChain:
    name = "langchain"

    def __init__(self, messages: Sequence[Msg], enc: tiktoken.Encoding, budget: int) -> None:
        self.budget = budget
        self.history: list[BaseMessage] = [SystemMessage(content=SYSTEM_PROMPT)]
        self.history.extend(_lc_message(m) for m in messages)
        roles = {"human": "user", "ai": "assistant", "system": "system"}

        def str_token_counter(text: str) -> int:
            return len(enc.encode_ordinary(text))

        def tiktoken_counter(messages: list[BaseMessage]) -> int:
            # LangChain's how-to guide, "trim messages": the cookbook formula.
            num_tokens = 3  # every reply is primed with <|start|>assistant<|message|>
            for msg in messages:
                num_tokens += 3 + str_token_counter(roles[msg.type])
                num_tokens += str_token_counter(str(msg.content))
            return num_tokens

        self.counter: Callable[[list[BaseMessage]], int] = tiktoken_counter

    async def turn(self, msg: Msg) -> tuple[float, list[tuple[str, str]]]:
        roles = {"human": "user", "ai": "assistant", "system": "system"}
        t0 = time.perf_counter()
        self.history.append(_lc_message(msg))
        trimmed = lc_trim_messages(
            self.history,
            max_tokens=self.budget,
            token_counter=self.counter,
            strategy="last",
            include_system=True,
            start_on="human",
        )
        elapsed = time.perf_counter() - t0
        self.history.pop()
        return elapsed, [(roles[m.type], str(m.content)) for m in trimmed]


class LlamaBuffer:
    name = "llamaindex"

    def __init__(self, messages: Sequence[Msg], enc: tiktoken.Encoding, budget: int) -> None:
        role = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
        self.memory = ChatMemoryBuffer.from_defaults(
            chat_history=[ChatMessage(role=role[m.role], content=m.content) for m in messages],
            token_limit=budget,
            tokenizer_fn=enc.encode_ordinary,
        )
        # The system prompt, as the buffer counts it, is reserved up front.
        self.initial = len(enc.encode_ordinary(SYSTEM_PROMPT))

    async def turn(self, msg: Msg) -> tuple[float, list[tuple[str, str]]]:
        t0 = time.perf_counter()
        self.memory.put(ChatMessage(role=MessageRole.USER, content=msg.content))
        got = self.memory.get(initial_token_count=self.initial)
        elapsed = time.perf_counter() - t0
        self.memory.chat_store.delete_last_message(self.memory.chat_store_key)
        prompt = [("system", SYSTEM_PROMPT)]
        prompt.extend((str(m.role.value), str(m.content)) for m in got)
        return elapsed, prompt


class LlamaMemory:
    """LlamaIndex's newer ``Memory``: a FIFO queue of active messages in SQLite (SQLAlchemy,
    in memory) whose oldest messages are archived once the queue passes its token limit."""

    name = "li-memory"

    def __init__(self, enc: tiktoken.Encoding, budget: int) -> None:
        # No memory blocks: the whole limit goes to the chat history, less the system prompt.
        self.memory = Memory.from_defaults(
            session_id="bench",
            token_limit=budget - len(enc.encode_ordinary(SYSTEM_PROMPT)),
            chat_history_token_ratio=1.0,
            tokenizer_fn=enc.encode_ordinary,
        )

    async def prefill(self, messages: Sequence[Msg]) -> None:
        role = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
        await self.memory.aput_messages(
            [ChatMessage(role=role[m.role], content=m.content) for m in messages]
        )

    async def turn(self, msg: Msg) -> tuple[float, list[tuple[str, str]]]:
        t0 = time.perf_counter()
        await self.memory.aput(ChatMessage(role=MessageRole.USER, content=msg.content))
        got = await self.memory.aget()
        elapsed = time.perf_counter() - t0
        # Kept (Memory has no public delete): its active queue is bounded by its token limit.
        prompt = [("system", SYSTEM_PROMPT)]
        prompt.extend((str(m.role.value), str(m.content)) for m in got)
        return elapsed, prompt


# -- running --------------------------------------------------------------------------------


async def run(args: argparse.Namespace) -> bool:
    install_encodings()
    enc = tiktoken.get_encoding("o200k_base")
    counter = CookbookCounter(enc)
    steal = CpuSteal()
    biggest = max(args.sizes)
    full = history(biggest + 2, args.seed)
    measured = measured_messages(max(args.turns, args.slow_turns, args.llama_turns), args.seed)
    results: dict[tuple[str, int], Figures] = {}
    with tempfile.TemporaryDirectory(prefix="peers-") as folder:
        for size in args.sizes:
            messages = full[-size:]
            while messages and messages[0].role == "assistant":  # start on a whole turn
                messages = messages[1:]
            config = make_config(
                Path(folder) / f"ours-{size}.sqlite3", Strategy.HYBRID, args.budget
            )
            async with open_app(config) as app:
                ours = Ours(app.engine)
                await ours.prefill(messages)
                contenders: list[tuple[object, int]] = [(ours, args.turns)]
                contenders.append((LangChain(messages, enc, args.budget), args.slow_turns))
                if size <= args.llama_max:
                    contenders.append((LlamaBuffer(messages, enc, args.budget), args.llama_turns))
                else:
                    results[("llamaindex", size)] = Figures(
                        "llamaindex", size, skipped=f"not run above {args.llama_max:,} messages"
                    )
                if args.memory:
                    memory = LlamaMemory(enc, args.budget)
                    await memory.prefill(messages)
                    contenders.append((memory, args.slow_turns))
                # Round-robin, one turn of each per round, so that a slow spell of a shared
                # machine lands on every contender alike rather than on one.
                for contender, _ in contenders:
                    name = contender.name  # type: ignore[attr-defined]
                    results[(name, size)] = Figures(name, size)
                rounds = args.warmup + max(turns for _, turns in contenders)
                for number in range(rounds):
                    for contender, turns in contenders:
                        if number >= args.warmup + turns:
                            continue
                        figures = results[(contender.name, size)]  # type: ignore[attr-defined]
                        message = measured[number % len(measured)]
                        elapsed, prompt = await contender.turn(message)  # type: ignore[attr-defined]
                        if number >= args.warmup:
                            figures.times.append(elapsed)
                            figures.prompt_tokens.append(counter.prompt(prompt))
                            figures.prompt_messages.append(len(prompt))
                for contender, turns in contenders:
                    figures = results[(contender.name, size)]  # type: ignore[attr-defined]
                    print(
                        f"  {size:>6,} messages  {figures.name:<10} {figures.median_ms:10.3f} "
                        f"ms/turn ({turns} turns)",
                        file=sys.stderr,
                        flush=True,
                    )
    return report(results, args, steal)


def report(
    results: dict[tuple[str, int], Figures], args: argparse.Namespace, steal: CpuSteal
) -> bool:
    print(
        "\nmedian ms per turn; prompt = median tokens (cookbook count) / median messages "
        f"(system included); ok: every measured prompt within the {args.budget:,}-token "
        "budget, OVER: at least one was not"
    )
    names = ["ours", "langchain", "llamaindex", "li-memory"]
    names = [n for n in names if any((n, size) in results for size in args.sizes)]
    header = " | ".join(
        [f"{'history':>8}"]
        + [f"{n:>10}" for n in names]
        + [f"{'vs ' + n:>13}" for n in names[1:]]
        + [f"{n + ' prompt':>20}" for n in names]
    )
    print(header)
    print("-" * len(header))
    ok = True
    for size in args.sizes:
        row = [results.get((n, size), Figures(n, size, skipped="not run")) for n in names]
        ours = row[0]

        def cell(f: Figures) -> str:
            return "-" if f.skipped else f"{f.median_ms:.3f}"

        def ratio(f: Figures, ours: Figures = ours) -> str:
            return "-" if f.skipped else f"{f.median_ms / ours.median_ms:,.0f}x"

        def prompt(f: Figures) -> str:
            if f.skipped:
                return "-"
            mark = "ok" if max(f.prompt_tokens) <= args.budget else "OVER"
            tokens = statistics.median(f.prompt_tokens)
            return f"{tokens:,.0f}/{statistics.median(f.prompt_messages):.0f} {mark}"

        print(
            " | ".join(
                [f"{size:>8,}"]
                + [f"{cell(f):>10}" for f in row]
                + [f"{ratio(f):>13}" for f in row[1:]]
                + [f"{prompt(f):>20}" for f in row]
            )
        )
        ok &= max(ours.prompt_tokens) <= args.budget
    print(
        f"\nturns measured per size: ours {args.turns}, langchain and li-memory "
        f"{args.slow_turns}, llamaindex {args.llama_turns} (after {args.warmup} warm-up); "
        "llamaindex only up to "
        f"{args.llama_max:,} messages (its get() re-tokenizes the kept history once per "
        "message it drops: quadratic)"
    )
    big = max(args.sizes)
    if ("langchain", big) in results and big >= 10_000:
        r = results[("langchain", big)].median_ms / results[("ours", big)].median_ms
        met = r >= TARGET_LANGCHAIN
        ok &= met
        print(
            f"target >= {TARGET_LANGCHAIN:.0f}x LangChain at {big:,}: {r:,.0f}x "
            f"{'met' if met else 'MISSED'}"
        )
    li_sizes = [s for s in args.sizes if s <= args.llama_max]
    if li_sizes and max(li_sizes) >= 2000:
        s = max(li_sizes)
        r = results[("llamaindex", s)].median_ms / results[("ours", s)].median_ms
        met = r >= TARGET_LLAMA
        ok &= met
        print(
            f"target >= {TARGET_LLAMA:.0f}x LlamaIndex at {s:,}: {r:,.0f}x "
            f"{'met' if met else 'MISSED'}"
        )
    print("\n" + "\n".join(machine_facts()))
    print(
        f"langchain-core {langchain_version}, llama-index-core {llama_version}, "
        f"tiktoken {tiktoken.__version__ if hasattr(tiktoken, '__version__') else '?'}; "
        f"CPU steal during the run: {steal.percent()}; {platform.node()}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 2000, 10000])
    parser.add_argument("--budget", type=int, default=8000)
    parser.add_argument("--turns", type=int, default=50, help="measured turns: ours")
    parser.add_argument("--slow-turns", type=int, default=20, help="measured turns: langchain")
    parser.add_argument("--llama-turns", type=int, default=2, help="measured turns: llamaindex")
    parser.add_argument("--llama-max", type=int, default=2000, help="largest size for llamaindex")
    parser.add_argument(
        "--no-memory", dest="memory", action="store_false", help="skip LlamaIndex's Memory"
    )
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    return 0 if asyncio.run(run(args)) else 1


if __name__ == "__main__":
    sys.exit(main())
