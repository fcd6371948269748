"""What `bot` prints for a config file it cannot use: one line per problem, naming the dotted
key (or the file, line and column for YAML), and exit code 78 (EX_CONFIG)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_cli import bot

EX_CONFIG = 78
GOOD_LLM = "llm:\n  chat_model: gpt-4o-mini\n  summary_model: gpt-4o-mini\n"


def run_stats(tmp_path: Path, text: str):
    """``bot stats`` with ``text`` as the config file, in ``tmp_path`` (its database too)."""
    (tmp_path / "bad.yaml").write_text(text, encoding="utf-8")
    return bot("stats", "--config", "bad.yaml", cwd=tmp_path)


@pytest.mark.parametrize(
    ("text", "stderr"),
    [
        pytest.param(
            "system_prompt: hi\nlm:\n  chat_model: gpt-4o-mini\n  summary_model: gpt-4o-mini\n",
            ["bot: lm: unknown key (did you mean llm?)"],
            id="top-level typo",
        ),
        pytest.param(
            f"system_prompt: hi\n{GOOD_LLM}memory:\n  stratgy: window\n",
            ["bot: memory.stratgy: unknown key (did you mean memory.strategy?)"],
            id="nested typo",
        ),
        pytest.param(
            f"system_prompt: hi\n{GOOD_LLM}slack:\n  answer_channels: C0123\n",
            ["bot: slack.answer_channels: Input should be a list, such as [a, b], not 'C0123'"],
            id="a list",
        ),
        pytest.param(
            f"system_prompt: hi\n{GOOD_LLM}memory:\n  max_context_tokens: lots\n"
            "discord:\n  answer_channels: [general]\nzebra: 1\n",
            [
                "bot: memory.max_context_tokens: Input should be a whole number, not 'lots'",
                "bot: discord.answer_channels[0]: Input should be a whole number, not 'general'",
                "bot: zebra: unknown key",
            ],
            id="every problem, in file order",
        ),
        pytest.param(
            "system_prompt: hi\nllm: 5\n",
            [
                "bot: llm: Input should be a section of keys (key: value lines, indented below it)"
                ", not 5"
            ],
            id="a section that is a number",
        ),
        pytest.param(
            "system_prompt: hi\nllm: [unclosed\n",
            [
                "bot: bad.yaml: not valid YAML at line 2, column 6: while parsing a flow sequence "
                "started here, expected ',' or ']', but got '<stream end>': 'llm: [unclosed'"
            ],
            id="unclosed bracket",
        ),
        pytest.param(
            "system_prompt: hi\nllm:\n  chat_model gpt-4o-mini\n  summary_model: gpt-4o-mini\n",
            [
                "bot: bad.yaml: not valid YAML at line 4, column 16: mapping values are not "
                "allowed here: '  summary_model: gpt-4o-mini'"
            ],
            id="missing colon",
        ),
        pytest.param(
            "system_prompt: hi\n\tllm: {}\n",
            [
                "bot: bad.yaml: not valid YAML at line 2, column 1: found character '\\t' that "
                "cannot start any token: '\\tllm: {}'"
            ],
            id="a tab",
        ),
    ],
)
def test_a_config_problem_is_one_line_naming_where_it_is(
    tmp_path: Path, text: str, stderr: list[str]
) -> None:
    result = run_stats(tmp_path, text)
    assert result.stderr.splitlines() == stderr
    assert result.returncode == EX_CONFIG
    assert result.stdout == ""


def test_log_levels_are_read_in_any_case(tmp_path: Path) -> None:
    text = f"system_prompt: hi\n{GOOD_LLM}logging:\n  level: debug\n"
    result = run_stats(tmp_path, text)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "No conversations yet.\n"
    assert " DEBUG asyncio: Using selector" in result.stderr
    wrong = run_stats(tmp_path, text.replace("debug", "verbose"))
    assert (
        wrong.stderr
        == "bot: logging.level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'\n"
    )
    assert wrong.returncode == EX_CONFIG


def test_every_command_exits_78_on_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("system_prompt: hi\nlm: {}\n", encoding="utf-8")
    for command in (["run"], ["doctor"], ["chat"], ["backup", "x.sqlite3"], ["health"]):
        result = bot(*command, "--config", "bad.yaml", cwd=tmp_path)
        assert result.returncode == EX_CONFIG, command
        assert result.stderr == "bot: lm: unknown key (did you mean llm?)\n", command
    missing = bot("stats", "--config", "nope.yaml", cwd=tmp_path)
    assert missing.stderr == "bot: config file not found: nope.yaml\n"
    assert missing.returncode == EX_CONFIG
