"""The config's error messages: one line per problem, naming the dotted key at fault, in
plain words rather than pydantic's, with the closest known key for a misspelt one."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic_core import ErrorDetails

from bot.config.model import Config


def yaml_where(exc: yaml.YAMLError, text: str) -> str:
    """`` at line 3, column 7: <what>: '<the line>'``, from the parser's marks; the line is
    quoted as Python would, so a tab or a stray quote shows."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        return ""
    mark = exc.problem_mark
    what = exc.problem or "unreadable"
    lines = text.splitlines()
    # Past the end (an unclosed bracket or quote), the place it was opened says more.
    if (mark.line >= len(lines) or not lines[mark.line].strip()) and exc.context_mark:
        what = f"{exc.context} started here, {what}"
        mark = exc.context_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}: {what}"
    if mark.line < len(lines) and lines[mark.line].strip():
        where += f": {_short(lines[mark.line])}"
    return where


def _short(value: object, limit: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= limit else shown[: limit - 4] + "...'"


Loc = tuple[int | str, ...]


def describe_errors(errors: Iterable[ErrorDetails], raw: Mapping[str, Any]) -> list[str]:
    """One line per problem. A misspelt key is named with the closest known one; what its
    absence then breaks (``lm:`` leaves ``llm.chat_model`` unset) is the same problem."""
    errors = list(errors)
    suggested: dict[Loc, Loc] = {}
    for err in errors:
        if err["type"] == "extra_forbidden":
            near = _closest_key(err["loc"])
            if near is not None:
                suggested[err["loc"]] = near
    covered = [near for near in suggested.values() if not _present(raw, near)]
    order = {str(key): index for index, key in enumerate(raw)}
    errors.sort(key=lambda err: order.get(str(err["loc"][0]), len(order)) if err["loc"] else -1)
    lines: list[str] = []
    for err in errors:
        loc = err["loc"]
        if loc not in suggested and any(loc[: len(c)] == c for c in covered):
            continue
        line = f"{_dotted(loc) or 'config'}: {_plain(err)}"
        if loc in suggested:
            line += f" (did you mean {_dotted(suggested[loc])}?)"
        if line not in lines:
            lines.append(line)
    return lines


def _dotted(loc: Loc) -> str:
    """``("discord", "answer_channels", 0)`` → ``discord.answer_channels[0]``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text


def _closest_key(loc: Loc) -> Loc | None:
    """The known key nearest to an unknown one at the same depth, if one is close."""
    model: type[BaseModel] = Config
    for part in loc[:-1]:
        field = model.model_fields.get(str(part))
        if field is None or not (
            isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)
        ):
            return None
        model = field.annotation
    known = [name for name, field in model.model_fields.items() if not field.exclude]
    match = difflib.get_close_matches(str(loc[-1]).lower(), known, n=1, cutoff=0.6)
    return (*loc[:-1], match[0]) if match else None


def _present(raw: Mapping[str, Any], loc: Loc) -> bool:
    node: Any = raw
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


_PLAIN_WORDS = {
    "tuple_type": "Input should be a list, such as [a, b]",
    "list_type": "Input should be a list, such as [a, b]",
    "int_parsing": "Input should be a whole number",
    "int_type": "Input should be a whole number",
    "int_from_float": "Input should be a whole number",
    "float_parsing": "Input should be a number",
    "float_type": "Input should be a number",
    "bool_parsing": "Input should be true or false",
    "bool_type": "Input should be true or false",
    "string_type": "Input should be text",
    "model_type": "Input should be a section of keys (key: value lines, indented below it)",
    "model_attributes_type": "Input should be a section of keys (key: value lines, indented)",
}
"""pydantic's messages that read badly in a YAML file ("a valid tuple", "a valid dictionary
or instance of LLMConfig"), in plain words."""


def _plain(err: ErrorDetails) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "string_too_short" and (err.get("ctx") or {}).get("min_length") == 1:
        return "Input should not be empty"
    if kind in _PLAIN_WORDS:
        given = err.get("input")
        if isinstance(given, dict | list) or given is None:
            return _PLAIN_WORDS[kind] + ("" if given is not None else ", not empty")
        return f"{_PLAIN_WORDS[kind]}, not {_short(given)}"
    return err["msg"].removeprefix("Value error, ")
