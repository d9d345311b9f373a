"""JavaScript value semantics the engine relies on, and macros and token counters."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lorescan import _js
from lorescan._compile import parse_decorators
from lorescan._macros import MacroEnv, substitute
from lorescan._model import Entry, Lorebook
from lorescan._tokens import Chars4, Words, get_counter


@pytest.mark.parametrize("value,expected", [
    (0, False), (0.0, False), ("", False), (None, False), (math.nan, False), (False, False),
    (1, True), ("0", True), ("false", True), ([], True), ({}, True), (-1, True),
])
def test_truthy(value, expected) -> None:
    assert _js.truthy(value) is expected


@pytest.mark.parametrize("value,expected", [(True, True), (1, True), ("1", True), (" 1 ", True),
                                            ("true", False), (2, False), (0, False), (None, False)])
def test_loose_equals_true(value, expected) -> None:
    assert _js.loose_eq_true(value) is expected


def test_math_round_and_trim_and_split() -> None:
    assert [_js.js_round(x) for x in (2.5, 3.5, -2.5, 12.5, 0.49)] == [3, 4, -2, 13, 0]
    assert _js.trim("\ufeff\u00a0 a b \u2029") == "a b"
    assert _js.trim("\x1c x \x85") == "\x1c x \x85"          # Python's strip would remove these
    assert _js.split_ws("a  b\u3000c") == ["a", "b", "c"]
    assert _js.split_ws(" a") == ["", "a"]


def test_object_key_order() -> None:
    keys = ["10", "b", "2", "01", "a", "-1", "0"]
    assert [keys[i] for i in _js.object_key_order(keys)] == ["0", "2", "10", "b", "01", "a", "-1"]


_UIDS = st.lists(st.one_of(st.integers(-3, 12), st.sampled_from([4294967294, 4294967295, 2**40]),
                           st.booleans(), st.floats(allow_nan=True), st.text("0123ab", max_size=3)),
                 max_size=12)


@given(_UIDS, st.booleans())
def test_scan_order_by_uid(uids: list, ascending: bool) -> None:
    """A book with no file keys reads its entries in ``Object.keys`` order of their uids as
    strings; the shortcut for ascending integer uids agrees with the general path."""
    if ascending:
        uids = sorted(u for u in uids if type(u) is int)
    book = Lorebook(name="b", entries=[Entry(uid=u, content=str(i)) for i, u in enumerate(uids)])
    stored = [e.uid for e in book.entries]    # as validated (a bool uid is read as a number)
    want = [str(i) for i in _js.object_key_order([_js.js_string(u) for u in stored])]
    assert [e.content for e in book.scan_order()] == want


def test_to_number_and_strings() -> None:
    assert _js.to_number("50") == 50 and _js.to_number(None) == 0 and _js.to_number(True) == 1
    assert math.isnan(_js.to_number("abc")) and _js.to_number("") == 0 and _js.to_number("0x10") == 16
    assert _js.js_string(3.0) == "3" and _js.js_string(None) == "undefined" and _js.js_string("u") == "u"
    assert _js.utf16_len("a🐉") == 3
    # JavaScript's .length: a code unit per BMP character and per lone surrogate, two per astral one
    assert [_js.utf16_len(t) for t in ("", "кот", "\ud800", "a\udfffb", "🐉🐉", "é\U00010000\uffff")] == [0, 3, 1, 3, 4, 4]


@pytest.mark.parametrize("value,expected", [
    (1.5, "1.5"), (123.456, "123.456"), (-0.0, "0"), (0.1, "0.1"), (1e-6, "0.000001"), (1.5e-7, "1.5e-7"),
    (1e-7, "1e-7"), (0.00001, "0.00001"), (1e21, "1e+21"), (1.25e22, "1.25e+22"), (1e20, "100000000000000000000"),
    (2.8387451299330625e20, "283874512993306250000"), (-5.558185274553575e16, "-55581852745535750"),
    (-2.5e-9, "-2.5e-9"), (math.inf, "Infinity"), (-math.inf, "-Infinity"), (math.nan, "NaN"),
    (123456789.125, "123456789.125"), (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
])
def test_number_string(value: float, expected: str) -> None:
    """``String(number)`` as JavaScript writes it (values checked against Node)."""
    assert _js.js_string(value) == expected


def test_macros() -> None:
    env = MacroEnv(user="Bob", char="Alice")
    assert substitute("{{char}} meets {{USER}}; <BOT> and <user> and <CHAR>", env) == \
        "Alice meets Bob; Alice and Bob and Alice"
    assert substitute("a{{newline}}b{{noop}}{{// note }}c", env) == "a\nbc"
    assert substitute("x\n{{trim}}\ny", env) == "xy"
    assert substitute("{{unknown}} {{random::a}}", env) == "{{unknown}} {{random::a}}"
    assert substitute("", env) == "" and substitute(None, env) == ""
    assert substitute("{{charIfNotGroup}}", env) == "Alice"


def _substitute_every_pattern(text: str | None, env: MacroEnv) -> str:
    """``substitute`` with every pattern run on every text (no test of its literal first)."""
    from functools import partial

    from lorescan import _macros as m

    if not text:
        return ""
    if "<" not in text and "{{" not in text:
        return text
    for pat, name in m._LEGACY:
        value = env.value(name)
        if env.dollar_patterns and "$" in value:
            text = pat.sub(partial(m._js_replacement, value), text)
        else:
            text = pat.sub(lambda _m, v=value: v, text)
    if "{{" not in text:
        return text
    text = m._NOOP.sub("", m._TRIM.sub("", m._NEWLINE.sub("\n", text)))
    for name, value in env.passes():
        text = m._macro_pattern(name).sub(lambda _m, v=value: v, text)
    text = m._REVERSE.sub(lambda mt: mt.group(1)[::-1], text)
    return m._COMMENT.sub("", text)


_MACRO_PIECES = ["{{", "}}", "<", ">", "user", "USER", "bot", "char", "CharIfNotGroup", "group", "newline",
                 "trim", "NoOp", "reverse:", "//", "\n", "\r", " ", "a", "$&", "$$", "K", "\u212a", "İ",
                 "{{user}}", "<BOT>", "{{noop}}", "{{trim}}", "{{reverse:ab}}", "{{// x }}", "{{description}}",
                 "{{no", "op}}", "{{tr", "im}}", "<us", "er>", "{{/", "/"]     # halves an earlier step may join


@settings(max_examples=600, deadline=None)
@given(pieces=st.lists(st.sampled_from(_MACRO_PIECES), max_size=12),
       user=st.sampled_from(["Bob", "<BOT>", "{{char}}", "$&x", "n{{noop}}", "{{reverse:"]),
       char=st.sampled_from(["Alice", "<USER>", "trim}}", "//}}", "K"]),
       dollar=st.booleans(), variables=st.booleans())
def test_macros_equal_every_pattern_run(pieces: list[str], user: str, char: str, dollar: bool,
                                         variables: bool) -> None:
    """Each pattern runs only where its literal is in the text as it stands: the same text as
    running every pattern, names holding macros, tokens made by an earlier step and letters that
    fold to ASCII included."""
    env = MacroEnv(user=user, char=char, dollar_patterns=dollar,
                   variables=(("description", "the {{user}}'s <char>"),) if variables else ())
    text = "".join(pieces)
    assert substitute(text, env) == _substitute_every_pattern(text, env)


@pytest.mark.parametrize("text,user,char,expected", [
    ("{{no{{trim}}op}}x", "Bob", "Al", "x"),              # removing {{trim}} makes a {{noop}}
    ("<BO<USER>", "T>", "Al", "Al"),                      # the user's name makes a <BOT>
    ("{{<USER>}}", "char", "Al", "Al"),                   # ... and a {{char}}
    ("{{reverse://{{}}x}}", "Bob", "Al", ""),             # reversing makes a comment
    ("{{reverse:ab}}<USER>", "Bob", "Al", "baBob"),
])
def test_a_step_may_make_the_next_ones_macro(text: str, user: str, char: str, expected: str) -> None:
    env = MacroEnv(user=user, char=char)
    assert substitute(text, env) == _substitute_every_pattern(text, env) == expected


def test_decorators() -> None:
    assert parse_decorators("@@activate\nHello") == (["@@activate"], "Hello")
    assert parse_decorators("@@activate") == (["@@activate"], "@@activate")
    assert parse_decorators("@@unknown\n@@@activate\nHi") == (["@@activate"], "Hi")
    assert parse_decorators("@@@activate\nHi") == ([], "Hi")
    assert parse_decorators("@@activate_now\nx") == (["@@activate_now"], "x")
    assert parse_decorators("plain @@activate") == ([], "plain @@activate")


def test_token_counters() -> None:
    assert Chars4().count("") == 0 and Chars4().count("abcde") == 2 and Chars4().count("🐉") == 1
    assert Words().count("a  b\tc\nd ") == 4 and Words().count("") == 0
    cl = get_counter("cl100k")
    assert cl.count("hello world") == 2 and cl.count("") == 0
    assert get_counter("cl100k-chat").count("hello world") == 8
    with pytest.raises(Exception, match="unknown tokenizer"):
        get_counter("gpt9")
