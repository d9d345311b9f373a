"""An untraced evaluation, whose passes gate most entries through their inline plain records and
count the budget incrementally, gives what a traced one gives: every entry through the full gate."""

from __future__ import annotations

import random
from typing import Any

import pytest

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._results import result_json

WORDS = [f"{a}{b}" for a in ("vel", "tor", "mar", "quin", "sab", "dro") for b in ("ax", "en", "ith", "or", "un")]


def _entries(rng: random.Random, n: int) -> list[dict[str, Any]]:
    out = []
    for uid in range(n):
        content = " ".join(rng.choice(WORDS) if rng.random() < 0.1 else f"filler{rng.randrange(50)}"
                           for _ in range(rng.randrange(3, 40)))
        shape = rng.random()
        if shape < 0.05:
            content = " " + content               # a line that does not start a fresh pre-token
        elif shape < 0.08:
            content = ""
        elif shape < 0.12:
            content = "{{char}} " + content
        entry: dict[str, Any] = {"uid": uid, "key": [rng.choice(WORDS)], "content": content,
                                 "order": rng.randrange(1000), "position": rng.randrange(7)}
        if rng.random() < 0.1:
            entry["probability"] = 50
        if rng.random() < 0.08:
            entry["group"] = rng.choice(("g1", "g2"))
        if rng.random() < 0.05:
            entry["ignoreBudget"] = True
        if rng.random() < 0.05:
            entry["group"] = None
        out.append(entry)
    return out


@pytest.mark.parametrize("compat", ["1.18", "1.12"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_untraced_equals_traced(compat: str, seed: int) -> None:
    rng = random.Random(seed)
    book = Lorebook.from_entries("bulk", _entries(rng, 150))
    lore = lorescan.compile([book], compat=compat, tokenizer="cl100k")
    chat = [ChatMessage(name="U" if i % 2 else "C", is_user=bool(i % 2),
                        mes=" ".join(rng.choice(WORDS) for _ in range(12))) for i in range(12)]
    overflowed = fitted = 0
    for budget in (30, 80, 200, 600, 2000, 100_000):
        for recursive in (False, True):
            s = Settings(world_info_recursive=recursive, world_info_depth=12, max_context=budget,
                         world_info_budget=100)
            results = [lore.activate(chat, settings=s, user_name="U", char_name="C", trace=trace,
                                     rng=random.Random(seed)) for trace in (False, True)]
            fast, slow = (result_json(r) for r in results)
            assert fast == slow
            assert [results[0].budget_used, results[0].overflowed] == [results[1].budget_used, results[1].overflowed]
            overflowed += results[0].overflowed
            fitted += not results[0].overflowed and bool(results[0].activated)
    assert overflowed and fitted      # both outcomes were compared
