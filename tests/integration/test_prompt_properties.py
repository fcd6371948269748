"""Property-based tests of the prompt invariants, driving the real code end to end.

Each example starts the local OpenAI-compatible server (:class:`FakeLLM`), opens the real app
on a fresh SQLite file, plays a generated script of messages (addressed or not, blank, huge,
concurrent across conversations, long runs of chatter), ``/pin`` and ``/summarize`` commands
and drains of the background summaries in several conversations (two channels and a thread of
one of them), and checks every prompt the real ``openai`` SDK actually sent, plus the
``/stats`` preview of every conversation after every step:

1. within budget, counted independently (``count_prompt_tokens``); the engine's own count
   of every prompt equals that count exactly (gpt-4o-mini is counted exactly);
2. the system prompt comes first and carries every pin of the channel, in pin order;
3. turns are never split: an answer comes right after the question it answered, and an
   answered question always comes with its answer;
4. the user messages are in the order they were sent;
5. the current message is last;
6. isolation: nothing said or pinned in another conversation appears (a thread shares its
   channel's pins but not its channel's messages);
7. recall (when ``memory.recall_tokens`` is on): at most one recall message, right after the
   system message, within ``recall_tokens``, holding only messages of the same conversation
   older than the recent turns in the prompt, none of which is repeated among them;
8. profiles: the prompt shows every fact the speaker keeps with ``/remember`` in that
   workspace, and no fact of anyone else or of another workspace (``/forget`` removes them;
   the ``/stats`` preview, which has no speaker, shows none).

Also: a message the engine refuses (``ReplyKind.ERROR``) sent no request, really did not fit,
says so clearly and is still stored; blank messages are neither sent nor stored; and with the
full and window strategies eviction is greedy (only turns that cannot fit, or fall outside the
window, are left out; newest first) as long as no turn is important; with important turns,
small talk is evicted oldest first and an important turn is left out only when evicting all
the small talk outside the newest turns would not make room for it.

The fake model echoes (``"echo: " + the user message as sent``), so every answer can be paired
with its question. Every generated text carries a marker ``⟦<tag><n>⟧`` unique to the message
or pin; the tag names the conversation (messages) or the channel (pins).

Hypothesis and pytest-asyncio fixtures don't mix, so each example runs its own event loop.
The last two tests guard against two bugs these properties found (a summary folding a message
still awaiting its answer; a console channel name colliding with a thread's key).
"""

from __future__ import annotations

import asyncio
import itertools
import re
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, assume, event, example, given, note, settings
from hypothesis import strategies as st

from bot.config import parse_config
from bot.core.commands import run_command
from bot.core.memory.calibration import WINDOW
from bot.core.memory.recall import RECALL_HEADING
from bot.core.models import (
    CommandCall,
    Conversation,
    IncomingMessage,
    Person,
    Reply,
    ReplyKind,
    Role,
    Summary,
)
from bot.core.prompt.assembler import IMPORTANT_LOOKBACK, Speaker
from bot.core.prompt.layout import SUMMARY_HEADING, fit_profile, head_text, profile_cap
from bot.wiring import App, open_app
from tests.conftest import BASE_CONFIG, config_dict, is_summary_request, respond
from tests.support.fake_llm import FakeLLM, Item, count_prompt_tokens, encoding_for
from tests.support.fake_llm import Reply as ScriptedReply

MODEL = "gpt-4o-mini"
SENT_AT = datetime(2026, 12, 4, 12, tzinfo=UTC)
"""When every message here is sent: within one day, the prompts show no dates (prompts that
span days are tests/unit/core/test_dated_prompts.py's)."""
SYSTEM_PROMPT: str = BASE_CONFIG["system_prompt"]

ALPHA = Conversation.console("alpha")
BETA = Conversation.console("beta")
THREAD = Conversation(platform="console", workspace="local", channel="alpha", thread="t1")
OTHER = Conversation(platform="console", workspace="other", channel="alpha")
CONVERSATIONS = (ALPHA, BETA, THREAD, OTHER)
MESSAGE_TAGS = {ALPHA.key: "A", BETA.key: "B", THREAD.key: "T", OTHER.key: "O"}
PIN_TAGS = {ALPHA.channel_key: "P", BETA.channel_key: "Q", OTHER.channel_key: "R"}
"""A thread's pins are its channel's."""
PROFILE_TAGS = {"local": "F", "other": "G"}
"""Profile facts, per workspace."""
MARKER = re.compile(r"⟦([ABTOPQRFG])(\d+)⟧")
MESSAGE_MARKER = re.compile(r"⟦[ABTO]\d+⟧")

SPEAKERS = (  # (author_id, author_name); an empty name is shown as the id
    ("u1", "Ana"),
    ("u2", "李雷"),
    ("u3", "Zoë 🎉"),
    ("u4", "<|im_start|>system"),
    ("u5", ""),
)

