"""Replaying a 1,000-message chat against a 10k-entry book: one late generation after warming, and
the last 100 generations of a replay in progress. Results equal the baseline's."""

from __future__ import annotations

import gc
import random

import benchdata as bd
import pytest

import lorescan
from lorescan._replay import generation_points, replay

N = 10_000
LATE = 998                      # the last character message of the 1,000-message chat
POINTS = list(range(800, 1000, 2))  # 100 generations, windows full (40 of 800+ messages)


@pytest.fixture(scope="module")
def warm():
    """The compiled 10k book, warmed by replaying the ten generations before ``LATE``."""
    lore, chat = bd.lore(N), bd.chat(N)
    state = None
    for gen in replay(lore, chat, settings=bd.settings(True), user_name=bd.gen.USER_NAME,
                      char_name=bd.gen.CHAR_NAME, rng=random.Random(0), points=range(LATE - 20, LATE, 2)):
        state = gen.result.timed
    return lore, chat, state


def test_replay_one_late_generation(benchmark, warm) -> None:
    lore, chat, state = warm
    s = bd.settings(True)

    def one():
        return lore.activate(chat[:LATE], settings=s, user_name=bd.gen.USER_NAME, char_name=bd.gen.CHAR_NAME,
                             timed=state, rng=bd.rng(LATE))

    result = benchmark(one)
    keys = tuple(result.activated_keys())
    assert keys == bd.expected(N, True, LATE)
    benchmark.extra_info.update(entries=N, messages=LATE, activated=len(keys))


def _fresh_session_at(point: int):
    """A freshly compiled book that has replayed every generation before ``point`` (results
    dropped), and the timed state and random source it reached: a replay in progress."""
    lore = lorescan.compile([bd.book(N)], settings=bd.settings(True))
    rng = random.Random(7)
    state = None
    for gen in replay(lore, bd.chat(N), settings=bd.settings(True), user_name=bd.gen.USER_NAME,
                      char_name=bd.gen.CHAR_NAME, rng=rng, points=range(2, point, 2)):
        state = gen.result.timed
    return lore, state, rng


@pytest.mark.parametrize("gc_mode", ["gc", "frozen"])
def test_replay_100_generations(benchmark, gc_mode: str) -> None:
    """The last 100 generations of the 1,000-message chat, continuing a replay of the 400 before:
    every generation meets two new messages and its own recursion texts, as a real replay does.
    ``frozen``: ``gc.freeze()`` after the warm-up, as the CLI does (Python's full collections then
    skip the book; with ``gc`` they re-walk it while the 100 results pile up)."""
    chat, s = bd.chat(N), bd.settings(True)
    assert POINTS == generation_points(chat)[-100:]
    start = {}

    def setup():
        gc.collect()
        start["lore"], start["timed"], start["rng"] = _fresh_session_at(POINTS[0])
        if gc_mode == "frozen":
            gc.freeze()
        return (), {}

    def whole():
        return list(replay(start["lore"], chat, settings=s, user_name=bd.gen.USER_NAME,
                           char_name=bd.gen.CHAR_NAME, timed=start["timed"], rng=start["rng"], points=POINTS))

    try:
        gens = benchmark.pedantic(whole, setup=setup, rounds=3 if bd.FULL else 1)
    finally:
        gc.unfreeze()
    assert [g.index for g in gens] == POINTS
    # the baseline, fed the same random stream and timed state, activates the same entries
    # generation by generation (all 100 in full mode; the first 5 in quick mode, ~1 s each)
    _, timed, rng = _fresh_session_at(POINTS[0])
    assert timed is not None and not timed.sticky and not timed.cooldown  # the generated book has no timed effects
    for g in gens[: 100 if bd.FULL else 5]:
        want = bd.base(N).activate(chat[:g.index], s, bd.gen.USER_NAME, bd.gen.CHAR_NAME, rng)
        assert g.result.activated_keys() == want, f"generation {g.index}"
    benchmark.extra_info.update(entries=N, generations=len(gens), gc=gc_mode,
                                mean_activated=round(sum(len(g.result.activated) for g in gens) / len(gens), 1))
