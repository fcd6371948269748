"""Writes the forgetting-probe transcripts ``bench/transcripts/{en,zh}.jsonl`` (deterministic).

Several hundred turns of team chatter (``bench/engine_speed.py``'s generator), with facts
planted early on: some pinned, most said only once. Probe questions come last. Run from the
repository root: ``python bench/make_transcripts.py``. Format: ``docs/evaluation.md``.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from engine_speed import ChatGenerator

OUT = Path(__file__).resolve().parent / "transcripts"
FILLER = 500

FACTS_EN: list[dict[str, Any]] = [
    {
        "fact": "freeze",
        "user": "alice",
        "text": "Heads up everyone: the release freeze starts on December 15, no exceptions.",
        "answer": "December 15",
        "pinned": True,
    },
    {
        "fact": "wifi",
        "user": "bob",
        "text": "For the visitors tomorrow, the guest wifi password is tangerine-42.",
        "answer": "tangerine-42",
    },
    {
        "fact": "budget",
        "user": "carol",
        "text": "Finance confirmed it: the Q3 cloud budget is capped at $48,000.",
        "key": "$48,000",
        "answer": "48,000",
    },
    {
        "fact": "oncall",
        "user": "dmitri",
        "text": "From Monday Carol owns the payments on-call rotation, I'm handing it over.",
        "key": "Carol owns the payments on-call",
        "answer": "Carol",
    },
    {
        "fact": "contract",
        "user": "alice",
        "text": "Our CDN vendor contract number is CN-7731-B, use it when you open a ticket.",
        "answer": "CN-7731-B",
        "pinned": True,
    },
    {
        "fact": "room",
        "user": "bob",
        "text": "The offsite planning session is in the Orion room on the 7th floor.",
        "answer": "Orion",
    },
]
PROBES_EN = {
    "freeze": "@bot when does the release freeze start?",
    "wifi": "@bot what is the guest wifi password?",
    "budget": "@bot what is the Q3 cloud budget cap?",
    "oncall": "@bot who owns the payments on-call rotation now?",
    "contract": "@bot what is our CDN vendor contract number?",
    "room": "@bot which room is the offsite planning session in?",
}
FACTS_ZH: list[dict[str, Any]] = [
    {
        "fact": "freeze",
        "user": "李明",
        "text": "大家注意：上线冻结从12月15日开始，没有例外。",
        "answer": "12月15日",
        "pinned": True,
    },
    {
        "fact": "wifi",
        "user": "王芳",
        "text": "明天有客人来，访客WiFi密码是 xingyun-88。",
        "answer": "xingyun-88",
    },
    {
        "fact": "budget",
        "user": "张伟",
        "text": "财务确认了：第三季度云服务预算上限是48000元。",
        "key": "48000元",
        "answer": "48000",
    },
    {
        "fact": "oncall",
        "user": "陈静",
        "text": "从下周一开始，王芳负责支付系统的值班，我交接给她。",
        "key": "王芳负责支付系统的值班",
        "answer": "王芳",
    },
    {
        "fact": "contract",
        "user": "李明",
        "text": "我们CDN供应商的合同编号是 HT-2291-K，提工单时要填。",
        "answer": "HT-2291-K",
        "pinned": True,
    },
    {
        "fact": "room",
        "user": "王芳",
        "text": "团建规划会在七楼的猎户座会议室。",
        "answer": "猎户座",
    },
]
PROBES_ZH = {
    "freeze": "@bot 上线冻结从哪天开始？",
    "wifi": "@bot 访客WiFi密码是什么？",
    "budget": "@bot 第三季度云服务预算上限是多少？",
    "oncall": "@bot 现在谁负责支付系统的值班？",
    "contract": "@bot 我们CDN供应商的合同编号是多少？",
    "room": "@bot 团建规划会在哪个会议室？",
}
USERS = {"en": ("alice", "bob", "carol", "dmitri"), "zh": ("李明", "王芳", "张伟", "陈静")}


def transcript(language: str, seed: int) -> list[dict[str, Any]]:
    facts, probes = (FACTS_EN, PROBES_EN) if language == "en" else (FACTS_ZH, PROBES_ZH)
    gen = ChatGenerator(seed)
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    # The facts are planted among the first 60 messages, in order.
    slots = sorted(rng.sample(range(2, 60), len(facts)))
    planted = iter(zip(slots, facts, strict=True))
    slot, fact = next(planted)
    for number in range(FILLER):
        while fact is not None and number == slot:
            lines.append(fact)
            slot, fact = next(planted, (None, None))  # type: ignore[arg-type]
        user = rng.choice(USERS[language])
        if rng.random() < 0.25:
            lines.append({"user": user, "text": gen.question(language), "addressed": True})
        else:
            lines.append({"user": user, "text": gen.chatter(language)})
    users = USERS[language]
    lines.extend(
        {"probe": f["fact"], "user": users[i % len(users)], "question": probes[f["fact"]]}
        for i, f in enumerate(facts)
    )
    return lines


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for language, seed in (("en", 8001), ("zh", 8002)):
        path = OUT / f"{language}.jsonl"
        text = "".join(
            json.dumps(line, ensure_ascii=False) + "\n" for line in transcript(language, seed)
        )
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {text.count(chr(10))} lines")


if __name__ == "__main__":
    main()
