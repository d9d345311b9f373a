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


def _timed_entries(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``_entries`` with timed effects: sticky, cooldown and delay on some of them."""
    out = _entries(rng, n)
    for entry in out:
        shape = rng.random()
        if shape < 0.15:
            entry["cooldown"] = rng.randrange(1, 4)
        elif shape < 0.25:
            entry["sticky"] = rng.randrange(1, 4)
        elif shape < 0.32:
            entry["delay"] = rng.randrange(2, 8)
    return out


def _tallied_replay(lore: lorescan.Lore, messages: list[ChatMessage], s: Settings,
                    seed: int) -> list[tuple[Any, dict[str, list[str]]]]:
    from lorescan._replay import Session, generation_points
    from lorescan._tally import Tally

    session = Session(lore, settings=s, user_name="U", char_name="C", rng=random.Random(seed))
    session.append(*messages)
    out = []
    for index in generation_points(messages):
        t = Tally()
        result = session.activate(upto=index, tally=t)
        out.append((result_json(result), {k: sorted(v) for k, v in t.as_dict().items()}))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_a_tally_counts_the_same_with_the_steps_in_c_and_in_python(seed: int, monkeypatch) -> None:
    """With a tally the engine keeps its C steps (the pass's candidates, the budget of its common
    entries); what it counts as held back by delay, cooldown and the budget is what the Python
    steps count, over a replay whose budget overflows and whose entries cool down and wait."""
    from lorescan import _index

    if _index.native is None:
        pytest.skip("the C extension is not built")
    rng = random.Random(seed)
    book = Lorebook.from_entries("bulk", _timed_entries(rng, 150))
    lore = lorescan.compile([book], tokenizer="cl100k")
    messages = [ChatMessage(name="U" if i % 2 else "C", is_user=bool(i % 2),
                            mes=" ".join(rng.choice(WORDS) for _ in range(8))) for i in range(30)]
    held = {"budget": 0, "cooldown": 0, "delay": 0}
    for budget in (60, 400, 100_000):
        s = Settings(world_info_recursive=True, world_info_depth=6, max_context=budget, world_info_budget=100)
        with_c = _tallied_replay(lore, messages, s, seed)
        with monkeypatch.context() as m:
            m.setattr(_index, "native", None)
            in_python = _tallied_replay(lore, messages, s, seed)
        assert with_c == in_python
        for _, tally in with_c:
            for reason in held:
                held[reason] += len(tally[reason])
    assert all(held.values()), held      # each reason was counted, so each was compared
