"""A mistyped ``--channel`` is refused with the closest known conversations, never acted on:
``stats`` and ``export`` do not answer for it, ``reset`` does not create it."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import bot, write_config
from tests.support.fake_llm import FakeLLM


def test_a_mistyped_channel_is_refused_with_the_closest_known_ones(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    for channel in ("team", "general", "random", "teamwork"):
        said = bot("chat", "--config", config, "--channel", channel, stdin="hello\n")
        assert said.returncode == 0, said.stderr
    listing = bot("stats", "--config", config).stdout
    out = tmp_path / "out.jsonl"
    for command in (
        ["stats", "--channel", "teem"],
        ["export", "--channel", "teem", "-o", str(out)],
        ["reset", "--channel", "teem"],
        ["reset", "--channel", "console:local:teem", "--pins"],
    ):
        refused = bot(*command, "--config", config)
        assert refused.returncode == 2, command
        quoted = command[2]
        assert refused.stderr == (
            f"bot {command[0]}: --channel: no conversation '{quoted}'; the closest of the 4"
            " known: team, teamwork, general\n"
        ), command
        assert refused.stdout == ""
    assert not out.exists()
    assert bot("stats", "--config", config).stdout == listing  # nothing made, nothing reset
    slack = bot("stats", "--config", config, "--channel", "slack:T1:C1")
    assert slack.returncode == 2
    assert "no conversation 'slack:T1:C1'; the closest of the 4 known:" in slack.stderr


def test_a_known_channel_still_works_and_an_empty_database_says_so(
    tmp_path: Path, llm_thread: FakeLLM
) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    empty = bot("export", "--config", config, "--channel", "team")
    assert empty.returncode == 2
    assert empty.stderr == (
        "bot export: --channel: no conversation 'team': the database holds none yet\n"
    )
    assert bot("reset", "--config", config, "--channel", "team").returncode == 2
    assert bot("stats", "--config", config).stdout == "No conversations yet.\n"
    assert bot("chat", "--config", config, "--channel", "team", stdin="hi\n").returncode == 0
    reset = bot("reset", "--config", config, "--channel", "team")
    assert (
        reset.returncode == 0 and reset.stdout == "reset console:local:team: 2 messages deleted\n"
    )
    again = bot("reset", "--config", config, "--channel", "team")
    assert again.stdout == "reset console:local:team: 0 messages deleted\n"
