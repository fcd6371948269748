"""The example alerting rules in docs/operations.md are valid YAML and use only metrics the
bot exports, with the labels they group by."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from bot.telemetry.metrics import PrometheusObserver

DOC = Path(__file__).parents[2] / "docs" / "operations.md"


def example_rules() -> dict[str, object]:
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.DOTALL)
    rules = [yaml.safe_load(block) for block in blocks if block.startswith("groups:")]
    assert len(rules) == 1, "one example of alerting rules"
    found: dict[str, object] = rules[0]
    return found


def test_the_example_alerts_use_exported_metrics_and_labels() -> None:
    metrics = PrometheusObserver()
    metrics.model_spend(
        workspace="slack:T1",
        model="gpt-4o-mini",
        prompt_tokens=10,
        cached_tokens=0,
        completion_tokens=1,
        cost=0.5,
    )
    metrics.budget_use({"slack:T1": {"day": 0.9}})
    exported = metrics.render().decode()
    groups = example_rules()["groups"]
    assert isinstance(groups, list)
    exprs = [rule["expr"] for group in groups for rule in group["rules"]]
    assert len(exprs) == 3
    for expr in exprs:
        for name in re.findall(r"\bbot_[a-z_]+", expr):
            assert re.search(rf"^{name}\{{[^}}]*workspace=", exported, re.MULTILINE), name