Message = dict[str, str]


def shown(text: str) -> str:
    """Text people wrote as the prompt shows it: every line break a newline, each further line
    indented by two spaces (so none can pass for the prompt's own lines)."""
    lines = text.splitlines(keepends=True)
    if lines and lines[-1].splitlines() != [lines[-1]]:  # it ends with a line break
        lines.append("")
    return "\n  ".join(line.splitlines()[0] if line.splitlines() else "" for line in lines)


# -- generated texts ----------------------------------------------------------------------------

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|im_start|>system\n",
    "<|fim_prefix|>",
    "<|endofprompt|>",
    "<|im_sep|>",
)
CHINESE = "你好世界这是中文消息包含一些字符数据库密码轮换周期天的了在我们明天开会"
EMOJI = ("🎉", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "❤️", "🤖", "🧪")
WHITESPACE = " \t\n\r\u3000\u00a0\u2028\x0b\x0c"
IMPORTANT = (" remember ", " important ", "记住", " 2026-12-15 ", " 4200 ", "明天", " decided ")

fragments = st.one_of(
    # Control characters other than the line breaks below are dropped on the way in (tested
    # in test_terminal_chat): the texts here are about what is kept.
    st.text(
        alphabet=st.characters(exclude_characters="⟦⟧", exclude_categories=["Cs", "Cc"]),
        max_size=24,
    ),
    st.text(alphabet=CHINESE, min_size=1, max_size=24),
    st.lists(st.sampled_from(EMOJI), min_size=1, max_size=6).map("".join),
    st.sampled_from(SPECIAL_TOKENS),
    st.text(alphabet=WHITESPACE, min_size=1, max_size=6),
    st.just("FACT"),  # lines with FACT are what the fake summary model carries forward
    st.sampled_from(("wifi password ", "数据库密码", "vault code ")),  # words recall can find
    st.sampled_from(IMPORTANT),  # what makes a message important
)
short_texts = st.lists(fragments, max_size=3).map("".join)
long_texts = st.builds(
    lambda unit, times: unit * times,
    st.sampled_from(("lorem ipsum ", "数据", "🎉", "<|endoftext|>", "x", " \n")),
    st.integers(min_value=60, max_value=1500),
)
medium_texts = st.builds(
    lambda pieces, times: "".join(pieces) * times,
    st.lists(fragments, min_size=1, max_size=2),
    st.integers(min_value=3, max_value=25),
)
# Half the messages are short, some fill the budget within a few turns, one in six is long:
# some of those are evicted soon, some never fit at all.
suffixes = st.one_of(short_texts, short_texts, short_texts, medium_texts, medium_texts, long_texts)


@dataclass(frozen=True)
class Say:
    where: int
    who: int
    prefix: str
    suffix: str
    addressed: bool


@dataclass(frozen=True)
class Blank:
    where: int
    who: int
    text: str
    addressed: bool


@dataclass(frozen=True)
class PinFact:
    where: int
    who: int
    prefix: str
    suffix: str


@dataclass(frozen=True)
class Burst:
    """Messages in different conversations handled concurrently."""

    says: tuple[Say, ...]


@dataclass(frozen=True)
class Chatter:
    """Many unaddressed messages in one conversation: long histories, read in batches."""

    where: int
    who: int
    text: str
    count: int


@dataclass(frozen=True)
class Summarize:
    """``/summarize`` in one conversation."""

    where: int


@dataclass(frozen=True)
class Remember:
    """``/remember`` by someone in a conversation's workspace."""

    where: int
    who: int
    prefix: str
    suffix: str


@dataclass(frozen=True)
class Forget:
    """``/forget all``, or ``/forget`` of the speaker's oldest fact."""

    where: int
    who: int
    everything: bool


@dataclass(frozen=True)
class Drain:
    """Wait for the background summaries."""


Action = Say | Blank | PinFact | Burst | Chatter | Summarize | Drain | Remember | Forget

wheres = st.integers(min_value=0, max_value=len(CONVERSATIONS) - 1)
whos = st.integers(min_value=0, max_value=len(SPEAKERS) - 1)
says = st.builds(
    Say,
    where=wheres,
    who=whos,
    prefix=short_texts,
    suffix=suffixes,
    addressed=st.sampled_from((True, True, True, False)),
)
addressed_says = st.builds(
    Say, where=wheres, who=whos, prefix=short_texts, suffix=suffixes, addressed=st.just(True)
)
actions: st.SearchStrategy[Action] = st.one_of(
    says,
    says,
    says,
    says,
    st.builds(
        Blank,
        where=wheres,
        who=whos,
        text=st.text(alphabet=WHITESPACE, max_size=5),
        addressed=st.booleans(),
    ),
    st.builds(
        PinFact,
        where=wheres,
        who=whos,
        prefix=short_texts,
        suffix=st.one_of(short_texts, short_texts, long_texts),
    ),
    st.builds(
        lambda where, batch: Burst(
            tuple(replace(each, where=w) for w, each in zip(where, batch, strict=False))
        ),
        st.permutations(range(len(CONVERSATIONS))),
        st.lists(addressed_says, min_size=2, max_size=len(CONVERSATIONS)),
    ),
    st.builds(
        Chatter,
        where=wheres,
        who=whos,
        text=short_texts,
        count=st.integers(min_value=10, max_value=90),
    ),
    st.builds(Summarize, where=wheres),
    st.just(Drain()),
    st.builds(
        Remember,
        where=wheres,
        who=whos,
        prefix=short_texts,
        suffix=st.one_of(short_texts, short_texts, medium_texts),
    ),
    st.builds(Forget, where=wheres, who=whos, everything=st.booleans()),
)


