"""Sorting by ``order`` as SillyTavern's ``(a, b) => b.order - a.order`` does in V8, including
orders that are not numbers (the comparator then answers NaN, which the sort reads as 0)."""

from __future__ import annotations

import json
import math
from functools import cmp_to_key
from pathlib import Path

import lorescan
from lorescan import Lorebook
from lorescan._js import sort_descending
from lorescan._jssort import v8_sort

FIXTURE = json.loads((Path(__file__).parent / "fixtures" / "v8_sort.json").read_text(encoding="utf-8"))
_NUMBER = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _keys(raw: list) -> list[float]:
    return [_NUMBER[v] if isinstance(v, str) else float(v) for v in raw]


def _compare(keys: list[float]):
    def compare(a: int, b: int) -> float:
        d = keys[b] - keys[a]
        return 0.0 if d != d else d
    return compare


def test_v8_sort_gives_what_v8_gave() -> None:
    """111 arrays with NaN keys (2 to 1,000 elements: runs, merges and galloping), each sorted as
    Node's V8 sorted it."""
    for case in FIXTURE["cases"]:
        keys = _keys(case["keys"])
        assert v8_sort(list(range(len(keys))), _compare(keys)) == case["v8"]


def test_python_sort_is_not_v8_with_such_keys() -> None:
    """Why a port: CPython's list.sort, the same algorithm, reads some of these answers otherwise."""
    differ = sum(sorted(range(len(c["keys"])), key=cmp_to_key(_compare(_keys(c["keys"])))) != c["v8"]
                 for c in FIXTURE["cases"])
    assert differ > 0


def test_sort_descending_is_a_stable_key_sort_for_numbers() -> None:
    items = [("a", 5.0), ("b", 7.0), ("c", 5.0), ("d", math.inf), ("e", math.inf), ("f", -1.0)]
    got = sort_descending(items, lambda x: x[1])
    assert [x[0] for x in got] == ["d", "e", "b", "a", "c", "f"]
    assert [x[0] for x in sort_descending([("x", math.nan)], lambda x: x[1])] == ["x"]


def test_an_order_that_is_not_a_number_sorts_as_in_v8() -> None:
    """Orders [100, "abc", 100, 100]: the run the sort finds first holds all four, so they stay as
    read (a NaN order taken as 0 would put "abc" last)."""
    book = Lorebook.from_entries("g", [{"uid": i, "key": ["x"], "content": f"c{i}", "order": o, "position": 0}
                                       for i, o in enumerate([100, "abc", 100, 100])])
    lore = lorescan.compile([book], compat="1.12", tokenizer="chars4")
    got = lore.activate([{"name": "U", "is_user": True, "mes": "x"}])
    assert got.activated_keys() == ["g.0", "g.1", "g.2", "g.3"]
    assert got.before == "c3\nc2\nc1\nc0"
