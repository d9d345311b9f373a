"""Bounded memos drop their older half past the limit, never everything at once."""

from __future__ import annotations

import random

import lorescan
from lorescan._memo import trim_oldest


def test_trim_keeps_the_newer_half() -> None:
    memo = {f"k{i}": i for i in range(11)}
    trim_oldest(memo, 10)
    assert list(memo) == [f"k{i}" for i in range(5, 11)]
    trim_oldest(memo, 10)                      # under the limit: untouched
    assert len(memo) == 6


def test_a_full_hit_memo_keeps_the_latest_messages() -> None:
    """Past the key-hit memo's limit the newest texts are still remembered, and results stay the same."""
    book = lorescan.Lorebook.from_entries("b", [{"uid": 0, "key": ["bell"], "content": "The bell rings."}])
    lore = lorescan.compile([book])
    chat = [{"name": "U", "is_user": True, "mes": f"line {i}"} for i in range(30)]
    first = lore.activate(chat + [{"name": "U", "is_user": True, "mes": "a bell"}], rng=random.Random(1))
    bound = next(iter(lore._bound.values()))
    for i in range(20_005):
        bound.hits(f"filler text {i}")
    assert len(bound.hits_memo) < 20_001
    assert "filler text 20004" in bound.hits_memo and "filler text 0" not in bound.hits_memo
    assert "filler text 15000" in bound.hits_memo     # the newer half stays: no rebuild of everything
    again = lore.activate(chat + [{"name": "U", "is_user": True, "mes": "a bell"}], rng=random.Random(1))
    assert again.activated_keys() == first.activated_keys() == ["b.0"]