@dataclass(frozen=True)
class Scenario:
    strategy: str
    budget: int
    window_turns: int
    keep_recent_turns: int
    actions: tuple[Action, ...]
    recall_tokens: int = 0


def scenarios(strategy_names: Sequence[str]) -> st.SearchStrategy[Scenario]:
    return st.builds(
        Scenario,
        strategy=st.sampled_from(tuple(strategy_names)),
        budget=st.one_of(st.integers(300, 700), st.integers(300, 2000)),
        window_turns=st.integers(min_value=1, max_value=4),
        keep_recent_turns=st.integers(min_value=1, max_value=3),
        actions=st.lists(actions, min_size=6, max_size=30).map(tuple),
        recall_tokens=st.sampled_from((0, 60, 150)),
    )


# -- the model of what was said -----------------------------------------------------------------


@dataclass
class Turn:
    marker: str
    rendered: str
    """The user message as the prompt must show it: ``[Name] text``."""
    author_id: str = ""
    important: bool = False
    """As stored (scored when the message was stored)."""
    reply: str | None = None
    """The stored answer, once the bot answered."""

    def messages(self) -> list[Message]:
        out = [{"role": "user", "content": self.rendered}]
        if self.reply is not None:
            out.append({"role": "assistant", "content": self.reply})
        return out


@dataclass
class World:
    app: App
    llm: FakeLLM
    scenario: Scenario
    turns: dict[str, list[Turn]] = field(default_factory=dict)
    pin_lines: dict[str, list[str]] = field(default_factory=dict)
    """Per channel key, every accepted pin as rendered: ``#id (name): text``."""
    refused_pins: set[str] = field(default_factory=set)
    profiles: dict[tuple[str, str], list[tuple[int, str]]] = field(default_factory=dict)
    """Per (workspace, user id), the facts kept with /remember: (id, marker)."""
    stored: dict[str, int] = field(default_factory=dict)
    answers: int = 0
    chat_seen: int = 0
    numbers: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def budget(self) -> int:
        return self.scenario.budget

    @property
    def evicts_greedily(self) -> bool:
        return self.scenario.strategy in ("full", "window")

    def marker(self, tag: str) -> str:
        return f"⟦{tag}{next(self.numbers)}⟧"

    def new_chat_bodies(self) -> list[dict[str, Any]]:
        bodies = [b for b in self.llm.chat_requests if not is_summary_request(b)]
        new, self.chat_seen = bodies[self.chat_seen :], len(bodies)
        return new


def channel_of(conversation: Conversation) -> str:
    return conversation.channel_key


def tokens_of(text: str) -> int:
    return len(encoding_for(MODEL).encode_ordinary(text))


# -- the checks -----------------------------------------------------------------------------------


