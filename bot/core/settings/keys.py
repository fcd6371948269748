"""What ``/settings`` can set in a channel, how each value is read, and what it changes.

Each :class:`Key` checks a typed value against the config's limits (allowed models, the
budget's ceiling) and gives it back in one canonical text, which the store keeps; applying
the stored texts to the config's defaults gives a conversation's :class:`Settings`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from bot.config import CAP_FORMS, Cap, Config, Strategy, parse_cap
from bot.core.ports.llm import clean_text
from bot.core.settings.values import Answering, Recording, Settings

PERSONA_CHARS = 4000
"""The longest persona (system prompt) a channel may set."""
MIN_BUDGET = 256
MAX_RECALL_SHARE = 0.5
DEFAULT_RECALL_SHARE = 0.2
"""The share of the budget recall takes when turned on where the config has it off."""


class BadValue(ValueError):
    """A value ``/settings`` refuses; its text is one line naming the key and what is allowed."""


Parse = Callable[[str, Config], str]
Show = Callable[[Settings], str]


@dataclass(frozen=True)
class Key:
    name: str
    """As typed: ``/settings NAME VALUE``."""
    help: str
    allowed: str
    """What values it takes, as the refusal of a bad one says."""
    config: str
    """The config key its default comes from."""
    parse: Parse
    show: Show


_ON = {"on", "true", "yes", "1"}
_OFF = {"off", "false", "no", "0"}


def _switch(name: str) -> Parse:
    def parse(value: str, config: Config) -> str:
        word = value.strip().lower()
        if word in _ON:
            return "on"
        if word in _OFF:
            return "off"
        raise BadValue(f"{name}: {value.strip()!r} is not on or off")

    return parse


def _choice(name: str, choices: tuple[str, ...]) -> Parse:
    def parse(value: str, config: Config) -> str:
        word = value.strip().lower()
        if word not in choices:
            raise BadValue(f"{name}: {value.strip()!r} is not one of {', '.join(choices)}")
        return word

    return parse


def _persona(value: str, config: Config) -> str:
    text = clean_text(value).strip()
    if not text:
        raise BadValue("persona: empty; give the text the model is told first in this channel")
    if len(text) > PERSONA_CHARS:
        raise BadValue(f"persona: {len(text):,} characters; at most {PERSONA_CHARS:,}")
    return text


def chat_models(config: Config) -> tuple[str, ...]:
    """The chat models a channel may choose: the config's, then llm.allowed_models."""
    return tuple(dict.fromkeys((config.llm.chat_model, *config.llm.allowed_models)))


def summary_models(config: Config) -> tuple[str, ...]:
    llm = config.llm
    return tuple(dict.fromkeys((llm.summary_model, *llm.allowed_summary_models)))


def _model(name: str, models: Callable[[Config], tuple[str, ...]], config_key: str) -> Parse:
    def parse(value: str, config: Config) -> str:
        allowed = models(config)
        chosen = value.strip()
        if chosen not in allowed:
            raise BadValue(
                f"{name}: {chosen!r} is not allowed here; allowed: {', '.join(allowed)} "
                f"(an operator adds models to {config_key})"
            )
        return chosen

    return parse


_NUMBER = re.compile(r"^(\d[\d,_]*)(k?)$")


def _budget(value: str, config: Config) -> str:
    ceiling = config.memory.largest_budget
    match = _NUMBER.match(value.strip().lower())
    allowed = f"a number of tokens from {MIN_BUDGET} to {ceiling:,}"
    if match is None:
        raise BadValue(f"budget: {value.strip()!r} is not {allowed}")
    tokens = int(match[1].replace(",", "").replace("_", "")) * (1000 if match[2] else 1)
    if not MIN_BUDGET <= tokens <= ceiling:
        raise BadValue(f"budget: {tokens:,} is not {allowed} (memory.budget_ceiling)")
    return str(tokens)


def _share(value: str, config: Config) -> str:
    text = value.strip().rstrip("%")
    allowed = f"a share of the budget from 0 to {MAX_RECALL_SHARE:.0%}, e.g. 20%"
    try:
        share = float(text) / (100 if value.strip().endswith("%") or float(text) > 1 else 1)
    except ValueError:
        raise BadValue(f"recall-share: {value.strip()!r} is not {allowed}") from None
    if not 0 <= share <= MAX_RECALL_SHARE:
        raise BadValue(f"recall-share: {value.strip()} is not {allowed}")
    return f"{share:.2f}".rstrip("0").rstrip(".") if share else "0"


_GROUP = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def _group(value: str, config: Config) -> str:
    name = value.strip().lower().lstrip("#")
    if not _GROUP.match(name):
        raise BadValue(
            f"memory-group: {value.strip()!r} is not a name of letters, digits, - and _ "
            "(at most 40)"
        )
    return name


SPEND_KEYS: Mapping[str, str] = {
    "spend-day": "channel_day",
    "spend-month": "channel_month",
    "person-spend-day": "person_day",
    "person-spend-month": "person_month",
}
"""The keys of the caps on spend, and the field of :class:`~.values.SpendCaps` each sets."""


def _cap(name: str) -> Parse:
    def parse(value: str, config: Config) -> str:
        try:
            return str(parse_cap(value) or "off")
        except ValueError:
            raise BadValue(f"{name}: {value.strip()!r} is not {CAP_FORMS}") from None

    return parse


def _shown_cap(field: str) -> Show:
    def show(settings: Settings) -> str:
        cap: Cap | None = getattr(settings.spend, field)
        return str(cap or "off")

    return show


