"""Costs add up from the shell: ``bot chat`` asks with known usage, then ``bot usage --csv``
gives the exact money per day, conversation, model and purpose, and ``bot usage`` the same
as a table; ``/usage`` in the chat agrees."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.e2e.test_cli import bot, write_config
from tests.support.fake_llm import FakeLLM, Reply

PRICES = {"gpt-4o-mini": {"input": 2, "cached_input": 1, "output": 4}}


def test_bot_usage_reports_the_exact_money_of_a_scripted_chat(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = str(write_config(tmp_path, llm_thread.url, llm={"prices": PRICES}))
    # 1,000 × 2 + 100 × 4 = $0.0024; (3,000 - 2,000) × 2 + 2,000 × 1 + 300 × 4 = $0.0052
    llm_thread.script(
        Reply("first answer", prompt_tokens=1000, completion_tokens=100),
        Reply("second answer", prompt_tokens=3000, cached_tokens=2000, completion_tokens=300),
        Reply("elsewhere", prompt_tokens=500, completion_tokens=50),  # $0.0012
    )
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    chat = bot(
        "chat",
        "--config",
        config,
        "--channel",
        "planning",
        "--user",
        "ana",
        stdin="what is due?\nand after that?\n/usage\n",
    )
    assert chat.returncode == 0, chat.stderr
    assert (
        "gpt-4o-mini: 2 requests, 4,000 prompt (2,000 cached) + 400 completion tokens: $0.0076"
        in (chat.stdout)
    )
    other = bot("chat", "--config", config, "--channel", "random", stdin="hello\n")
    assert other.returncode == 0, other.stderr
    assert datetime.now(UTC).strftime("%Y-%m-%d") == day, "the test ran over midnight UTC"

    csv = bot("usage", "--config", config, "--csv")
    assert csv.returncode == 0, csv.stderr
    assert csv.stdout == (
        "day,conversation,model,purpose,requests,prompt_tokens,cached_tokens,"
        "completion_tokens,cost\n"
        f"{day},console:local:planning,gpt-4o-mini,chat,2,4000,2000,400,0.007600\n"
        f"{day},console:local:random,gpt-4o-mini,chat,1,500,0,50,0.001200\n"
    )
    one = bot("usage", "--config", config, "--csv", "--channel", "random", "--since", "1d")
    assert one.stdout.splitlines()[1:] == [
        f"{day},console:local:random,gpt-4o-mini,chat,1,500,0,50,0.001200"
    ]
    later = bot("usage", "--config", config, "--csv", "--since", "2999-01-01")
    assert later.stdout.splitlines()[1:] == []

    table = bot("usage", "--config", config)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == "Spend in total, all channels:"
    assert lines[2].split() == ["gpt-4o-mini", "3", "4,500", "2,000", "450", "$0.0088"]
    assert lines[3].split() == ["total", "3", "4,500", "2,000", "450", "$0.0088"]
    assert [line.split() for line in lines[6:]] == [
        ["console:local:planning", "2", "$0.0076"],
        ["console:local:random", "1", "$0.0012"],
    ]


def test_a_bad_since_is_refused_in_one_line(tmp_path: Path) -> None:
    config = str(write_config(tmp_path, "http://127.0.0.1:9/v1"))
    result = bot("usage", "--config", config, "--since", "last week")
    assert result.returncode == 2
    assert "argument --since: 'last week' is neither a date (2026-12-01) nor a span" in (
        result.stderr
    )
