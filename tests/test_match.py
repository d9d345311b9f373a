"""The matching rules described once (lorescan._match): the word rule, regex-key syntax, MatchMode."""

from __future__ import annotations

import re

import pytest

from lorescan._match import (
    LOOKS_LIKE_REGEX,
    MatchMode,
    continues_word,
    find_word,
    is_word_char,
    split_regex_key,
    word_around,
)

#: SillyTavern's whole-word test, as its regex writes it (JavaScript \W without the u flag)
NOT_WORD_CLASS = "[^A-Za-z0-9_]"


def whole_word_pattern(needle: str) -> str:
    return rf"(?:^|{NOT_WORD_CLASS})({re.escape(needle)})(?:\Z|{NOT_WORD_CLASS})"


def test_word_rule_and_sillytaverns_regex_class_agree_on_every_code_point_of_the_bmp() -> None:
    not_word = re.compile(NOT_WORD_CLASS)
    disagree = [cp for cp in range(0x10000) if 0xD800 > cp or cp > 0xDFFF
                if is_word_char(chr(cp)) == bool(not_word.fullmatch(chr(cp)))]
    assert disagree == []
    assert [c for c in "aZ09_é-кот ß" if is_word_char(c)] == ["a", "Z", "0", "9", "_"]


@pytest.mark.parametrize("text, start, end, expected", [
    ("the dragon flies", 4, 10, False),    # spaces on both sides
    ("dragons", 0, 6, True),               # "s" continues the word
    ("a_dragon", 2, 8, True),              # "_" is a word character
    ("café", 0, 3, False),                 # é is not an ASCII word character: SillyTavern's rule
    ("dragon", 0, 6, False),               # both ends of the text
])
def test_continues_word(text: str, start: int, end: int, expected: bool) -> None:
    assert continues_word(text, start, end) is expected


@pytest.mark.parametrize("haystack, needle, expected", [
    ("the drag.", "drag", True),
    ("dragon", "drag", False),
    ("x a+b y", "a+b", True),      # no regex: "+" is a character
    ("aab", "a+b", False),
    ("dragon drag", "drag", True),  # a later occurrence counts
    ("drag", "drag", True),
    ("", "drag", False),
])
def test_find_word_agrees_with_sillytaverns_whole_word_regex(haystack: str, needle: str, expected: bool) -> None:
    assert find_word(haystack, needle) is expected
    assert (re.search(whole_word_pattern(needle), haystack) is not None) is expected


def test_word_around_shows_the_word_a_reader_sees() -> None:
    assert word_around("the dragonfly lands", 4, 10) == "dragonfly"
    assert word_around("кот котлета", 4, 7) == "котлета"      # any script, for display


@pytest.mark.parametrize("key, expected", [
    ("/drag(on)?/i", ("drag(on)?", "i")),
    (r"/a\/b/", ("a/b", "")),                 # the first escaped slash is unescaped, as SillyTavern does
    (r"/a\/b\/c/g", (r"a/b\/c", "g")),        # ... only the first
    ("/a/b/", None),                          # an unescaped slash inside: plain text
    ("/abc/x", None),                         # a flag JavaScript does not know: plain text
    ("//", None),                             # an empty pattern
    ("dragon", None),
])
def test_split_regex_key(key: str, expected: tuple[str, str] | None) -> None:
    assert split_regex_key(key) == expected


def test_looks_like_regex_takes_any_flags_so_lint_can_explain_them() -> None:
    assert LOOKS_LIKE_REGEX.fullmatch("/abc/x") is not None
    assert LOOKS_LIKE_REGEX.fullmatch("abc/") is None


def test_match_modes_are_interned_hashable_and_checked() -> None:
    a = MatchMode.of(False, True)
    assert a is MatchMode.of(False, True)
    assert a == MatchMode(False, True, "sillytavern") and hash(a) == hash(MatchMode(False, True))
    assert {a: 1}[MatchMode.of(False, True)] == 1
    assert MatchMode.of(True, True) is not a
    with pytest.raises(ValueError, match="unknown word rule 'klingon'"):
        MatchMode.of(False, True, "klingon")
