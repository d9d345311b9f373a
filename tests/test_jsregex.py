"""JavaScript RegExp semantics of ``lorescan._jsregex``.

Expected values were checked against V8 (Node 20), except the ES2025 modifier-group and
duplicate-named-group cases, which follow the specification (Chrome 125+, Firefox 132+).
"""

from __future__ import annotations

import time

import pytest

from lorescan import _jsregex
from lorescan._jsregex import JsRegex, JsRegexSyntaxError, RegexTimeout, parse_regex_key, timeout_count


def js_test(key: str, text: str) -> bool | None:
    """``parseRegexFromString(key)?.test(text)``; ``None`` when the key is plain text."""
    rx = parse_regex_key(key)
    return None if rx is None else rx.test(text)


# --------------------------------------------------------------------------- parseRegexFromString

@pytest.mark.parametrize(("key", "source", "flags"), [
    ("/a\\/b/", "a/b", ""),
    ("/a\\/b\\/c/", "a/b\\/c", ""),
    ("/a\\\\/b/", "a\\/b", ""),
    ("/dra+gon/i", "dra+gon", "i"),
    ("/x/gimsuy", "x", "gimsuy"),
    ("/(?<n>x)/", "(?<n>x)", ""),
    ("/ /", " ", ""),
])
def test_parse_source_and_flags(key: str, source: str, flags: str) -> None:
    rx = parse_regex_key(key)
    assert rx is not None
    assert (rx.source, rx.flags) == (source, flags)


@pytest.mark.parametrize("key", [
    "/a/b/", "/a/i/", "//", "/a/gg", "/a/d", "/a/v", "/abc/x", "/a/b/i", "/\\/", "a", "/a", "a/", "",
    "/(/", "/[a/", "/a)/", "/*a/", "/a**/", "/a{2}{3}/", "/a{3,1}/", "/\\/",
    "/(?P<x>a)/", "/(?<1a>x)/", "/(?<a>x)\\k<b>/", "/(?<a>x)[\\k]/", "/(?<a>x)(?<a>y)/",
    "/(?<=a)*/", "/^*/", "/\\b+/", "/(?ii:a)/", "/(?-:a)/", "/(?i-i:a)/", "/(?x:a)/",
    "/]/u", "/}/u", "/{/u", "/\\a/u", "/\\8/u", "/\\1/u", "/[\\d-z]/u", "/\\u{110000}/u",
    "/(?=a)*/u", "/\\p{Foo}/u", "/\\p{letter}/u", "/\\c/u", "/a\\/",
])
def test_plain_text_keys(key: str) -> None:
    assert parse_regex_key(key) is None


def test_parse_is_cached() -> None:
    assert parse_regex_key("/cache+d/i") is parse_regex_key("/cache+d/i")


def test_constructor_rejects_bad_flags_and_syntax() -> None:
    with pytest.raises(JsRegexSyntaxError):
        JsRegex("a", "gg")
    with pytest.raises(JsRegexSyntaxError):
        JsRegex("(", "")
    assert JsRegex("a", "d").test("a") is True


# --------------------------------------------------------------------------- the brief's cases

@pytest.mark.parametrize(("key", "text", "expected"), [
    ("/a\\/b/", "a/b", True),
    ("/a\\/b\\/c/", "a/b/c", True),
    ("/a\\\\/b/", "a/b", True),
    ("/a\\\\/b/", "a\\/b", False),
    ("/(?<n>x)/", "x", True),
    ("/\\p{L}+/u", "é", True),
    ("/\\p{L}/", "p{L}", True),
    ("/\\p{L}/", "é", False),
    ("/dra+gon/", "DRAAGON", False),
    ("/dra+gon/i", "DRAAGON", True),
    ("/alice/y", "\x01alice", False),
    ("/alice/y", "alice", True),
    ("/^alice/", "\x01alice", False),
    ("/\\x01alice/", "\x01bob\n\x01alice", True),
    ("/^\\x01dragon$/m", "\x01dragon", True),
    ("/^\\x01alice$/m", "\x01bob\n\x01alice", True),
    ("/dragon$/", "dragon\n", False),
    ("/dragon$/", "dragon", True),
    ("/dragon$/m", "dragon\n", True),
    ("/\\w+/", "é", False),
    ("/\\bcat\\b/", "écat", True),
    ("/\\bcat\\b/", "concat", False),
    ("/./", "\n", False),
    ("/./s", "\n", True),
    ("/[^]/", "\n", True),
    ("/[]/", "abc", False),
    ("/a{,3}/", "a{,3}", True),
    ("/a{,3}/", "aaa", False),
    ("/\\d/", "\u0663", False),
    ("/\\d/", "3", True),
])
def test_brief_cases(key: str, text: str, expected: bool) -> None:
    assert js_test(key, text) is expected