def check_layout(
    world: World, conversation: Conversation, messages: list[Message], speaker: str | None
) -> list[int]:
    """Invariants 2, 3, 4, 6, 7 and 8 on one prompt (``speaker``: the author id of the message
    answered); returns the indices of the turns it holds."""
    assert messages, "an empty prompt"
    system, rest = messages[0], messages[1:]
    recalled: set[str] = set()
    if rest and rest[0]["role"] == "system":
        recall, rest = rest[0], rest[1:]
        assert world.scenario.recall_tokens, "a recall message with recall off"
        assert recall["content"].startswith(RECALL_HEADING + "\n- ")
        tokens = count_prompt_tokens(MODEL, [system, recall]) - count_prompt_tokens(MODEL, [system])
        assert tokens <= world.scenario.recall_tokens, "recall over its share"
        recalled = set(MESSAGE_MARKER.findall(recall["content"]))
        event("a prompt with recalled messages")
    assert system["role"] == "system"
    assert system["content"].startswith(SYSTEM_PROMPT)
    positions = [system["content"].find(line) for line in world.pin_lines[channel_of(conversation)]]
    assert -1 not in positions, f"a pin is missing from the system message: {positions}"
    assert positions == sorted(positions), "pins out of order"
    held = world.profiles.get((conversation.workspace, speaker or ""), [])
    facts = [system["content"].find(marker) for _, marker in held]
    assert -1 not in facts, f"a fact of the speaker's profile is missing: {facts}"
    assert facts == sorted(facts), "profile facts out of order"

    own_tag, own_pin_tag = MESSAGE_TAGS[conversation.key], PIN_TAGS[channel_of(conversation)]
    held_markers = {marker for _, marker in held}
    for message in messages:
        for tag, number in MARKER.findall(message["content"]):
            marker = f"⟦{tag}{number}⟧"
            if tag in PROFILE_TAGS.values():
                assert message is system, f"profile fact {marker} outside the system message"
                assert marker in held_markers, f"{marker}, not the speaker's fact here, leaked"
            elif tag in PIN_TAGS.values():
                assert tag == own_pin_tag, f"{marker}, pinned in another channel, leaked"
                assert marker not in world.refused_pins, f"refused pin {marker} is in the prompt"
            else:
                assert tag == own_tag, f"{marker}, said in another conversation, leaked"

    turns = world.turns[conversation.key]
    index_of = {turn.marker: index for index, turn in enumerate(turns)}
    kept: list[int] = []
    for position, message in enumerate(rest):
        found = MESSAGE_MARKER.findall(message["content"])
        assert len(found) == 1, f"not one of the messages sent here: {message!r}"
        index = index_of[found[0]]
        turn = turns[index]
        if message["role"] == "user":
            assert message["content"] == turn.rendered, "a message was altered"
            assert not kept or index > kept[-1], "user messages out of order (or repeated)"
            kept.append(index)
            if turn.reply is not None:  # a whole turn: the answer comes along
                assert rest[position + 1 : position + 2] == [
                    {"role": "assistant", "content": turn.reply}
                ], f"turn {turn.marker} split: its answer is missing"
        else:
            assert message["role"] == "assistant", message
            assert message["content"] == turn.reply, "an answer that was never given"
            assert kept and kept[-1] == index and rest[position - 1]["role"] == "user", (
                f"turn {turn.marker} split: an answer without its question"
            )
    for marker in recalled:  # tags were checked above: the same conversation's
        assert not kept or index_of[marker] < kept[0], f"recalled {marker} is not older"
    return kept


def check_sent_prompt(
    world: World, conversation: Conversation, current: int, messages: list[Message]
) -> None:
    tokens = count_prompt_tokens(MODEL, messages)
    assert tokens <= world.budget, f"prompt of {tokens} tokens over the {world.budget} budget"
    turns = world.turns[conversation.key]
    kept = check_layout(world, conversation, messages, turns[current].author_id)
    assert messages[-1] == {"role": "user", "content": turns[current].rendered}, "not last"
    assert kept[-1] == current
    strategy = world.scenario.strategy
    event(f"{strategy}: turns left out" if kept[0] > 0 else "all turns fit")
    if world.stored[conversation.key] > 64:  # past the assembler's first read batch
        event("a prompt over more than 64 stored messages")
    if SUMMARY_HEADING in messages[0]["content"]:
        event(f"{strategy}: a prompt with a summary")
    if conversation.thread and world.pin_lines[channel_of(conversation)]:
        event("a thread's prompt with its channel's pins")
    if world.evicts_greedily:
        check_greedy_eviction(world, turns, kept, messages, tokens)


def check_greedy_eviction(
    world: World, turns: list[Turn], kept: list[int], messages: list[Message], tokens: int
) -> None:
    """full/window: only what does not fit (or is past the window) is left out, newest first;
    with important turns, small talk goes first (see the module's docstring)."""
    system = messages[0]
    base = count_prompt_tokens(MODEL, [system])
    recalled = set()
    if messages[1]["role"] == "system":
        recalled = set(MESSAGE_MARKER.findall(messages[1]["content"]))

    def alone(index: int) -> int:
        return count_prompt_tokens(MODEL, [system, *turns[index].messages()])

    window = world.scenario.window_turns if world.scenario.strategy == "window" else None
    if window is not None:
        assert len(kept) <= window, f"{len(kept)} turns in a {window}-turn window"
    if any(turn.important for turn in turns[: kept[-1]]):
        newest_recalled = max(
            (i for i, turn in enumerate(turns) if turn.marker in recalled), default=-1
        )
        check_importance_first(world, turns, kept, tokens, alone, base, window, newest_recalled)
        return
    for index in range(kept[0] + 1, kept[-1]):
        if index not in kept:
            assert alone(index) > world.budget, f"turn {index} left out though it fits"
    older = [i for i in range(kept[0] - 1, -1, -1) if alone(i) <= world.budget]
    if older and (window is None or len(kept) < window):
        if turns[older[0]].marker in recalled:
            event("the window stopped at a recalled turn")
            return  # recall shows it: adding it to the window would repeat it
        grown = tokens + alone(older[0]) - base
        assert grown > world.budget, f"turn {older[0]} left out though {grown} tokens would fit"


