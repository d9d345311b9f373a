"""Replaying a 1,000-message chat against a 10k-entry book: one late generation after warming, and
a whole replay of 100 generations (the last 100 character messages). Results equal the baseline's."""

from __future__ import annotations

import random

import pytest

from lorescan.replay import generation_points, replay

import benchdata as bd

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


def test_replay_100_generations(benchmark, warm) -> None:
    lore, chat, _ = warm
    s = bd.settings(True)
    assert POINTS == generation_points(chat)[-100:]

    def whole():
        return list(replay(lore, chat, settings=s, user_name=bd.gen.USER_NAME, char_name=bd.gen.CHAR_NAME,
                           rng=random.Random(7), points=POINTS))

    gens = benchmark.pedantic(whole, rounds=3 if bd.FULL else 1)
    assert [g.index for g in gens] == POINTS
    # the baseline, fed the same random stream, activates the same entries generation by generation
    # (all 100 in full mode; the first 5 in quick mode, each baseline generation takes ~1 s)
    rng = random.Random(7)
    for g in gens[: 100 if bd.FULL else 5]:
        want = bd.base(N).activate(chat[:g.index], s, bd.gen.USER_NAME, bd.gen.CHAR_NAME, rng)
        assert g.result.activated_keys() == want, f"generation {g.index}"
    benchmark.extra_info.update(entries=N, generations=len(gens),
                                mean_activated=round(sum(len(g.result.activated) for g in gens) / len(gens), 1))
