"""Macro substitution under SillyTavern 1.18's default engine on long texts: many scoped pairs, many
unclosed macros, one long plain text, and the legacy engine on the plain one for comparison. Each
result is checked against what SillyTavern gives for the same text (a repeat of a short text whose
result is pinned in ``tests/test_macro_engine.py``). The cost grows with the text's length, not its
square: `pytest benchmarks/test_bench_macros.py --benchmark-enable` shows it."""

from __future__ import annotations

import pytest

from lorescan._macro_engine import evaluate
from lorescan._macros import MacroEnv, substitute

N = 2_000
NEW = MacroEnv(user="Al", char="Moon", engine="new")
LEGACY = MacroEnv(user="Al", char="Moon", engine="legacy")


@pytest.mark.parametrize(("text", "want"), [
    ("{{if user}}a{{/if}}" * N, "a" * N),                       # a scoped pair after another
    ("{{ user }} {{" * N, "Al {{" * N),                        # each opening swallows the rest
    ("{{if user}}" * N + "b{{/if}}", "{{if user}}" * (N - 1) + "b"),   # openers with one closing macro
    ("{{user}} says hi. " * N, "Al says hi. " * N),           # plain names (the fast path)
], ids=["pairs", "unclosed", "open-scopes", "plain"])
def test_new_engine_on_long_texts(benchmark, text: str, want: str) -> None:
    assert benchmark(evaluate, text, NEW) == want


def test_legacy_engine_on_a_long_plain_text(benchmark) -> None:
    text = "{{user}} says hi. " * N
    assert benchmark(substitute, text, LEGACY) == "Al says hi. " * N