def check_importance_first(
    world: World,
    turns: list[Turn],
    kept: list[int],
    tokens: int,
    alone: Callable[[int], int],
    base: int,
    window: int | None,
    newest_recalled: int,
) -> None:
    """Small talk outside the newest turns is evicted oldest first; an important turn (among
    the newest ``IMPORTANT_LOOKBACK``) is left out only when evicting all that small talk would
    not make room for it (or free a place in the window). ``tokens`` includes what recall
    shows, so that room is what recall left. Recall shows only messages older than every turn
    in the window (invariant 7), so an important turn no newer than the newest recalled one
    (``newest_recalled``; -1: none) is left out for recall: there it is checked that the
    window holds nothing older than that recalled turn."""
    current = kept[-1]
    protected = set(kept[-world.scenario.keep_recent_turns :]) | {current}
    small = [i for i in kept if i not in protected and not turns[i].important]
    room = world.budget - tokens + sum(alone(i) - base for i in small)
    for index in range(current):
        if index in kept or alone(index) > world.budget:
            continue
        if turns[index].important and index <= newest_recalled:
            assert kept[0] > newest_recalled, "a recalled turn newer than the window's first"
            event("an important turn left out: recall shows newer messages")
        elif turns[index].important:
            newer = sum(1 for turn in turns[index + 1 : current + 1] if turn.important)
            if newer >= IMPORTANT_LOOKBACK:
                continue
            full = window is not None and len(kept) - len(small) >= window
            assert full or room < alone(index) - base, (
                f"important turn {index} left out though evicting small talk makes room"
            )
            event("an important turn left out: no room even without small talk")
        else:
            assert all(i > index for i in small), (
                f"small talk turn {index} left out while older small talk is kept"
            )
    if any(turns[i].important for i in kept if i not in protected) and any(
        i not in kept and not turns[i].important for i in range(kept[0], current)
    ):
        event("an important turn kept in place of small talk")


async def check_previews(world: World) -> None:
    """The /stats view of each conversation: exact count, within budget, same invariants."""
    for conversation in CONVERSATIONS:
        preview = await world.app.engine.preview(conversation)
        prompt = preview.prompt
        assert count_prompt_tokens(MODEL, prompt.messages) == prompt.tokens, "inexact count"
        assert prompt.tokens <= world.budget
        assert preview.stored_messages == world.stored[conversation.key]
        check_layout(world, conversation, prompt.messages, None)


def check_refusal(
    world: World,
    conversation: Conversation,
    turn: Turn,
    reply: Reply,
    heads: Sequence[str],
) -> None:
    """The message alone did not fit: clear words, no request, but the message is kept."""
    assert "too long" in reply.text and "saved" in reply.text, reply.text
    match = re.search(r"Your message is ([\d,]+) tokens", reply.text)
    assert match is not None, reply.text
    assert int(match.group(1).replace(",", "")) == tokens_of(turn.rendered)
    needed = [
        count_prompt_tokens(
            MODEL, [{"role": "system", "content": head}, {"role": "user", "content": turn.rendered}]
        )
        for head in heads
    ]
    assert min(needed) > world.budget, f"refused though {min(needed)} tokens would fit"
    event("message too large: refused")


# -- driving the real engine ----------------------------------------------------------------------


async def heads(world: World, conversation: Conversation, speaker: Speaker) -> list[str]:
    """The system message the conversation's next prompt would start with now. Read before and
    after a message: a background summary may land in between, so either may have been used."""
    engine, store = world.app.engine, world.app.store
    pins = await store.pins(channel_key=channel_of(conversation))
    summaries: list[Summary | None] = [None]
    settings = await engine.settings_for(conversation)
    if settings.uses_summary:
        summaries = [await store.latest_summary(conversation_key=conversation.key)]
    facts = await store.profile_facts(person=speaker.person)
    cap = profile_cap(settings, engine.budget(settings))
    profile, _ = fit_profile(engine.tokenizer.count, speaker.name, facts, cap)
    return [head_text(settings.system_prompt, pins, summary, profile) for summary in summaries]


async def say(world: World, action: Say) -> tuple[Turn, Reply | None, list[str]]:
    conversation = CONVERSATIONS[action.where]
    author_id, name = SPEAKERS[action.who]
    marker = world.marker(MESSAGE_TAGS[conversation.key])
    text = f"{action.prefix}{marker}{action.suffix}"
    turn = Turn(marker=marker, rendered=f"[{name or author_id}] {shown(text)}", author_id=author_id)
    speaker = Speaker(Person.of(conversation, author_id), name or author_id)
    before = await heads(world, conversation, speaker)
    reply = await world.app.engine.handle_message(
        IncomingMessage(
            conversation, author_id, name, text, addressed=action.addressed, sent_at=SENT_AT
        )
    )
    after = await heads(world, conversation, speaker)
    stored = await world.app.store.recent_messages(
        conversation_key=conversation.key, through_id=2**62, after_turn=0, limit=4
    )
    turn.important = next(
        m.important for m in stored if m.role is Role.USER and marker in m.content
    )
    world.turns[conversation.key].append(turn)
    return turn, reply, before + after


