"""JavaScript RegExp semantics of ``lorescan._jsregex``.

Expected values were checked against V8 (Node 20), except the ES2025 modifier-group and
duplicate-named-group cases, which follow the specification (Chrome 125+, Firefox 132+).
"""

from __future__ import annotations

import string

import pytest

from lorescan import _jsregex
from lorescan._jsregex import JsRegex, JsRegexSyntaxError, RegexTimeout, parse_regex_key, timeout_count
from lorescan._jsregex_tables import js_case_table, js_cases, regex_cases


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


# Spans from Node 20.20 (V8 11.3, Unicode 17): ``re.exec(text)`` → (index, index + length) or None.
@pytest.mark.parametrize(("key", "text", "span"), [
    # literal runs with k, s, i (regex also folds the Kelvin sign, long s, dotted/dotless i into them)
    ("/knight/i", "KNIGHT", (0, 6)), ("/knight/i", "kNiGhT", (0, 6)), ("/knight/i", "\u212anight", None),
    ("/knight/i", "kn\u0130ght", None), ("/knight/i", "kn\u0131ght", None), ("/KNIGHT/i", "a knight", (2, 8)),
    ("/kiss/i", "KISS", (0, 4)), ("/kiss/i", "ki\u017fs", None), ("/kiss/i", "K\u0130SS", None),
    ("/kiss/i", "k\u0131ss", None), ("/Sis/i", "\u017fis sIS", (4, 7)), ("/ink/i", "IN\u212a Ink", (4, 7)),
    ("/kni+ght|sword/i", "KNIIIGHT", (0, 8)), ("/kni+ght|sword/i", "kn\u0131ght \u017fword", None),
    ("/kni+ght|sword/i", "a \u212anight, a SWORD", (12, 17)),
    ("/sword|knight/i", "\u212anight KNIGHT", (7, 13)),
    ("/\\bdrag(?:on|oness)\\b/i", "The DRAGONESS flew", (4, 13)),
    ("/\\bdrag(?:on|oness)\\b/i", "dragons", None), ("/\\bdrag(?:on|oness)\\b/i", "a DRAGON.", (2, 8)),
    ("/\\bdrag(?:on|oness)\\b/i", "dragone\u017fs", None), ("/\\b(?:dragon|wyrm)s?\\b/i", "WYRMS", (0, 5)),
    ("/\\b(?:dragon|wyrm)s?\\b/i", "wyrm\u017f", (0, 4)),
    ("/\\b(?:dragon|wyrm)s?\\b/i", "wyrms\u212a", (0, 5)), ("/DrAgOn/i", "xdragon", (1, 7)),
    ("/stra\u00dfe/i", "STRA\u1e9eE", None), ("/stra\u00dfe/i", "STRA\u00dfE", (0, 6)),
    # non-ASCII: V8's classes (Unicode 17) and pairs regex adds (Ohm/Angstrom signs, ẞ, ϴ, ﬅ/ﬆ)
    ("/\u00b5/i", "\u039c", (0, 1)), ("/\u03c3/i", "\u03c2", (0, 1)), ("/\u03c2/i", "\u03a3", (0, 1)),
    ("/\u01c5/i", "\u01c4", (0, 1)), ("/\u0264/i", "\ua7cb", (0, 1)), ("/\ua7dc/i", "\u019b", (0, 1)),
    ("/\u2126/i", "\u03c9", None), ("/\u03a9/i", "\u2126", None), ("/\u00e5/i", "\u212b", None),
    ("/\u03b8/i", "\u03f4", None), ("/\u03b8/i", "\u03d1", (0, 1)), ("/\ufb05/i", "\ufb06", None),
    ("/\u0432\u043e\u043b\u043a/i", "\u1c80\u041e\u041b\u041a", (0, 4)), ("/\u017f/i", "S", None),
    ("/\u017f/i", "\u017f", (0, 1)), ("/\u212a/i", "k", None), ("/\u0130/i", "i", None),
    ("/I/i", "\u0131", None), ("/\\u212aelvin/i", "KELVIN \u212aELVIN", (7, 13)),
    ("/\u1e9e/i", "\u00df", None), ("/\u1e61/i", "\u1e9b", (0, 1)),
    # classes
    ("/[a-z]+/i", "K\u212aK", (0, 1)), ("/[k-s]+/i", "\u017fKS", (1, 3)), ("/[^k]/i", "K\u212a", (1, 2)),
    ("/\\w+/i", "\u017fkK", (1, 3)), ("/[\u212a\u017f]/i", "ks", None), ("/[^\\W]+/i", "\u0131Is", (1, 3)),
    ("/[\u03c3]/i", "\u03a3", (0, 1)),
    # u with i: simple case folding, where U+0130 and U+0131 fold to themselves and I to i
    ("/i/iu", "BLESSING", (5, 6)), ("/blessing/iu", "BLESSING!", (0, 8)), ("/i/iu", "\u0130\u0131Ii", (2, 3)),
    ("/\\w+/iu", "I!", (0, 1)), ("/\\bi\\b/iu", "a I b", (2, 3)), ("/[h-j]/iu", "I", (0, 1)),
    ("/[^\\W]/iu", "\u0131I", (1, 2)), ("/i/iu", "\u0130", None), ("/i/iu", "\u0131", None),
    ("/x\\B/iu", "xI", (0, 1)),
    # \b and \B
    ("/\\bk/i", "\u212ak", (1, 2)), ("/k\\b/i", "k\u212a", (0, 1)), ("/\\Bs/i", "\u017fS", None),
    ("/\\bis\\b/i", "th\u0131s IS", (5, 7)),
    # backreferences (on texts without the Kelvin sign, long s, İ or ı: see the module docstring)
    ("/(k)\\1/i", "kK", (0, 2)), ("/(s)\\1/i", "sS", (0, 2)), ("/(ab)\\1/i", "abAB", (0, 4)),
    ("/(?<x>i)\\k<x>/i", "iI", (0, 2)), ("/(dragon)\\s+\\1/i", "Dragon DRAGON", (0, 13)),
    # lookbehind and lookahead around runs
    ("/(?<=kis)s/i", "KISS", (3, 4)), ("/(?<=kis)s/i", "\u212aISS", None), ("/(?<!k)s/i", "\u212as", (1, 2)),
    ("/a(?=ki)/i", "aK\u0130 aKI", (4, 5)),
    # without i: alternatives are tried one by one by test()
    ("/dragon|wyrm/", "WYRM wyrm", (5, 9)), ("/\\b(?:cat|dog)s?\\b/", "hotdogs dogs", (8, 12)),
    ("/b|a/y", "ab", (0, 1)), ("/x|a/y", "ba", None), ("/^(?:a|b)c|d/m", "x\nbc", (2, 4)),
])
def test_case_insensitive_spans_from_node(key: str, text: str, span: tuple[int, int] | None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    rx = parse_regex_key(key)
    assert rx is not None
    assert rx.search_span(text) == span
    assert rx.test(text) is (span is not None)
    monkeypatch.setattr(_jsregex, "_SPLIT_AT", 0)  # test() as on a long text: alternatives one by one
    assert rx.test(text) is (span is not None)


def test_case_classes_are_v8s() -> None:
    keys, eq = js_case_table()
    assert len(keys) == len(eq) == 2313  # code units with case partners in Node 20.20
    assert js_cases(ord("k")) == {ord("k"), ord("K")} and js_cases(0x212A) == {0x212A}
    assert js_cases(0x3C3) == {0x3A3, 0x3C2, 0x3C3} and js_cases(0x264) == {0x264, 0xA7CB}
    assert js_cases(0xB5) == {0xB5, 0x39C, 0x3BC} and js_cases(0xDF) == {0xDF}
    for ch in string.ascii_letters + "µßåæéσςθωжвѣǅ\u212a\u017f\u0130\u0131":  # regex folds as much or more
        assert js_cases(ord(ch)) <= regex_cases(ord(ch))


def test_literal_runs_are_scoped_case_insensitive_groups() -> None:
    # one (?i:…) per run (regex searches those fast); explicit sets only where regex folds wider
    assert JsRegex("dragon", "i").py_pattern == "(?i:dragon)"
    assert JsRegex(r"\bdrag(?:on|oness)\b", "i").py_pattern == (
        r"(?a:\b)(?i:drag)(?:(?i:on)|(?i:oness)(?<=[Ss][Ss]))(?a:\b)")
    assert JsRegex("a-k+", "i").py_pattern == "(?i:a\\x2d)[Kk]+"
    assert JsRegex("knight", "").py_pattern == "knight"


def test_alternatives_share_one_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_jsregex, "REGEX_TIMEOUT_SECONDS", 0.1)
    rx = parse_regex_key("/(a|aa)+$|(b|bb)+$|c/")  # long texts: one search per alternative
    assert rx is not None
    given: list[tuple[float, bool]] = []     # each alternative's time limit, and whether it ran out

    def recording(run):  # type: ignore[no-untyped-def]
        def search(text: str, timeout: float):  # type: ignore[no-untyped-def]
            try:
                found = run(text, timeout=timeout)
            except TimeoutError:
                given.append((timeout, True))
                raise
            given.append((timeout, False))
            return found
        return search

    rx._whole = tuple(recording(run) for run in rx._one())       # a short text: the whole pattern
    rx._tests = tuple(recording(run) for run in rx._tests)      # a long one: each alternative
    for text, searches in (("a" * 60 + "!", 1), ("a" * 300 + "!", 3)):
        given.clear()
        before = timeout_count()
        assert rx.test(text) is False
        assert rx.timed_out is True and timeout_count() == before + 1
        # the first search spends the whole limit; the alternatives after it share what is left: nothing
        assert len(given) == searches and given[0] == (pytest.approx(0.1, abs=0.01), True)
        assert [limit for limit, _ in given[1:]] == [1e-6] * (searches - 1)
    assert rx.test("aac") is True and rx.timed_out is False
    assert rx.test("x" * 300 + "c") is True and rx.timed_out is False
    assert rx.search_span("xbb") == (1, 3)