def _spend_key(name: str) -> Key:
    field = SPEND_KEYS[name]
    scope, period = field.split("_")
    whom = (
        "for this channel and its threads"
        if scope == "channel"
        else "for each person asking here (their spend in the whole workspace)"
    )
    return Key(
        name,
        f"the most the models may spend a UTC {period} {whom}",
        CAP_FORMS,
        f"budgets.{scope}.{period}",
        _cap(name),
        _shown_cap(field),
    )


def _on(settings: bool) -> str:
    return "on" if settings else "off"


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 120 else line[:119] + "…"


KEYS: tuple[Key, ...] = (
    Key(
        "persona",
        "the system prompt: who the bot is and how it answers here",
        "text (several lines: /settings persona opens a form)",
        "system_prompt",
        _persona,
        lambda s: _short(s.system_prompt),
    ),
    Key(
        "model",
        "the chat model that answers",
        "a model of llm.allowed_models",
        "llm.chat_model",
        _model("model", chat_models, "llm.allowed_models"),
        lambda s: s.chat_model,
    ),
    Key(
        "summary-model",
        "the model that writes the summary",
        "a model of llm.allowed_summary_models",
        "llm.summary_model",
        _model("summary-model", summary_models, "llm.allowed_summary_models"),
        lambda s: s.summary_model,
    ),
    Key(
        "strategy",
        "what of the conversation a prompt holds",
        "full, window, summary or hybrid",
        "memory.strategy",
        _choice("strategy", tuple(s.value for s in Strategy)),
        lambda s: s.strategy.value,
    ),
    Key(
        "budget",
        "the most tokens a prompt may take",
        "a number of tokens up to memory.budget_ceiling",
        "memory.max_context_tokens",
        _budget,
        lambda s: f"{s.max_context_tokens:,} tokens",
    ),
    Key(
        "recall",
        "search earlier messages for each question",
        "on or off",
        "memory.recall_tokens",
        _switch("recall"),
        lambda s: _on(s.recall.enabled),
    ),
    Key(
        "recall-share",
        "the share of the budget recall may take",
        "0 to 50%",
        "memory.recall_tokens",
        _share,
        lambda s: f"{s.recall.tokens:,} tokens",
    ),
    Key(
        "summaries",
        "fold older turns into a rolling summary",
        "on or off",
        "memory.strategy",
        _switch("summaries"),
        lambda s: _on(s.summaries),
    ),
    Key(
        "answer",
        "which messages the bot answers",
        "mentions, all or none (listen only)",
        "answer_channels",
        _choice("answer", tuple(a.value for a in Answering)),
        lambda s: s.answer.value,
    ),
    Key(
        "record",
        "which messages the bot remembers",
        "all or addressed",
        "record",
        _choice("record", tuple(r.value for r in Recording)),
        lambda s: s.record.value,
    ),
    Key(
        "stream",
        "show answers as the model writes them",
        "on or off",
        "llm.stream",
        _switch("stream"),
        lambda s: _on(s.stream),
    ),
    Key(
        "memory-group",
        "a group of channels whose recall searches each other's messages",
        "a name, e.g. support",
        "none",
        _group,
        lambda s: s.memory_group or "none",
    ),
    Key(
        "share-private",
        "a private channel or DM lets its memory group find its messages",
        "on or off",
        "off",
        _switch("share-private"),
        lambda s: _on(s.share_private),
    ),
    *(_spend_key(name) for name in SPEND_KEYS),
)
BY_NAME: Mapping[str, Key] = {key.name: key for key in KEYS}


def apply(settings: Settings, values: Mapping[str, str], config: Config) -> Settings:
    """``settings`` with the stored ``values`` (canonical texts, by key name) in force."""
    if not values:
        return settings
    changes: dict[str, object] = {}
    if "persona" in values:
        changes["system_prompt"] = values["persona"]
    if "model" in values:
        changes["chat_model"] = values["model"]
    if "summary-model" in values:
        changes["summary_model"] = values["summary-model"]
    if "strategy" in values:
        changes["strategy"] = Strategy(values["strategy"])
    if "budget" in values:
        changes["max_context_tokens"] = int(values["budget"])
    for key, field in (("summaries", "summaries"), ("stream", "stream")):
        if key in values:
            changes[field] = values[key] == "on"
    if "share-private" in values:
        changes["share_private"] = values["share-private"] == "on"
    if "answer" in values:
        changes["answer"] = Answering(values["answer"])
    if "record" in values:
        changes["record"] = Recording(values["record"])
    if "memory-group" in values:
        changes["memory_group"] = values["memory-group"]
    caps = {field: parse_cap(values[key]) for key, field in SPEND_KEYS.items() if key in values}
    if caps:
        changes["spend"] = replace(settings.spend, **caps)
    result = replace(settings, **changes)  # type: ignore[arg-type]
    return replace(result, recall=replace(result.recall, tokens=_recall_tokens(values, config)))


def _recall_tokens(values: Mapping[str, str], config: Config) -> int:
    """Recall's tokens: the config's, scaled to the channel's budget and share."""
    memory = config.memory
    budget = int(values.get("budget", memory.max_context_tokens))
    ratio = memory.recall_tokens / memory.max_context_tokens
    if values.get("recall") == "off":
        return 0
    if "recall-share" in values:
        share = float(values["recall-share"])
    elif values.get("recall") == "on" and ratio == 0:
        share = DEFAULT_RECALL_SHARE
    elif "budget" not in values:
        return memory.recall_tokens
    else:
        share = ratio
    return min(round(budget * share), budget // 2)