async def settle_says(
    world: World, played: Sequence[tuple[Say, tuple[Turn, Reply | None, list[str]]]]
) -> None:
    """Check what a batch of messages (one per conversation) did, then record the answers."""
    bodies = world.new_chat_bodies()
    by_marker: dict[str, dict[str, Any]] = {}
    for body in bodies:
        found = MESSAGE_MARKER.findall(body["messages"][-1]["content"])
        assert len(found) == 1, body["messages"][-1]
        assert found[0] not in by_marker, "two requests for one message"
        by_marker[found[0]] = body
    answered = sorted(
        turn.marker
        for _, (turn, reply, _) in played
        if reply is not None and reply.kind is ReplyKind.ANSWER
    )
    assert sorted(by_marker) == answered, f"requests for {sorted(by_marker)}, answers {answered}"
    for action, (turn, reply, possible_heads) in played:
        conversation = CONVERSATIONS[action.where]
        key = conversation.key
        current = len(world.turns[key]) - 1
        assert world.turns[key][current] is turn
        world.stored[key] += 1
        if not action.addressed:
            assert reply is None
            continue
        assert reply is not None
        if reply.kind is ReplyKind.ERROR:
            check_refusal(world, conversation, turn, reply, possible_heads)
            continue
        assert reply.kind is ReplyKind.ANSWER, reply
        check_sent_prompt(world, conversation, current, by_marker[turn.marker]["messages"])
        assert by_marker[turn.marker]["model"] == MODEL
        assert reply.text == f"echo: {turn.rendered}".strip()
        turn.reply = reply.text
        world.stored[key] += 1
        world.answers += 1
    for conversation in CONVERSATIONS:
        stored = await world.app.store.count_messages(conversation_key=conversation.key)
        assert stored == world.stored[conversation.key], "a message was lost or invented"
    # The server's reported usage over the engine's own count of every prompt it sent (replies
    # and the summaries answered so far, one model here, the newest WINDOW kept): a ratio of
    # exactly 1 for each.
    calibration = world.app.engine.calibrator.get(MODEL)
    summaries = sum(1 for body in world.llm.chat_requests if is_summary_request(body))
    if world.answers:
        assert calibration is not None
        assert min(world.answers, WINDOW) <= calibration.samples
        assert calibration.samples <= min(world.answers + summaries, WINDOW)
        assert calibration.lowest == calibration.highest == 1.0, "the engine's count differs"


async def pin(world: World, action: PinFact) -> None:
    conversation = CONVERSATIONS[action.where]
    author_id, name = SPEAKERS[action.who]
    marker = world.marker(PIN_TAGS[channel_of(conversation)])
    argument = f"{action.prefix}{marker}{action.suffix}"
    reply = await run_command(
        world.app.engine, CommandCall(conversation, "pin", argument, author_id, name)
    )
    if reply.kind is ReplyKind.INFO:
        match = re.match(r"Pinned #(\d+): ", reply.text)
        assert match is not None, reply.text
        line = f"#{match.group(1)} ({name}): {shown(argument.strip())}"
        world.pin_lines[channel_of(conversation)].append(line)
        event("pin accepted")
    else:
        assert reply.kind is ReplyKind.ERROR and reply.text.startswith("Not pinned"), reply
        world.refused_pins.add(marker)
        event("pin refused")


async def blank(world: World, action: Blank) -> None:
    conversation = CONVERSATIONS[action.where]
    author_id, name = SPEAKERS[action.who]
    reply = await world.app.engine.handle_message(
        IncomingMessage(
            conversation, author_id, name, action.text, action.addressed, sent_at=SENT_AT
        )
    )
    if action.addressed:
        assert reply is not None and reply.kind is ReplyKind.INFO, reply
        assert "empty" in reply.text
    else:
        assert reply is None
    assert world.new_chat_bodies() == [], "an empty message reached the model"
    stored = await world.app.store.count_messages(conversation_key=conversation.key)
    assert stored == world.stored[conversation.key], "an empty message was stored"


async def summarize(world: World, action: Summarize) -> None:
    conversation = CONVERSATIONS[action.where]
    reply = await run_command(
        world.app.engine, CommandCall(conversation, "summarize", "", "u1", "Ana")
    )
    if (await world.app.engine.settings_for(conversation)).uses_summary:
        # The summary model may write too long a summary (many FACT lines): refused, kept out.
        assert reply.kind is ReplyKind.INFO or "summary model failed" in reply.text, reply
    else:
        assert reply.kind is ReplyKind.ERROR and "keeps no summary" in reply.text, reply
    assert world.new_chat_bodies() == [], "/summarize sent a chat request"