# --------------------------------------------------------------------------- semantics

@pytest.mark.parametrize(("key", "text", "expected"), [
    # \s is JavaScript's whitespace set, \w / \d / \b are ASCII
    ("/\\s/", "\u00a0", True), ("/\\s/", "\ufeff", True), ("/\\s/", "\u180e", False),
    ("/\\s/", "\x0b", True), ("/\\S/", "\u3000", False), ("/\\W/", "é", True),
    ("/\\D/", "\u0663", True), ("/\\bé/", "é", False), ("/[\\w-]+$/", "a-b_1", True),
    ("/\\w/u", "é", False), ("/\\p{Lu}/u", "É", True), ("/\\P{Ll}/u", "é", False),
    ("/\\p{Script=Greek}/u", "λ", True), ("/\\p{sc=Grek}/u", "a", False),
    ("/\\p{General_Category=Letter}/u", "ж", True), ("/\\p{Any}/u", "\n", True),
    # line terminators for . ^ $
    ("/./", "\r", False), ("/./", "\u2028", False), ("/./", "\x85", True),
    ("/^b/m", "a\rb", True), ("/^b/m", "a\u2029b", True), ("/^b/m", "a\x85b", False),
    ("/a$/m", "a\u2028", True), ("/a$/", "a\r", False),
    # escapes
    ("/\\cA/", "\x01", True), ("/\\c1/", "\\c1", True), ("/[\\c1]/", "\x11", True),
    ("/[\\c*]/", "\\", True), ("/\\0/", "\x00", True), ("/\\8/", "8", True),
    ("/\\18/", "\x018", True), ("/\\377/", "\xff", True), ("/\\400/", " 0", True),
    ("/[\\1]/", "\x01", True), ("/[\\b]/", "\x08", True), ("/[\\B]/", "B", True),
    ("/\\x4g/", "x4g", True), ("/\\x41/", "A", True), ("/\\u0041/", "A", True),
    ("/\\u41/", "u41", True), ("/\\u{2}/", "uu", True), ("/\\u{41}/u", "A", True),
    ("/\\ud83d\\ude00/u", "😀", True), ("/\\-/", "-", True), ("/\\$/", "$", True),
    ("/\\A\\Z\\z/", "AZz", True), ("/\\h\\e\\N\\G/", "heNG", True), ("/\\k<a>/", "k<a>", True),
    ("/[[:alpha:]]+/", "[:]", True), ("/[[:alpha:]]/", "b", False), ("/[[:alpha:]]/", "a]", True),
    # quantifiers and braces
    ("/x{2,}/", "xx", True), ("/x{2,}/", "x", False), ("/a{/", "a{", True), ("/a{1/", "a{1", True),
    ("/a{1,/", "a{1,", True), ("/{foo}/", "{foo}", True), ("/}/", "}", True), ("/]/", "]", True),
    ("/a{0}b/", "b", True), ("/(?=a)*a/", "a", True), ("/a??b/", "ab", True),
    # classes
    ("/[a-]/", "-", True), ("/[-a]/", "-", True), ("/[\\d-z]/", "-", True), ("/[\\d-z]/", "m", False),
    ("/[^\\W]/", "_", True), ("/[^\\s\\S]/", "a", False), ("/[%--]/", ",", True),
    # groups and backreferences
    ("/(?<n>x)\\k<n>/", "xx", True), ("/(?<$a>x)\\k<$a>/", "xx", True),
    ("/(?<\\u0061>x)\\k<a>/", "xx", True), ("/\\1(a)/", "a", True), ("/(a)|\\1b/", "b", True),
    ("/(a\\1)/", "a", True), ("/(a)\\1/i", "aA", True), ("/(a)\\2/", "a\x02", True),
    ("/(?<=\\$)\\d+/", "$42", True), ("/(?<!\\$)\\b\\d+/", "$42", False),
    ("/(?<=a.+)z/", "abcz", True), ("/(?:ab)+c/", "ababc", True),
    # ES2025 modifiers and duplicate named groups in different alternatives
    ("/(?i:a)b/", "Ab", True), ("/(?i:a)b/", "AB", False), ("/(?-i:a)b/i", "aB", True),
    ("/(?-i:a)b/i", "AB", False), ("/(?m:^b)/", "a\nb", True), ("/(?s:.)/", "\n", True),
    ("/(?<a>x)|(?<a>y)/", "y", True), ("/(?:(?<a>x)|(?<a>y))\\k<a>/", "yy", True),
    # astral characters are two code units without u
    ("/^.$/", "😀", False), ("/^..$/", "😀", True), ("/^.$/u", "😀", True),
    ("/^[😀]$/", "😀", False), ("/^[😀]$/u", "😀", True), ("/😀+/", "😀\ude00", True),
])
def test_semantics(key: str, text: str, expected: bool) -> None:
    assert js_test(key, text) is expected


