"""``bot settings`` from the shell: it shows a conversation's settings, changes them as an
admin would (recorded under the operator's name), refuses a bad value with the key's one line,
and what it sets is what the next ``bot chat`` turn uses."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.test_cli import bot, write_config
from tests.support.fake_llm import FakeLLM


def test_settings_from_the_shell_reach_the_next_turn(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    assert bot("chat", "--config", config, "--channel", "team", stdin="hi\n").returncode == 0
    shown = bot("settings", "--config", config, "--channel", "team")
    assert shown.returncode == 0, shown.stderr
    assert "• strategy: hybrid (config: memory.strategy)" in shown.stdout
    changed = bot(
        "settings", "--config", config, "--channel", "team", "persona", "You", "are", "terse."
    )
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.startswith("persona is now You are terse. in console:local:team.")
    bad = bot("settings", "--config", config, "--channel", "team", "strategy", "smart")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == (
        "bot settings: strategy: 'smart' is not one of full, window, summary, hybrid\n"
    )
    history = bot("settings", "--config", config, "--channel", "team", "history").stdout
    assert "(shell): persona" in history and "→ You are terse." in history
    before = len(llm_thread.chat_requests)
    assert bot("chat", "--config", config, "--channel", "team", stdin="and?\n").returncode == 0
    assert bot("chat", "--config", config, "--channel", "other", stdin="hi\n").returncode == 0
    systems = [body["messages"][0]["content"] for body in llm_thread.chat_requests[before:]]
    assert systems[0].startswith("You are terse.")
    assert not systems[1].startswith("You are terse.")


def test_a_channel_not_heard_from_yet_can_be_set_ahead(tmp_path: Path, llm_thread: FakeLLM) -> None:
    config = str(write_config(tmp_path, llm_thread.url))
    ahead = bot("settings", "--config", config, "--channel", "slack:T1:C9", "answer", "all")
    assert ahead.returncode == 0
    assert ahead.stderr == (
        "bot settings: note: nothing is stored in slack:T1:C9 yet; its settings apply once the "
        "bot hears from it\n"
    )
    assert ahead.stdout.startswith("answer is now all in slack:T1:C9.")
    refused = bot("settings", "--config", config, "--channel", "a:b")
    assert refused.returncode == 2
    assert refused.stderr.startswith("bot settings: --channel: not a conversation key")