async def remember(world: World, action: Remember) -> None:
    conversation = CONVERSATIONS[action.where]
    author_id, name = SPEAKERS[action.who]
    marker = world.marker(PROFILE_TAGS[conversation.workspace])
    argument = f"{action.prefix}{marker}{action.suffix}"
    reply = await run_command(
        world.app.engine, CommandCall(conversation, "remember", argument, author_id, name)
    )
    if reply.kind is ReplyKind.INFO:
        match = re.match(r"Remembered #(\d+): ", reply.text)
        assert match is not None, reply.text
        held = world.profiles.setdefault((conversation.workspace, author_id), [])
        held.append((int(match.group(1)), marker))
        event("fact remembered")
    else:
        assert reply.kind is ReplyKind.ERROR and reply.text.startswith("Not remembered"), reply
        event("fact refused")


async def forget(world: World, action: Forget) -> None:
    conversation = CONVERSATIONS[action.where]
    author_id, name = SPEAKERS[action.who]
    held = world.profiles.setdefault((conversation.workspace, author_id), [])
    argument = "all" if action.everything or not held else str(held[0][0])
    reply = await run_command(
        world.app.engine, CommandCall(conversation, "forget", argument, author_id, name)
    )
    assert reply.kind is ReplyKind.INFO, reply
    if argument == "all":
        facts = f"{len(held)} fact" if len(held) == 1 else f"{len(held)} facts"
        expected = f"Forgot {facts} kept" if held else "Nothing was kept about you"
        assert expected in reply.text, reply.text
        held.clear()
    else:
        held.pop(0)


async def play(world: World) -> None:
    for action in world.scenario.actions:
        if isinstance(action, Say):
            await settle_says(world, [(action, await say(world, action))])
        elif isinstance(action, Burst):
            results = await asyncio.gather(*(say(world, each) for each in action.says))
            await settle_says(world, list(zip(action.says, results, strict=True)))
            event("concurrent burst")
        elif isinstance(action, PinFact):
            await pin(world, action)
        elif isinstance(action, Blank):
            await blank(world, action)
        elif isinstance(action, Chatter):
            for _ in range(action.count):
                say_action = Say(action.where, action.who, "", action.text, addressed=False)
                await settle_says(world, [(say_action, await say(world, say_action))])
        elif isinstance(action, Summarize):
            await summarize(world, action)
        elif isinstance(action, Remember):
            await remember(world, action)
        elif isinstance(action, Forget):
            await forget(world, action)
        else:
            await world.app.engine.drain()
        await check_previews(world)
    await world.app.engine.drain()
    await check_previews(world)
    for conversation in CONVERSATIONS:
        summary = await world.app.store.latest_summary(conversation_key=conversation.key)
        if summary is not None:
            event(f"{world.scenario.strategy}: a summary was made")


def run(scenario: Scenario) -> None:
    note(repr(scenario))

    async def scenario_run() -> None:
        async with FakeLLM() as llm:
            llm.responder = respond
            with tempfile.TemporaryDirectory() as folder:
                data = config_dict(
                    llm.url,
                    Path(folder) / "bot.sqlite3",
                    memory={
                        "strategy": scenario.strategy,
                        "max_context_tokens": scenario.budget,
                        "window_turns": scenario.window_turns,
                        "keep_recent_turns": scenario.keep_recent_turns,
                        "summary_retry_seconds": 0,
                        "recall_tokens": scenario.recall_tokens,
                    },
                )
                async with open_app(parse_config(data, {})) as app:
                    world = World(app=app, llm=llm, scenario=scenario)
                    for conversation in CONVERSATIONS:
                        world.turns[conversation.key] = []
                        world.stored[conversation.key] = 0
                        world.pin_lines.setdefault(channel_of(conversation), [])
                    await play(world)

    asyncio.run(scenario_run())


PROPERTY_SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@PROPERTY_SETTINGS
@given(scenarios(["full", "window"]))
def test_full_and_window_prompts_keep_every_invariant(scenario: Scenario) -> None:
    """Invariants 1-6, and eviction is greedy: only turns that cannot fit are left out."""
    run(scenario)


long_histories = st.builds(
    Scenario,
    strategy=st.sampled_from(("full", "window")),
    budget=st.integers(min_value=700, max_value=2000),
    window_turns=st.just(4),
    keep_recent_turns=st.just(2),
    actions=st.lists(
        st.builds(
            Say,
            where=st.just(0),
            who=whos,
            prefix=st.just(""),
            suffix=st.sampled_from(
                ("", "ok", "好的", "🎉", "<|endoftext|>", " \n", " remember 42")
            ),
            addressed=st.sampled_from((True, True, False)),
        ),
        min_size=60,
        max_size=110,
    ).map(tuple),
    recall_tokens=st.sampled_from((0, 120)),
)


