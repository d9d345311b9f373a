"""lorescan and the straightforward baseline activate exactly the same entries, in the same order.

Generated books of 100 and 1,000 entries, several seeds, recursion on and off, several points in a
chat (each with its own seeded random source, so probability and group rolls are compared too).
A disagreement is an engine bug (or a baseline bug): the message names the seed, size and point.
"""

from __future__ import annotations

import random
import re

import baseline as bl
import generate as gen
import pytest

import lorescan
from lorescan import _index
from tests import random_books as rb

POINTS = (1, 6, 15, 30, 47, 64, 80)


def _compare(n: int, seed: int, recursive: bool, tokenizer: str = "cl100k", depth: int = 40,
             **kwargs) -> int:
    entries = gen.make_entries(n, seed, **kwargs)
    s = gen.bench_settings(recursive=recursive, depth=depth)
    lore = lorescan.compile([lorescan.Lorebook.from_entries(gen.BOOK_NAME, entries)], settings=s,
                            tokenizer=tokenizer)
    base = bl.Baseline([(gen.BOOK_NAME, entries)], tokenizer=tokenizer)
    chat = gen.chat_messages(gen.make_chat(entries, max(POINTS), seed))
    total = 0
    for point in POINTS:
        got = lore.activate(chat[:point], settings=s, user_name=gen.USER_NAME, char_name=gen.CHAR_NAME,
                            rng=random.Random(seed * 7919 + point)).activated_keys()
        want = base.activate(chat[:point], s, gen.USER_NAME, gen.CHAR_NAME, random.Random(seed * 7919 + point))
        assert got == want, (f"n={n} seed={seed} recursive={recursive} point={point}: lorescan-only "
                             f"{sorted(set(got) - set(want))}, baseline-only {sorted(set(want) - set(got))}")
        total += len(got)
    return total


@pytest.mark.parametrize("recursive", [False, True], ids=["flat", "recursive"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n", [100, 1000])
def test_same_activations(n: int, seed: int, recursive: bool) -> None:
    total = _compare(n, seed, recursive)
    assert total > len(POINTS)          # the inputs do activate things (not a vacuous comparison)


@pytest.mark.parametrize("recursive", [False, True], ids=["flat", "recursive"])
def test_same_activations_two_delay_levels_chars4(recursive: bool) -> None:
    """Two distinct ``delayUntilRecursion`` levels (forced level passes, even with recursion off),
    the incremental ``chars4`` budget counter and a short window."""
    assert _compare(1000, 5, recursive, tokenizer="chars4", depth=4, delay_levels=(True, 1, 2)) > 0


def test_recursion_changes_the_result() -> None:
    """The generated data has recursion chains: recursion on activates more than off."""
    entries = gen.make_entries(1000, 0)
    base = bl.Baseline([(gen.BOOK_NAME, entries)])
    chat = gen.chat_messages(gen.make_chat(entries, 60, 0))
    flat = base.activate(chat, gen.bench_settings(recursive=False), gen.USER_NAME, gen.CHAR_NAME, random.Random(1))
    deep = base.activate(chat, gen.bench_settings(recursive=True), gen.USER_NAME, gen.CHAR_NAME, random.Random(1))
    assert set(flat) < set(deep)


def test_whole_word_matches_sillytaverns_regex() -> None:
    """The baseline's ``str.find`` whole-word test answers like ``(?:^|\\W)(needle)(?:$|\\W)``."""
    rng = random.Random(3)
    alphabet = "ab_1 \x01\n-é"
    for _ in range(3000):
        hay = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        needle = "".join(rng.choice("ab_1é") for _ in range(rng.randrange(0, 3)))
        want = bl._word_regex(needle).search(hay) is not None
        assert bl._whole_word(hay, needle) == want, (hay, needle)


def test_generator_is_deterministic_and_shaped() -> None:
    a, b = gen.make_entries(1000, 4), gen.make_entries(1000, 4)
    assert a == b and a != gen.make_entries(1000, 5)
    assert [e["uid"] for e in a] == list(range(1000))
    assert all(1 <= len(e["key"]) <= 4 for e in a)
    assert all(20 <= len(e["content"].split()) <= 121 for e in a)
    assert {e["position"] for e in a} == set(range(7))
    regex_keys = [k for e in a for k in e["key"] if k.startswith("/")]
    assert regex_keys and all(re.fullmatch(r"/\\b\w+\(\?:\w+\|\w+\)\\b/i", k) for k in regex_keys)
    assert any("{{char}}" in k for e in a for k in e["key"])
    assert 0.2 < sum(bool(e["keysecondary"]) for e in a) / 1000 < 0.4
    assert 0.02 < sum(bool(e["group"]) for e in a) / 1000 < 0.08
    assert 0 < sum(e["constant"] for e in a) <= 20
    chat = gen.make_chat(a, 50, 4)
    assert chat == gen.make_chat(a, 50, 4)
    assert [m["is_user"] for m in chat[:4]] == [False, True, False, True]


def test_write_book_round_trips(tmp_path) -> None:
    entries = gen.make_entries(100, 2)
    path = gen.write_book(tmp_path / "Synth.json", entries=entries)
    from lorescan._formats.worldinfo import load_worldinfo

    book = load_worldinfo(path)
    assert book.name == "Synth"
    assert [e.to_json() for e in book.scan_order()] == entries


def _small_book_generations(seed: int) -> int:
    """One small colliding book (``tests/random_books.py``) through a growing chat: the engine, with
    its C steps and with its Python steps, against the baseline, generation by generation (names
    and generation types changing). The activations, summed."""
    r = random.Random(seed)
    entries = [rb.entry(r, uid) for uid in range(r.randint(2, 24))]
    s = rb.settings(r)
    tokenizer = r.choice(["chars4", "chars4", "words", "cl100k"])
    lore = lorescan.compile([lorescan.Lorebook.from_entries("w", entries)], settings=s, tokenizer=tokenizer)
    base = bl.Baseline([("w", entries)], tokenizer=tokenizer)
    chat: list[lorescan.ChatMessage] = []
    native, total = _index.native, 0
    for point in range(r.randint(3, 9)):
        chat.append(rb.message(r, chat))
        user, char = r.choice(rb.NAMES)
        kind = r.choice(["normal", "normal", "swipe", "continue"])
        draws = r.randrange(1 << 30)
        want = base.activate(chat, s, user, char, random.Random(draws), generation_type=kind)
        for steps in ((native, None) if native is not None else (None,)):
            _index.native = steps
            try:
                got = lore.activate(chat, settings=s, user_name=user, char_name=char, rng=random.Random(draws),
                                    generation_type=kind).activated_keys()
            finally:
                _index.native = native
            assert got == want, f"seed {seed}, generation {point}, C steps {steps is not None}"
        total += len(want)
    return total


def test_small_colliding_books_agree() -> None:
    """Near-miss words (case, accents, decomposed forms, punctuation, substrings, scripts without
    spaces), regex keys with flags, macro keys, secondary logic, groups, probability, scan depths
    and overflowing budgets: 80 books (``LORESCAN_RANDOM_BOOKS``), every generation of each, the
    same entries in the same order."""
    books = rb.count(80)
    total = sum(_small_book_generations(seed) for seed in range(books))
    assert total > 6 * books    # not a vacuous comparison: about three entries per generation, six generations a book
