"""The C token counter (``_csrc/bpe.c``) counts as tiktoken's cl100k_base does, on every character
it knows, and leaves the others to tiktoken."""

from __future__ import annotations

import json
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lorescan import _index, _tokens
from lorescan._rank_cache import RankTable

from .test_bpe import _tiktoken

tiktoken = pytest.importorskip("tiktoken")
ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
native = _index.native
pytestmark = pytest.mark.skipif(native is None, reason="the C extension is not built")

#: characters drawn by the fuzzers: each class of the split pattern, ASCII and beyond
LETTERS = "aZsStTdDmMlLvVeErRxQéÉßſıİĳǅΩωЖжאבعربي日本語한글ꙮ𝐀𝔸ᐊᚠƛǂʰ"
NUMBERS = "0189٠١٢३४Ⅻ½²⁵①𝟘"
SPACES = " \t\n\r\x0b\x0c\x85\xa0\u1680\u2000\u200a\u2028\u2029\u202f\u205f\u3000"
OTHERS = "'\"!?.,;:-_()[]{}<>|/\\@#$%^&*+=~`\x00\x01\x1c\x1f\u180e\u200b\u200d\u0301\u0308—–“”‘’…€¥©®™•·🙂👍🏽❤️🫠\ufeff\ue000"
PIECES = ["'s", "'S", "'ll", "'LL", "'Ve", "'re", "'t", "'ſ", "'d", "'M", " '", "  \n", "\r\n", "<|endoftext|>",
          "don't", "I'M", "{{char}}", "x" * 40, "ab" * 30, "東京" * 10, " \u3000\n", "1234567", "\n\n\n"]


@pytest.fixture(scope="module")
def enc():  # type: ignore[no-untyped-def]
    return _tokens._encoding()


@pytest.fixture(scope="module")
def table():  # type: ignore[no-untyped-def]
    found = _tokens._native_table()
    assert found is not None
    return found[1]


def test_the_counter_counts_these_texts_as_tiktoken(enc, table) -> None:  # type: ignore[no-untyped-def]
    cases = {"don't": 2, "I'M here": 3, "\tword": 1, "a  ": 2, "123456": 2, "  \n  x": 3, "hello\n\n  world  ": 5,
             "é café — “quoted”": 6, "日本語のテキスト": 8, "<|endoftext|>": 7, "'ſ": 3, "x\u0301y": 3}
    for text, count in cases.items():
        assert _tiktoken(enc, text) == count, text        # the expected values are tiktoken's
        assert native.count_bpe(table, text) == count, text
    assert native.count_bpe(table, "") == 0


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.text(alphabet=LETTERS + NUMBERS + SPACES + OTHERS,
                                                             max_size=8)), max_size=12))
def test_fuzzed_texts_count_as_tiktoken(enc, table, parts: list[str]) -> None:  # type: ignore[no-untyped-def]
    text = "".join(parts)
    assert native.count_bpe(table, text) == _tiktoken(enc, text)


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(["ab", "abcé", "eé日", " ", " \n", "!?.", "xyz0", "ſs'"]), st.integers(0, 600), st.randoms())
def test_long_pieces_count_as_tiktoken(enc, table, alphabet: str, length: int, rng) -> None:  # type: ignore[no-untyped-def]
    """Pieces beyond 64 bytes are merged through a heap, shorter ones by scanning: the same merges."""
    text = "".join(rng.choice(alphabet) for _ in range(length))
    assert native.count_bpe(table, text) == _tiktoken(enc, text)


def test_very_long_runs_count_as_tiktoken(enc, table) -> None:  # type: ignore[no-untyped-def]
    for text in ("a" * 50_000, "ab" * 20_000, " " * 30_000, "é" * 20_000, "!" * 30_000, "1" * 30_000):
        assert native.count_bpe(table, text) == _tiktoken(enc, text)


def test_every_known_character_counts_as_tiktoken(enc, table) -> None:  # type: ignore[no-untyped-def]
    """Each character assigned in Unicode 14.0 beside letters, digits, spaces and apostrophes
    (``tools/unicode_classes.py`` says why 14.0); the others are left to tiktoken."""
    known = unknown = 0
    for cp in range(0x110000):
        c = chr(cp)
        if native.count_bpe(table, c) < 0:
            unknown += 1
            assert cp >= 0x80
            continue
        known += 1
        for text in (f"a{c}'s {c}1", f" {c}{c}x\n{c} "):
            assert native.count_bpe(table, text) == _tiktoken(enc, text), hex(cp)
    assert known > 280_000 and unknown > 800_000
    assert all(native.count_bpe(table, chr(cp)) == -1 for cp in range(0xD800, 0xE000))


def test_a_text_with_an_unknown_character_is_counted_by_tiktoken(enc, table, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    new = "\U0001fae8"          # an emoji of Unicode 15.0; a lone surrogate is unknown too
    for text in (f"shaking {new} face", "a \ud83d b"):
        assert native.count_bpe(table, text) == -1
    assert _tokens.Cl100k().count(f"shaking {new} face") == _tiktoken(enc, f"shaking {new} face") == 6
    assert _tokens.Cl100k().count("a \ud83d b") == 3   # tiktoken counts a lone surrogate as U+FFFD


def test_project_and_shared_texts_count_as_tiktoken(enc, table) -> None:  # type: ignore[no-untyped-def]
    """The project's own texts, and the shared lorebooks' contents when ``../shared`` is there."""
    texts = [p.read_text(encoding="utf-8") for p in [ROOT / "README.md", ROOT / "ARCHITECTURE.md",
                                                    *sorted((ROOT / "corpora").glob("*.json*"))]]
    for path in sorted((SHARED / "corpora" / "st-worldinfo").glob("*.json")):
        entries = json.loads(path.read_text(encoding="utf-8")).get("entries", {})
        texts += [e["content"] for e in (entries.values() if isinstance(entries, dict) else entries)
                  if isinstance(e, dict) and isinstance(e.get("content"), str)]
    counted = 0
    for text in texts:
        for chunk in [text, *text.split("\n\n")]:
            n = native.count_bpe(table, chunk)
            if n >= 0:
                assert n == _tiktoken(enc, chunk)
                counted += 1
    assert counted > 50


def test_the_counter_is_used_and_tiktoken_is_not_built() -> None:
    code = ("from lorescan import _tokens as t; c = t.Cl100k(); "
            "print(c.count('naïve café — 東京'), c.count_line('x'), t._encoding.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["8", "2", "0"]


def test_the_table_refuses_offsets_that_do_not_fit() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        native.bpe_table(b"ab", array("I", [0, 1, 3]))
    with pytest.raises(ValueError, match="array"):
        native.bpe_table(b"ab", array("H", [0, 1, 2]))
    with pytest.raises(TypeError):
        native.count_bpe(native.bpe_table(b"ab", array("I", [0, 1, 2])), b"ab")
    small = RankTable.from_dict({b"a": 0, b"b": 1, b"ab": 2})
    assert small is not None
    assert native.count_bpe(native.bpe_table(small.blob, small.starts), "abab ab") == 4   # ab|ab| |ab


def test_without_the_extension_the_counter_is_tiktoken(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(_index, "native", None)
    _tokens._native_table.cache_clear()
    try:
        assert _tokens._native_table() is None
        assert _tokens.Cl100k().count("naïve café — 東京") == 8
    finally:
        _tokens._native_table.cache_clear()
