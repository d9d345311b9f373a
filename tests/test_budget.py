"""Budget arithmetic: counts built from pieces must equal counting the whole text SillyTavern builds."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lorescan._budget import BudgetMeter, count_lines
from lorescan._tokens import get_counter

# letters, digits, spaces and line breaks, punctuation, contractions, non-Latin text and emoji:
# the pieces where cl100k's pre-tokenizer could join across a line start if any could
_ALPHABET = st.sampled_from(list("aZ9 \n\r\t.,!?'-_") + ["'s", "'ll", "é", "中文", "🙂", "\u00a0", "  ", "123456"])
_LINE = st.lists(_ALPHABET, max_size=8).map("".join)
_LINES = st.lists(_LINE, max_size=6)
_HYP = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_HYP
@given(lines=_LINES)
def test_count_lines_equals_counting_the_joined_text(lines: list[str]) -> None:
    counter = get_counter("cl100k")
    assert count_lines(counter, lines) == counter.count("".join(line + "\n" for line in lines or [""]))


@_HYP
@given(lines=_LINES)
def test_count_lines_from_remembered_lines(lines: list[str]) -> None:
    """Every line counted before (as an entry's content is): the sum of the remembered counts is
    taken only where it equals counting the joined text."""
    counter = get_counter("cl100k")
    for line in lines:
        counter.count_line(line)
    assert count_lines(counter, lines) == counter.count("".join(line + "\n" for line in lines or [""]))


@_HYP
@given(passes=st.lists(_LINES, min_size=1, max_size=4), name=st.sampled_from(["cl100k", "words", "chars4"]))
def test_activated_tokens_after_recursion_passes(passes: list[list[str]], name: str) -> None:
    """``allActivatedText = text + "\\n" + allActivatedText`` per pass, counted incrementally."""
    counter = get_counter(name)
    meter = BudgetMeter(counter, 1000)
    whole = ""
    for lines in passes:
        text = "\n".join(lines)
        meter.add_activated_text(text, lines)
        whole = text + "\n" + whole
        assert meter.activated_tokens() == counter.count(whole)


class _OwnCounter:
    """A caller's counter: only ``count(text)``, counted on the exact text."""

    def count(self, text: str) -> int:
        return len(text) + text.count("\n") * 3


@_HYP
@given(contents=st.lists(_LINE, min_size=1, max_size=8),
       name=st.sampled_from(["cl100k", "words", "chars4", "own"]))
def test_pass_content_counts_the_whole_new_content(contents: list[str], name: str) -> None:
    counter = get_counter(name) if name != "own" else _OwnCounter()
    new = BudgetMeter(counter, 10**6).new_pass()
    for i, content in enumerate(contents):
        assert new.add(content, ignore=False, base=0)
        assert new.tokens == counter.count("".join(c + "\n" for c in contents[:i + 1]))


def test_a_line_starting_with_a_space_is_counted_with_the_line_before() -> None:
    counter = get_counter("cl100k")
    # " x" after "\n" pre-tokenizes as "\n" + " x" only when counted together: the sum would differ
    lines = ["a", " b", "c"]
    assert count_lines(counter, lines) == counter.count("a\n b\nc\n")