def test_repeated_texts_keep_their_utf16_view() -> None:
    rx = parse_regex_key("/^..b$/")
    assert rx is not None
    text = "\U0001f600b"
    again = "".join(["\U0001f600", "b"])  # equal, but another object
    assert [rx.test(text), rx.test(text), rx.test(again), rx.test("\u00e9b")] == [True, True, True, False]
    assert rx.search_span(text) == (0, 2)


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
    assert nested.test("a" * 40 + "!") is False  # regex's safeguards answer this one quickly:
    assert nested.timed_out is False               # well within the limit

    rx = parse_regex_key("/(a|aa)+$/")
    assert rx is not None
    before = timeout_count()
    assert rx.test("a" * 60 + "!") is False        # given up at the limit
    assert rx.timed_out is True
    assert timeout_count() == before + 1
    assert rx.search_span("a" * 60 + "!") is None
    assert rx.timed_out is True
    with pytest.raises(RegexTimeout):
        rx.test("a" * 60 + "!", strict=True)
    assert rx.test("aa") is True
    assert rx.timed_out is False


def test_the_bmp_string_case_classes_are_searched_in_is_every_code_unit_once() -> None:
    from lorescan._jsregex_tables import _bmp

    bmp = _bmp()
    assert len(bmp) == 0x10000
    assert bmp == "".join(map(chr, range(0x10000)))      # lone surrogates kept, none paired


