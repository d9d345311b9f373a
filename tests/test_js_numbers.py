"""Numbers and strings as JavaScript has them: ``Number()``, ``String()``, ``+``, ``<``, the sort
of delay levels, ``JSON.stringify`` and the entry hash. Every expected value was produced by Node."""

from __future__ import annotations

import json
import math

import pytest

from lorescan import Lorebook, _js
from lorescan._compile import compile_books, cyrb53

NINES = "9" * 309            # a JSON integer beyond the largest double: Infinity in JavaScript


@pytest.mark.parametrize("text,expected", [
    ("", "0"), (" 12 ", "12"), ("1e400", "Infinity"), ("-1e400", "-Infinity"), ("Infinity", "Infinity"),
    ("-Infinity", "-Infinity"), ("+Infinity", "Infinity"), ("infinity", "NaN"), ("inf", "NaN"), ("NaN", "NaN"),
    ("0x1F", "31"), ("-0x1F", "NaN"), ("0o17", "15"), ("0b101", "5"), ("1_000", "NaN"), ("１２", "NaN"),
    ("1.", "1"), (".5", "0.5"), (".", "NaN"), ("+.5e3", "500"), ("5e", "NaN"), ("1e-400", "0"),
    ("\u00a012\u3000", "12"), ("\x1c5", "NaN"), ("12\x85", "NaN"), (NINES, "Infinity"), ("00012", "12"),
    ("Infinityx", "NaN"), ("true", "NaN"), ("null", "NaN"), ("\ufeff7", "7"), ("0x" + "f" * 300, "Infinity"),
])
def test_number_of_a_string(text: str, expected: str) -> None:
    assert _js.number_string(_js.to_number(text)) == expected


@pytest.mark.parametrize("value,expected", [
    ([], "0"), ([5], "5"), ([True], "NaN"), ([None], "0"), ([[1]], "1"), ([1, 2], "NaN"), ([" 7 "], "7"),
    (["x"], "NaN"), ({}, "NaN"), (None, "0"), (True, "1"), (10**400, "Infinity"), (-10**400, "-Infinity"),
    (int(NINES), "Infinity"), (2**53 + 1, "9007199254740992"), (float("nan"), "NaN"),
])
def test_number_of_other_values(value: object, expected: str) -> None:
    assert _js.number_string(_js.to_number(value)) == expected


def test_a_huge_integer_never_overflows() -> None:
    """Python's ``float(int)`` raises ``OverflowError``; JavaScript reads such a literal as Infinity."""
    assert _js.to_number(10**5000) == math.inf and _js.int_to_number(-(10**400)) == -math.inf
    assert _js.js_string(10**400) == "Infinity" and _js.js_string(2**60) == "1152921504606847000"
    assert _js.js_string(123456789012345678901234567890) == "1.2345678901234568e+29"
    assert _js.js_string([1, None, [2, "x"], True]) == "1,,2,x,true" and _js.js_string({}) == "[object Object]"


@pytest.mark.parametrize("a,b,total,lt,le", [
    (0, "5", "05", True, True), ("05", 100, "05100", True, True), (1, True, 2, False, True),
    (None, 3, 3, True, True), ([1, 2], 3, "1,23", False, False), ({}, 1, "[object Object]1", False, False),
    ("a", "b", "ab", True, True), ("10", "9", "109", True, True), (1.5, None, 1.5, False, False),
    ("\uffff", "\U0001f600", "\uffff\U0001f600", False, False),
])
def test_plus_and_comparisons(a: object, b: object, total: object, lt: bool, le: bool) -> None:
    """``a + b`` joins strings when one side is one; two strings compare by UTF-16 code units."""
    assert _js.add(a, b) == total
    assert _js.less_than(a, b) is lt and _js.less_equal(a, b) is le


def test_delay_levels_sort_as_javascript_sorts_them() -> None:
    """``[...new Set(levels)].sort((a, b) => a - b)``: a string and a number stay two levels, and
    values that subtract to NaN count as equal (V8's merge sort, run in Node)."""
    assert _js.ascending_set([2.0, "2", 1.0, 2.0]) == [1.0, 2.0, "2"]
    assert _js.ascending_set(["10", "9", 3.0]) == [3.0, "9", "10"]
    assert _js.ascending_set([5.0, "abc", 1.0, math.inf, "Infinity", -1.0]) == [5.0, "abc", -1.0, 1.0, math.inf,
                                                                                 "Infinity"]