@pytest.mark.parametrize(("key", "text", "expected"), [
    ("/k/i", "K", True), ("/k/i", "\u212a", False), ("/\u212a/i", "k", False),
    ("/s/i", "\u017f", False), ("/\u017f/i", "S", False), ("/i/i", "\u0131", False),
    ("/\u0130/i", "i", False), ("/\u212b/i", "\u00e5", False), ("/\u00e5/i", "\u00c5", True),
    ("/\u2126/i", "\u03c9", False), ("/\u03c2/i", "\u03c3", True), ("/\u03d1/i", "\u03b8", True),
    ("/\u00b5/i", "\u03bc", True), ("/\u00df/i", "\u1e9e", False), ("/\u01c5/i", "\u01c6", True),
    ("/[a-z]+/i", "ABC", True), ("/[^k]/i", "K", False), ("/[\\w]/i", "\u212a", False),
    ("/\\u212a/iu", "k", True), ("/\u017f/iu", "s", True), ("/\u03c9/iu", "\u2126", True),
    ("/[^k]/iu", "K", False), ("/\\w/iu", "\u017f", True), ("/\\W/iu", "\u017f", False),
    ("/[\\W]/iu", "s", False), ("/i/iu", "\u0130", False), ("/I/iu", "\u0131", False),
    ("/\\w/iu", "\u0131", False), ("/\\W/iu", "\u0130", True), ("/\\bk/iu", "\u212a", True),
    ("/\u00df/iu", "\u1e9e", True), ("/\\p{Lu}/iu", "a", True),
])
def test_case_insensitive(key: str, text: str, expected: bool) -> None:
    assert js_test(key, text) is expected


def test_sticky_anchors_at_zero() -> None:
    rx = parse_regex_key("/b/y")
    assert rx is not None
    assert rx.test("ab") is False
    assert rx.test("ba") is True
    assert rx.search_span("ba") == (0, 1)


def test_global_flag_has_no_lasting_effect() -> None:
    rx = parse_regex_key("/a/g")
    assert rx is not None
    assert [rx.test("a"), rx.test("a"), rx.test("a")] == [True, True, True]


# --------------------------------------------------------------------------- spans

@pytest.mark.parametrize(("key", "text", "span"), [
    ("/cat/", "\x01the cat", (5, 8)),
    ("/dra+gon/i", "a DRAAGON!", (2, 9)),
    ("/b/", "😀😀b", (2, 3)),
    ("/b/u", "😀😀b", (2, 3)),
    ("/😀b/", "x😀b", (1, 3)),
    ("/x/", "abc", None),
    ("/\\b\\w+\\b/", "éab", (1, 3)),
])
def test_search_span(key: str, text: str, span: tuple[int, int] | None) -> None:
    rx = parse_regex_key(key)
    assert rx is not None
    assert rx.search_span(text) == span


# --------------------------------------------------------------------------- timeouts

def test_catastrophic_pattern_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jsregex, "REGEX_TIMEOUT_SECONDS", 0.1)
    nested = parse_regex_key("/(a+)+$/")
    assert nested is not None
    start = time.monotonic()
    assert nested.test("a" * 40 + "!") is False  # regex's safeguards answer this one quickly
    assert time.monotonic() - start < 1.0

    rx = parse_regex_key("/(a|aa)+$/")
    assert rx is not None
    before = timeout_count()
    start = time.monotonic()
    assert rx.test("a" * 60 + "!") is False
    assert time.monotonic() - start < 1.0
    assert rx.timed_out is True
    assert timeout_count() == before + 1
    assert rx.search_span("a" * 60 + "!") is None
    assert rx.timed_out is True
    with pytest.raises(RegexTimeout):
        rx.test("a" * 60 + "!", strict=True)
    assert rx.test("aa") is True
    assert rx.timed_out is False
