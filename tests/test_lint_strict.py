"""lint: entry values of the wrong type, and regex keys prone to catastrophic backtracking."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lorescan import load
from lorescan._lint import CODES, Finding, lint
from lorescan._redos import bound, catastrophic

from .conftest import ROOT
from .test_lint import book, found


def only(b: Any, *codes: str, **kwargs: Any) -> list[Finding]:
    return [f for f in lint([b], tokenizer="chars4", **kwargs) if f.code in codes]


def test_order_that_is_not_a_number() -> None:
    b = book({"key": ["a1"], "order": "high"}, {"key": ["a2"], "order": "50"}, {"key": ["a3"], "order": None},
             {"key": ["a4"], "order": 7}, {"key": ["a5"], "order": 2.5})
    assert found(b) == [("not-a-number", 0, "order"), ("not-a-number", 1, "order"), ("not-a-number", 2, "order")]
    high, fifty, null = only(b, "not-a-number")
    assert high.severity == "warning" and "b.order - a.order" in high.message and "NaN" in high.message
    assert "lorescan sorts as V8" in high.message
    assert (fifty.severity, null.severity) == ("info", "info")
    assert fifty.message.endswith("reads it as 50") and null.message.endswith("reads it as 0")
    # the entry still loads with its raw value: SillyTavern reads it raw too
    assert b.entries[0].order == "high"


def test_flags_that_are_strings_or_numbers() -> None:
    b = book({"key": ["a1"], "constant": "false"}, {"key": ["a2"], "selective": "true", "keysecondary": ["x"]},
             {"key": ["a3"], "useProbability": 0}, {"key": ["a4"], "caseSensitive": "no"},
             {"key": ["a5"], "preventRecursion": 2}, {"key": ["a6"], "ignoreBudget": "yes"},
             {"key": ["a7"], "excludeRecursion": False, "caseSensitive": None})
    got = [(f.uid, f.field, f.severity) for f in only(b, "not-a-boolean")]
    assert got == [(0, "constant", "warning"), (1, "selective", "info"), (2, "useProbability", "info"),
                   (3, "caseSensitive", "warning"), (4, "preventRecursion", "warning"), (5, "ignoreBudget", "info")]
    constant = only(b, "not-a-boolean")[0]
    assert "as true, so the entry is constant: it activates on every generation" in constant.message
    assert "never rolls: it always passes" in only(b, "not-a-boolean")[2].message
    # 1.12 has no ignoreBudget: nothing to say about it there
    assert [f.field for f in only(b, "not-a-boolean", compat="1.12")][-1] == "preventRecursion"


def test_disable_compares_with_loose_equality() -> None:
    b = book({"key": ["a1"], "disable": "true"}, {"key": ["a2"], "disable": 2}, {"key": ["a3"], "disable": "0"},
             {"key": ["a4"], "disable": "1"}, {"key": ["a5"], "disable": False})
    assert found(b) == [("not-a-boolean", 0, "disable"), ("not-a-boolean", 1, "disable"),
                        ("not-a-boolean", 2, "disable"), ("disabled", 3, "disable")]
    words, two, zero = only(b, "not-a-boolean")
    assert "disable == true, which is false for it, so the entry is enabled although" in words.message
    assert (words.severity, two.severity, zero.severity) == ("warning", "warning", "info")


def test_at_depth_entries_and_their_depth_and_role() -> None:
    b = book({"key": ["a1"], "position": 4, "depth": "deep"}, {"key": ["a2"], "position": 4, "depth": "2"},
             {"key": ["a3"], "position": 4, "role": "user"}, {"key": ["a4"], "position": 4, "depth": None},
             {"key": ["a5"], "position": 0, "depth": "deep", "role": "user"},
             {"key": ["a6"], "position": 4, "role": None, "depth": 0})
    assert found(b) == [("not-a-number", 0, "depth"), ("not-a-number", 1, "depth"), ("not-a-number", 2, "role"),
                        ("not-a-number", 3, "depth")]
    deep, two, user, null = only(b, "not-a-number")
    assert "Number(\"deep\") = NaN" in deep.message and "never reaches the prompt" in deep.message
    assert "at depth 2" in two.message and "a group of its own" in two.message and two.severity == "warning"
    assert "never reaches the prompt" in user.message
    assert "injected at depth 0 (Number(null))" in null.message


def test_group_weight_scan_depth_timed_effects_and_probability() -> None:
    b = book({"key": ["a1"], "group": "g", "groupWeight": "50"}, {"key": ["a2"], "group": "g", "groupWeight": None},
             {"key": ["a3"], "scanDepth": "abc"}, {"key": ["a4"], "scanDepth": "3"},
             {"key": ["a5"], "sticky": "abc", "cooldown": "3", "delay": "soon"},
             {"key": ["a6"], "probability": "50"}, {"key": ["a7"], "probability": True},
             {"key": ["a8"], "probability": "abc"}, {"key": ["a9"], "groupWeight": "50"})
    assert found(b) == [
        ("not-a-number", 0, "groupWeight"), ("not-a-number", 2, "scanDepth"), ("not-a-number", 3, "scanDepth"),
        ("not-a-number", 4, "sticky"), ("not-a-number", 4, "cooldown"), ("not-a-number", 4, "delay"),
        ("not-a-number", 5, "probability"), ("not-a-number", 6, "probability"),
        ("probability-zero", 7, "probability")]            # a weight outside any group is never read
    weight, nan_depth, three, sticky, cooldown, delay, fifty, true = only(b, "not-a-number")
    assert '"10050"' in weight.message and weight.severity == "warning"
    assert "slice(0, NaN)" in nan_depth.message and three.severity == "info"
    assert sticky.message.endswith("so it never ends") and cooldown.message.endswith("converts it to 3")
    assert delay.message.endswith("the entry is never delayed")
    assert fifty.severity == "info" and "at most 50 %" in fifty.message
    assert true.severity == "warning" and "at most 1 %" in true.message


def test_a_group_that_is_a_number_stops_sillytavern() -> None:
    b = book({"key": ["a1"], "group": 5}, {"key": ["a2"], "group": 0})
    assert found(b) == [("not-a-string", 0, "group")]
    f = only(b, "not-a-string")[0]
    assert f.severity == "error" and "group.split()" in f.message and "TypeError" in f.message
    assert f.fix == 'write the group name as a string: group: "5"'


def test_codes_are_listed() -> None:
    assert {"not-a-number", "not-a-boolean", "not-a-string", "regex-catastrophic"} <= set(CODES)


def _write(tmp_path: Path, entries: list[dict[str, Any]]) -> str:
    path = tmp_path / "book.json"
    path.write_text(json.dumps({"entries": {str(i): {"uid": i, "matchWholeWords": True, "content": "x", **e}
                                            for i, e in enumerate(entries)}}), encoding="utf-8")
    return str(path)


def test_cli_lint_flags_an_order_that_is_not_a_number(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"key": ["dragon"], "order": "high"}, {"key": ["wyvern"], "order": 10}])
    before = Path(path).read_bytes()
    out = subprocess.run([sys.executable, "-m", "lorescan", "lint", path, "--json"], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr                 # a warning, not an error
    findings = json.loads(out.stdout)
    assert [(f["code"], f["uid"], f["field"], f["severity"]) for f in findings] == [
        ("not-a-number", 0, "order", "warning")]
    assert "NaN" in findings[0]["message"]
    assert Path(path).read_bytes() == before                # the input is not modified
    assert load(path).books[0].entries[0].order == "high"   # and it still loads


# -- regex keys prone to catastrophic backtracking ---------------------------------------------------

#: (pattern, flags, the repetition reported). Each hangs V8 on a few dozen characters (checked by hand
#: with node; not timed here): a repetition that matches the same text in many ways, then a failure.
CATASTROPHIC = [
    ("(a+)+$", "", "(a+)+"), ("^(a+)+$", "", "(a+)+"), ("(a*)*b", "", "(a*)*"), ("(a|aa)+$", "", "(a|aa)+"),
    ("(a|a)*b", "", "(a|a)*"), ("(\\w|\\d)+!", "", "(\\w|\\d)+"), ("(a|[a-c])+$", "", "(a|[a-c])+"),
    ("(.*a){5}x", "", "(.*a){5}"), ("(.*,)+x", "", "(.*,)+"), ("(\\w+\\s?)+$", "", "(\\w+\\s?)+"),
    ("(\\s*\\w+)*$", "", "(\\s*\\w+)*"), ("(x+x+)+y", "", "(x+x+)+"), ("(\\d+)*\\.", "", "(\\d+)*"),
    ("(a+)+\\b", "", "(a+)+"), ("([a-z]+)+[0-9]", "", "([a-z]+)+"), ("(a{1,2})+$", "", "(a{1,2})+"),
    ("(\\w+\\s*){2,5}$", "", "(\\w+\\s*){2,5}"), ("(?=(a+)+b)", "", "(a+)+"), ("((a+)+x)*", "", "(a+)+"),
    ("(A+)+$", "i", "(A+)+"), ("(a+)+B", "i", "(a+)+"), ("(?i:A+)+b", "", "(?i:A+)+"),
    ("(\\p{L}+\\s?)+$", "u", "(\\p{L}+\\s?)+"), ("(?<w>a+)+\\k<w>$", "", "(?<w>a+)+"),
    ("\\b(?:[a-z]+\\s*)+\\.", "i", "(?:[a-z]+\\s*)+"),
]

#: Look-alikes that backtrack only a little: one way to match, or nothing after that can fail.
SAFE = [
    "(ab)+", "a+b+", "(ab+)+$", "(a|ab)+$", "(\\w+\\s)+$", "(a|b)*c", "(a?)+$", "(a+){2}$", ".*foo.*",
    "(a+)+", "(.*a){5}", "(\\w+\\s*){2,5}", "\\b(dragon|wyrm)s?\\b", "(\\d{1,3}\\.){3}\\d{1,3}",
    "\\b(?:\\w+\\s+){0,3}dragon", "[a-z]+@[a-z]+\\.com", "(\\[a\\])+$", "(?:red|blue) dragon", "(|a)+$",
]


@pytest.mark.parametrize("pattern, flags, part", CATASTROPHIC)
def test_catastrophic_repetitions_are_found(pattern: str, flags: str, part: str) -> None:
    assert catastrophic(pattern, flags) == part


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_look_alikes_are_not_reported(pattern: str) -> None:
    assert catastrophic(pattern) is None


def test_case_folding_decides_overlap() -> None:
    assert catastrophic("(a|A)+$") is None and catastrophic("(a|A)+$", "i") == "(a|A)+"
    assert catastrophic("(a|B)+$", "i") is None and catastrophic("(?i:a|A)+$") == "(?i:a|A)+"
    assert [bound(p) for p in ("(a+)+", "(.*a){5}", "(x){2,7}", "(x){3,}")] == [None, 5, 7, None]


def test_lint_reports_catastrophic_regex_keys() -> None:
    b = book({"key": ["/(a+)+$/"]}, {"key": ["dragon"], "keysecondary": ["/(\\w+\\s?)+!/i"]},
             {"key": ["/(ab)+/", "/a+b+/"]}, {"key": ["/(\\w+\\s*){2,5}$/"]}, {"key": ["/(a+)+$/"], "constant": True})
    assert found(b) == [("regex-catastrophic", 0, "key[0]"), ("regex-catastrophic", 1, "keysecondary[0]"),
                        ("regex-catastrophic", 3, "key[0]")]
    first, second, bounded = only(b, "regex-catastrophic")
    assert first.severity == "warning"
    assert first.message.startswith('"/(a+)+$/" can take exponential time: the repetition (a+)+ can match')
    assert "freeze SillyTavern" in first.message and "0.25 s" in first.message
    assert "(\\w+\\s?)+" in second.message
    assert "to the power 5" in bounded.message
    assert "a+ for (a+)+" in first.fix


def test_cli_lint_warns_about_a_catastrophic_regex_key(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"key": ["/(a+)+$/"]}, {"key": ["/(ab)+/"]}])
    out = subprocess.run([sys.executable, "-m", "lorescan", "lint", path, "--json"], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    findings = json.loads(out.stdout)
    assert [(f["code"], f["uid"], f["field"], f["severity"]) for f in findings] == [
        ("regex-catastrophic", 0, "key[0]", "warning")]
    assert "(a+)+" in findings[0]["message"]
