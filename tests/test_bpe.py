"""cl100k counts of ASCII texts in Python equal tiktoken's (the C counter's: ``test_bpe_native.py``)."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from lorescan import _tokens
from lorescan._bpe import count_ascii

tiktoken = pytest.importorskip("tiktoken")

ROOT = Path(__file__).resolve().parent.parent
PIECES = ["'s", "'S", "'ll", "'LL", "'Ve", "'re", "'t", "'d", "'m", "'x", " ", "  ", "\n", "\r\n", "\r", "\t",
          "\x0b", "\x0c", "\x1c", "\x1f", "\x00", "123", "4567", "1234567", "hello", "World", " the", "...", "!!",
          "  \n", " \n\n", "a1b2", "don't", "I'M", "x" * 30, "ab" * 20, "<|endoftext|>", "{{char}}", " -- ", "\t\t\n "]


@pytest.fixture(scope="module")
def enc():  # type: ignore[no-untyped-def]
    return _tokens._encoding()


def _tiktoken(enc, text: str) -> int:  # type: ignore[no-untyped-def]
    return len(enc.encode(text, disallowed_special=()))


def test_fuzzed_ascii_texts_count_as_tiktoken(enc) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(7)
    alphabet = [chr(i) for i in range(128)]
    ranks = enc._mergeable_ranks
    for _ in range(4000):
        parts = []
        for _ in range(rng.randrange(1, 15)):
            r = rng.random()
            parts.append(rng.choice(PIECES) if r < 0.5
                         else "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 6))) if r < 0.8
                         else rng.choice(string.ascii_letters + string.digits + " ") * rng.randrange(1, 9))
        text = "".join(parts)
        assert count_ascii(text, ranks) == _tiktoken(enc, text), repr(text)


def test_project_texts_count_as_tiktoken(enc) -> None:  # type: ignore[no-untyped-def]
    ranks = enc._mergeable_ranks
    texts = [p.read_text(encoding="utf-8") for p in [ROOT / "README.md", ROOT / "ARCHITECTURE.md",
                                                    *sorted((ROOT / "corpora").glob("*.json*"))]]
    checked = 0
    for text in texts:
        for chunk in [text, *text.split("\n\n")]:
            ascii_only = chunk.encode("ascii", "ignore").decode()
            assert count_ascii(ascii_only, ranks) == _tiktoken(enc, ascii_only)
            checked += 1
    assert checked > 50


def test_counter_counts_the_same_before_and_after_tiktoken_is_built(enc, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    texts = ["The tide-bell hangs under the harbour.", "naïve café — 東京", "x" * 50, " leading space\n"]
    expected = [_tiktoken(enc, t) for t in texts]
    calls: list[str] = []
    monkeypatch.setattr(_tokens, "_native_table", lambda: None)     # the path without the C extension
    monkeypatch.setattr(_tokens, "_PYTHON_CHARS", [10_000])
    monkeypatch.setattr(_tokens._encoding, "cache_info", lambda: type("Info", (), {"currsize": 0})())
    import lorescan._bpe as bpe

    original = bpe.count_ascii

    def spy(text: str, ranks: dict[bytes, int]) -> int:
        calls.append(text)
        return original(text, ranks)

    monkeypatch.setattr(bpe, "count_ascii", spy)
    assert [_tokens.Cl100k().count(t) for t in texts] == expected
    assert calls == [t for t in texts if t.isascii()]       # in Python: the ASCII ones only
    monkeypatch.setattr(_tokens, "_PYTHON_CHARS", [0])       # used up: tiktoken for everything
    calls.clear()
    assert [_tokens.Cl100k().count(t) for t in texts] == expected
    assert calls == []