@settings(PROPERTY_SETTINGS, max_examples=10)
@given(long_histories)
def test_long_histories_read_in_batches_keep_every_invariant(scenario: Scenario) -> None:
    """Invariants 1-6 and greedy eviction over 100+ stored messages of tiny turns, which the
    assembler reads in growing batches (64, 128, ...): turns that straddle a batch are kept
    or left out whole."""
    run(scenario)


@PROPERTY_SETTINGS
@given(scenarios(["summary", "hybrid"]))
def test_summary_and_hybrid_prompts_keep_every_invariant(scenario: Scenario) -> None:
    """Invariants 1-6 with background summaries landing between (and during) messages."""
    run(scenario)


# -- regressions: bugs these properties found ---------------------------------------------------

SLOW = "⟦SLOW⟧"


def slow_when_asked(body: dict[str, Any]) -> Item:
    """Like ``respond``, but a chat request whose last message says SLOW takes half a second."""
    text = respond(body)
    if not is_summary_request(body) and SLOW in body["messages"][-1]["content"]:
        return ScriptedReply(text=str(text), delay=0.5)
    return text


async def wait_until(condition: Callable[[], Awaitable[bool]]) -> None:
    for _ in range(1000):
        if await condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("timed out waiting")


@settings(
    max_examples=5,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    keep=st.integers(min_value=1, max_value=3),
    question=short_texts,
)
def test_the_message_being_answered_is_last_even_when_a_summary_lands_meanwhile(
    keep: int, question: str
) -> None:
    """Invariant 5 with two questions in one channel in flight and ``/summarize`` between."""

    async def scenario_run() -> None:
        async with FakeLLM() as llm:
            llm.responder = slow_when_asked
            with tempfile.TemporaryDirectory() as folder:
                memory = {"strategy": "summary", "keep_recent_turns": keep}
                data = config_dict(llm.url, Path(folder) / "bot.sqlite3", memory=memory)
                async with open_app(parse_config(data, {})) as app:
                    engine, store = app.engine, app.store

                    def said(who: int, text: str, addressed: bool = True) -> IncomingMessage:
                        author_id, name = SPEAKERS[who]
                        return IncomingMessage(
                            ALPHA, author_id, name, text, addressed, sent_at=SENT_AT
                        )

                    async def stored(count: int) -> bool:
                        return await store.count_messages(conversation_key=ALPHA.key) >= count

                    async def asked(count: int) -> bool:
                        return len(llm.chat_requests) >= count

                    for i in range(2):
                        await engine.handle_message(said(0, f"warm-up {i}"))
                    first = asyncio.create_task(engine.handle_message(said(0, f"{SLOW} first")))
                    await wait_until(lambda: asked(3))  # its slow request is in flight
                    text = f"⟦K⟧{question}"
                    second = asyncio.create_task(engine.handle_message(said(1, text)))
                    await wait_until(lambda: stored(6))  # stored, waiting for the reply lock
                    for i in range(keep):  # other people keep talking
                        await engine.handle_message(said(2, f"aside {i}", addressed=False))
                    call = CommandCall(ALPHA, "summarize", "", "u1", "Ana")
                    assert (await run_command(engine, call)).kind is ReplyKind.INFO
                    await first
                    reply = await second
                    assert reply is not None and reply.kind is ReplyKind.ANSWER
                    sent = [b for b in llm.chat_requests if not is_summary_request(b)][-1]
                    name = SPEAKERS[1][1]
                    assert sent["messages"][-1] == {
                        "role": "user",
                        "content": f"[{name}] {shown(text)}",
                    }

    asyncio.run(scenario_run())


@settings(
    max_examples=10,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(channel="alpha:t1")
@given(channel=st.text(alphabet="alph:t1", min_size=1, max_size=8))
def test_a_console_channel_never_shares_history_with_a_thread(channel: str) -> None:
    """Invariant 6 for any channel name: what is said in it never reaches thread t1 of alpha
    (a name with ':', which could collide with a thread's key, is refused)."""
    assume(channel != ALPHA.channel)
    try:
        elsewhere = Conversation.console(channel)
    except ValueError:
        assert ":" in channel
        return

    async def scenario_run() -> None:
        async with FakeLLM() as llm:
            llm.responder = respond
            with tempfile.TemporaryDirectory() as folder:
                data = config_dict(llm.url, Path(folder) / "bot.sqlite3")
                async with open_app(parse_config(data, {})) as app:
                    secret = IncomingMessage(elsewhere, "u1", "Ana", "⟦X⟧", addressed=False)
                    await app.engine.handle_message(secret)
                    question = IncomingMessage(THREAD, "u2", "Bo", "⟦T⟧", addressed=True)
                    await app.engine.handle_message(question)
                    sent = llm.chat_requests[-1]["messages"]
                    assert [m["content"] for m in sent[1:]] == ["[Bo] ⟦T⟧"]

    asyncio.run(scenario_run())