#: 200 nested groups: JavaScript takes the pattern, the ``regex`` module refuses it (its parser's
#: recursion), so the key is matched as plain text; its literal ``wombat`` prefilters it either way,
#: and its matches stay within a piece of scan text (it is ``local``)
_NESTED = "(?:" * 200 + "x" + ")" * 200
_REFUSED_ON_COMPILE = f"/wombat{_NESTED}/"


def test_the_refused_keys_here_are_local_and_prefiltered() -> None:
    from lorescan._jsregex import translate_regex_key
    from lorescan._match import regex_key_source
    from lorescan._prefilter import required_literals

    for key, literals in ((_REFUSED_ON_COMPILE, ("wombat",)), (f"/wom(?:bat|ble){_NESTED}/", ("wombat", "womble"))):
        translated = translate_regex_key(key)
        assert translated is not None and translated.local and parse_regex_key(key) is None
        assert required_literals(*regex_key_source(key)) == literals     # type: ignore[misc]


@pytest.mark.parametrize("c_steps", [True, False])
def test_a_regex_key_refused_when_compiled_is_plain_text_in_a_kept_lore(c_steps: bool) -> None:
    import lorescan
    from lorescan import _index

    assert parse_regex_key(_REFUSED_ON_COMPILE) is None
    book = lorescan.Lorebook.from_entries("w", [
        {"uid": 0, "key": [_REFUSED_ON_COMPILE], "content": "refused"},
        {"uid": 1, "key": ["wombat"], "content": "plain wombat"},
        {"uid": 2, "key": ["ash"], "keysecondary": [_REFUSED_ON_COMPILE], "selective": True,
         "selectiveLogic": 2, "content": "ash, not the key"}])
    chats = ["nothing here", "a wombat and ash here", f"the key {_REFUSED_ON_COMPILE} typed, and ash",
             "a wombat again, ash"]
    native = _index.native
    _index.native = native if c_steps else None
    try:
        kept = lorescan.compile([book], tokenizer="chars4")
        got = [kept.activate([lorescan.ChatMessage(name="U", is_user=True, mes=m)]).activated_keys() for m in chats]
        fresh = [lorescan.compile([book], tokenizer="chars4").activate(
            [lorescan.ChatMessage(name="U", is_user=True, mes=m)]).activated_keys() for m in chats]
    finally:
        _index.native = native
    assert got == fresh == [[], ["w.1", "w.2"], ["w.0", "w.1"], ["w.1", "w.2"]]