def test_json_stringify() -> None:
    """Keys in ``Object.keys`` order, numbers as JavaScript writes them, lone surrogates escaped."""
    text = ('{"uid":3,"2":"x","key":["hello"],"content":"a\\udc00\\ud83d\\ude00b","order":' + NINES
            + ',"extensions":{"10":1e400,"a":[1.5,-0,9007199254740993]}}')
    want = ('{"2":"x","uid":3,"key":["hello"],"content":"a\\udc00\U0001f600b","order":null,'
            '"extensions":{"10":null,"a":[1.5,0,9007199254740992]}}')
    assert _js.json_stringify(json.loads(text)) == want
    assert _js.json_stringify(["\ud800", "\U0001f600", "\x01\t\"\\", math.nan, -math.inf]) == \
        '["\\ud800","\U0001f600","\\u0001\\t\\"\\\\",null,null]'
    # a pair held as two code points is a character to JavaScript: written as it is
    assert _js.json_stringify("\ud83d\ude00\udc00") == '"\ud83d\ude00\\udc00"'


@pytest.mark.parametrize("entry,expected", [
    ('{"uid":0,"key":["hello"],"content":"X","sticky":1,"comment":"\\ud800"}', 3504655518444527),
    ('{"uid":0,"key":["hello"],"content":"X","sticky":1,"depth":1e999}', 3695660773191522),
    ('{"uid":3,"2":"x","key":["hello"],"content":"a\\udc00\\ud83d\\ude00b","sticky":1,"order":' + NINES
     + ',"extensions":{"10":1e400,"a":[1.5,-0,9007199254740993]}}', 3658668922981340),
    ('{"uid":7,"key":["\\udfff"],"content":"X","cooldown":"Infinity","probability":1e21,"delay":-1e-7}',
     4565095264691356),
])
def test_entry_hash_is_sillytaverns(entry: str, expected: int) -> None:
    """``getStringHash(JSON.stringify(entry))`` over UTF-16 code units, lone surrogates included,
    with infinite numbers written as ``null`` (SillyTavern's loader, run in Node)."""
    book = Lorebook.from_entries("b", [json.loads(entry)])
    ((_, (ce,)),) = compile_books([book])
    assert ce.st_hash == expected


def test_cyrb53_counts_code_units() -> None:
    assert cyrb53("a\ud800") != cyrb53("a") and cyrb53("\U0001f600") == cyrb53("\ud83d\ude00")


def test_an_at_depth_group_holds_its_depth_and_role_as_javascript_numbers() -> None:
    """SillyTavern's group keeps the entry's depth and role as ``JSON.parse`` read them: an integer
    beyond 2**53 is the nearest double (2**53 + 1 reads as 2**53, 2**53 + 3 as 2**53 + 4), so two
    entries whose depths read alike share a group. What Node printed for this scenario under
    SillyTavern 1.12.6's own code."""
    from lorescan import run_scenario

    entries = [{"uid": 0, "key": ["alpha"], "content": "a", "position": 4, "depth": 2**53 + 1, "role": 2**53 + 3},
               {"uid": 1, "key": ["alpha"], "content": "b", "position": 4, "depth": 2**53, "role": 2**53 + 4},
               {"uid": 2, "key": ["alpha"], "content": "c", "position": 4, "depth": -(2**53) - 1}]
    got = run_scenario({"entries": entries, "chat": [{"name": "U", "is_user": True, "mes": "alpha"}],
                        "settings": {"world_info_depth": 2}}, version="1.12")
    assert got["depth"] == [{"depth": 9007199254740992, "role": 9007199254740996, "entries": ["b", "a"]},
                            {"depth": -9007199254740992, "role": 0, "entries": ["c"]}]
    assert json.dumps(got["depth"][0]["role"]) == "9007199254740996.0" and got["depth"][1]["role"] == 0