def test_a_regex_key_is_compiled_when_a_piece_first_holds_a_literal_of_it() -> None:
    """An entry's gate record asks whether its regex keys are searched piece by piece; that is read
    from the translation, and the regex module compiles the key only where one of its literals is."""
    import lorescan
    from lorescan._jsregex import translate_regex_key

    key = "/q+uokkas?/i"
    book = lorescan.Lorebook.from_entries("w", [{"uid": 0, "key": ["wombat", key], "content": "marsupials"}])
    lore = lorescan.compile([book], tokenizer="chars4")
    say = [lorescan.ChatMessage(name="U", is_user=True, mes="a wombat")]
    assert lore.activate(say).activated_keys() == ["w.0"]
    translated = translate_regex_key(key)
    assert translated is not None and translated.local and translated._tests is None    # not compiled
    say = [lorescan.ChatMessage(name="U", is_user=True, mes="a QQuokka!")]
    assert lore.activate(say).activated_keys() == ["w.0"]
    assert translated._tests is not None and parse_regex_key(key) is translated


@pytest.mark.parametrize("c_steps", [True, False])
def test_a_refused_regex_key_whose_text_holds_no_literal_is_plain_text(c_steps: bool) -> None:
    """Its literals (``wombat``, ``womble``) are not in its own text, so a needle of the text (``wom``)
    is a needle of the key's too: a piece holding it compiles the regex, which dies there, before
    any piece has held a literal (the first chat asks whether the key is searched piece by piece)."""
    import lorescan
    from lorescan import _index

    key = f"/wom(?:bat|ble){_NESTED}/"
    assert parse_regex_key(key) is None
    book = lorescan.Lorebook.from_entries("w", [{"uid": 0, "key": ["quokka", key], "content": "refused"},
                                                {"uid": 1, "key": [key], "content": "refused alone"}])
    chats = ["a quokka", f"the key {key} typed", "a wombat, a quokka", "a womble"]
    native = _index.native
    _index.native = native if c_steps else None
    try:
        lore = lorescan.compile([book], tokenizer="chars4")
        got = [lore.activate([lorescan.ChatMessage(name="U", is_user=True, mes=m)]).activated_keys() for m in chats]
    finally:
        _index.native = native
    assert got == [["w.0"], ["w.0", "w.1"], ["w.0"], []]


def test_a_refused_key_whose_text_was_scanned_before_its_entry_was_met_is_plain_text() -> None:
    """A piece's hits are remembered: the piece holding the key's own text is where the key is
    found refused, whether or not its entry has been read by then."""
    import lorescan

    key = f"/wom(?:bat|ble){_NESTED}/"
    book = lorescan.Lorebook.from_entries("w", [{"uid": 0, "key": ["quokka", key], "scanDepth": 1,
                                                 "content": "refused"}])
    lore = lorescan.compile([book], tokenizer="chars4")
    typed = lorescan.ChatMessage(name="U", is_user=True, mes=f"the key {key} typed")
    filler = lorescan.ChatMessage(name="C", mes="and then nothing")
    assert lore.activate([typed, filler]).activated_keys() == []      # it reads only the newest message
    assert lore.activate([filler, typed]).activated_keys() == ["w.0"]
