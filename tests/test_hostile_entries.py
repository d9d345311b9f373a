"""Entries with the numbers and strings an attacker would write: huge integers, ``1e400``,
``"Infinity"``, ``NaN``, lone surrogates. SillyTavern reads them as JavaScript numbers and strings;
lorescan gives its result, and never an exception other than :class:`LorescanError`.

``LORESCAN_FUZZ_EXAMPLES=N`` raises the number of generated examples for a long run.
"""

from __future__ import annotations

import json
import math
import os
import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import lorescan
from lorescan import ChatMessage, Lorebook, LorescanError, Settings, TimedState
from lorescan._explain import explain
from lorescan._lint import lint

NINES = int("9" * 309)       # beyond the largest double: Infinity to JavaScript
EXAMPLES = int(os.environ.get("LORESCAN_FUZZ_EXAMPLES", "60"))


def _chat(n: int, text: str = "hello") -> list[ChatMessage]:
    """``n`` messages, the last one saying ``text`` (the others say nothing the keys look for)."""
    return [ChatMessage(name="U", is_user=i % 2 == 0, mes="..." if i < n - 1 else text) for i in range(n)]


def _run(*entries: dict[str, Any], messages: int = 1, text: str = "hello", timed: TimedState | None = None,
         **settings: Any) -> lorescan.ActivationResult:
    book = Lorebook.from_entries("b", [{"uid": i, "key": ["hello"], "content": f"X{i}", **e}
                                       for i, e in enumerate(entries)])
    lore = lorescan.compile([book], tokenizer="chars4")
    return lore.activate(_chat(messages, text), settings=Settings(**settings), timed=timed, rng=random.Random(1))


def test_huge_order_sorts_as_infinity() -> None:
    got = _run({"order": NINES}, {"order": 10**400}, {"order": 5}, {"order": -NINES})
    assert got.activated_keys() == ["b.0", "b.1", "b.2", "b.3"]
    assert got.before == "X3\nX2\nX1\nX0"      # ascending order; the two infinite orders are equal


def test_huge_or_infinite_scan_depth_reads_the_whole_chat() -> None:
    """Beyond 1,000 the depth is cut to 1,000; at most 0 (or NaN) no message is read."""
    chat = [ChatMessage(name="U", is_user=True, mes="hello")] + _chat(20, "x")
    for depth in (NINES, "Infinity", math.inf, "1e400", None, "-Infinity", -math.inf, -NINES, "abc"):
        book = Lorebook.from_entries("b", [{"uid": 0, "key": ["hello"], "content": "X", "scanDepth": depth}])
        got = lorescan.compile([book]).activate(chat).activated_keys()
        assert got == (["b.0"] if depth in (NINES, "Infinity", math.inf, "1e400") else []), depth
    for depth in ("-Infinity", -math.inf, -NINES, "abc"):
        assert _run({"scanDepth": depth}).activated_keys() == [], depth


def test_huge_delay_probability_and_levels() -> None:
    assert _run({"delay": NINES}, messages=9).activated_keys() == []
    assert _run({"delay": "-Infinity"}).activated_keys() == ["b.0"]
    got = _run({"probability": NINES, "useProbability": True})
    assert got.activated_keys() == ["b.0"] and got.rolls == 1
    assert _run({"probability": "-Infinity", "useProbability": True}).activated_keys() == []
    # One infinite level with recursion off never comes; with recursion on it is the current level.
    assert _run({"delayUntilRecursion": NINES}).activated_keys() == []
    recursing = {"content": "hello again"}
    got = _run({"delayUntilRecursion": NINES}, recursing, world_info_recursive=True)
    assert got.activated_keys() == ["b.1", "b.0"]


def test_string_delay_levels_compare_as_strings() -> None:
    """Levels "9" and "10" sort as numbers, but an entry's level is compared with the current one
    by ``>``: as strings, "9" > "10", so at level "10" the "9" entry is still held back."""
    got = _run({"delayUntilRecursion": "10"}, {"delayUntilRecursion": "9"})
    assert got.activated_keys() == ["b.0"]
    assert _run({"delayUntilRecursion": 10}, {"delayUntilRecursion": 9}).activated_keys() == ["b.0", "b.1"]
    # a number and a string with the same value are two levels: one more pass
    assert _run({"delayUntilRecursion": 2}, {"delayUntilRecursion": "2"}).activated_keys() == ["b.0", "b.1"]


def test_infinite_sticky_and_cooldown() -> None:
    for sticky in ("Infinity", math.inf, NINES):
        first = _run({"sticky": sticky})
        assert first.activated_keys() == ["b.0"]
        assert first.timed.sticky["b.0"].end == math.inf
        assert first.timed.to_json()["sticky"]["b.0"] == {"start": 1, "end": None, "protected": False}
        later = _run({"sticky": sticky}, messages=7, text="nothing", timed=first.timed)
        assert later.activated_keys() == ["b.0"], sticky          # still sticky, without its key
    first = _run({"sticky": "-Infinity"})
    assert first.timed.sticky["b.0"].end == -math.inf
    assert _run({"sticky": "-Infinity"}, messages=3, text="x", timed=first.timed).activated_keys() == []
    first = _run({"cooldown": "Infinity"})
    assert first.activated_keys() == ["b.0"]
    assert _run({"cooldown": "Infinity"}, messages=9, timed=first.timed).activated_keys() == []


def test_saved_infinite_end_reads_back_as_null() -> None:
    """Saved, ``Infinity`` becomes ``null``, which SillyTavern reads back as 0: the effect ends."""
    first = _run({"sticky": "Infinity"})
    saved = json.loads(json.dumps(first.timed.to_json(with_hash=True), allow_nan=False))
    state = TimedState.model_validate(saved)
    assert state.sticky["b.0"].end is None
    later = _run({"sticky": "Infinity"}, messages=3, text="x", timed=state)
    assert later.activated_keys() == [] and later.timed.sticky == {}


def test_entries_with_infinite_fields_or_lone_surrogates_are_hashed() -> None:
    got = _run({"sticky": 1, "depth": 1e999, "position": 4})
    assert got.activated_keys() == ["b.0"] and got.depth[0].depth == math.inf
    assert got.timed.sticky["b.0"].hash == 5144083993810205      # SillyTavern's hash of it, from Node
    got = _run({"sticky": 1, "comment": "\ud800", "content": "a\udfffb"})
    assert got.activated_keys() == ["b.0"] and got.timed.sticky["b.0"].hash == 2283206029048827
    later = _run({"sticky": 1, "comment": "\ud800", "content": "a\udfffb"}, messages=3, timed=got.timed)
    assert "b.0" not in later.timed.sticky or later.timed.sticky["b.0"].start == 3


def test_at_depth_groups_compare_huge_depths_as_doubles() -> None:
    """``===`` between depths: two integers that are the same double share a group."""
    got = _run({"position": 4, "depth": NINES}, {"position": 4, "depth": math.inf},
               {"position": 4, "depth": 2**53 + 1}, {"position": 4, "depth": 2**53})
    assert [len(g.entries) for g in got.depth] == [2, 2]


def test_group_weights_join_as_strings() -> None:
    """``"5"`` in a weight makes the total ``"05100"``: the roll runs on 5,100, not 105."""
    members = [{"group": "g", "groupWeight": "5"}, {"group": "g"}]
    book = Lorebook.from_entries("b", [{"uid": i, "key": ["hello"], "content": f"X{i}", **e}
                                       for i, e in enumerate(members)])
    lore = lorescan.compile([book], tokenizer="chars4")

    class Fixed:
        def random(self) -> float:
            return 0.0009        # 0.0009 * 5100 = 4.59 <= "05" (5): the first member wins

    assert lore.activate(_chat(1), rng=Fixed()).activated_keys() == ["b.0"]


def test_huge_uid_names_the_entry_as_javascript_prints_it() -> None:
    got = _run({"uid": NINES}, {"uid": 2**60})
    assert got.activated_keys() == ["b.Infinity", "b.1152921504606847000"]


# -- generated entries -------------------------------------------------------------------------

_NUMBERS = st.sampled_from([NINES, -NINES, 10**400, 2**53 + 1, math.inf, -math.inf, math.nan, 1e308, -0.0, 0, 1,
                            2, 3, 0.5, 100, 50, -1])
_STRINGS = st.sampled_from(["Infinity", "-Infinity", "NaN", "1e400", "0x10", " 5 ", "abc", "", "\ud800",
                            "\udc00x", "2", "10", "9", "hello", "hel\ud83dlo"])
_VALUE = st.one_of(_NUMBERS, _STRINGS, st.booleans(), st.none())
_TEXT = st.one_of(_STRINGS, st.text(alphabet="helo \ud800\udfff\U0001f600", max_size=8))
_NUMERIC_FIELDS = ["order", "scanDepth", "delay", "probability", "delayUntilRecursion", "sticky", "cooldown",
                   "depth", "role", "position", "groupWeight", "selectiveLogic"]
_FLAG_FIELDS = ["useProbability", "constant", "selective", "excludeRecursion", "preventRecursion", "ignoreBudget",
                "groupOverride", "useGroupScoring", "caseSensitive", "matchWholeWords", "disable", "vectorized"]
_STRING_FIELDS = ["comment", "content", "group", "outletName", "automationId"]


@st.composite
def _entry(draw: st.DrawFn, uid: int) -> dict[str, Any]:
    entry: dict[str, Any] = {"uid": uid, "key": draw(st.lists(_TEXT, min_size=1, max_size=3)) + ["hello"],
                             "content": draw(_TEXT)}
    for name in draw(st.lists(st.sampled_from(_NUMERIC_FIELDS + _FLAG_FIELDS), max_size=6, unique=True)):
        entry[name] = draw(_VALUE)
    for name in draw(st.lists(st.sampled_from(_STRING_FIELDS), max_size=3, unique=True)):
        entry[name] = draw(_TEXT)
    if draw(st.booleans()):
        entry["sticky" if draw(st.booleans()) else "cooldown"] = draw(st.one_of(_NUMBERS, _STRINGS))
    if draw(st.booleans()):
        entry["keysecondary"] = draw(st.lists(_TEXT, max_size=2))
    if draw(st.booleans()):
        entry["extensions"] = {"x": draw(_VALUE), "10": [draw(_VALUE)], draw(_TEXT): draw(_VALUE)}
    return entry


@st.composite
def _book(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [draw(_entry(uid)) for uid in range(draw(st.integers(1, 6)))]


def _check(result: lorescan.ActivationResult, keys: set[str]) -> None:
    got = result.activated_keys()
    assert len(got) == len(set(got)) and set(got) <= keys
    json.dumps(result.timed.to_json(with_hash=True), allow_nan=False)     # writable as strict JSON
    for records in (result.timed.sticky, result.timed.cooldown):
        for key, effect in records.items():
            assert key in keys and isinstance(effect.hash, int) and 0 <= effect.hash < 2**53


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_book(), st.booleans(), st.sampled_from(["1.18", "1.12"]))
def test_generated_hostile_entries(entries: list[dict[str, Any]], recursive: bool, compat: str) -> None:
    """Three generations with sticky and cooldown carried over: only ``LorescanError`` may stop
    them; results are deterministic and equal to the traced run (every entry through the full gate)."""
    try:
        book = Lorebook.from_entries("b", entries)
    except LorescanError:
        return
    keys = {f"b.{e['uid']}" for e in entries}
    s = Settings(world_info_recursive=recursive, world_info_depth=3)
    lores = [lorescan.compile([book], compat=compat, tokenizer="chars4") for _ in range(2)]
    states: list[TimedState | None] = [None, None]
    for n in (1, 3, 6):
        chat = [ChatMessage(name="U", is_user=i % 2 == 0, mes="hello \ud800 Infinity" if i == n - 1 else "x")
                for i in range(n)]
        try:
            plain = lores[0].activate(chat, settings=s, timed=states[0], rng=random.Random(n))
            traced = lores[1].activate(chat, settings=s, timed=states[1], rng=random.Random(n), trace=True)
        except LorescanError:
            return
        _check(plain, keys)
        assert plain.model_dump(exclude={"trace", "timed"}) == traced.model_dump(exclude={"trace", "timed"})
        assert plain.timed.to_json(with_hash=True) == traced.timed.to_json(with_hash=True)
        states = [plain.timed, traced.timed]


def test_lint_and_explain_read_hostile_entries() -> None:
    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["hello"], "content": "a\ud800", "position": NINES,
                                        "probability": "Infinity", "scanDepth": math.inf, "sticky": 1}])
    codes = {f.code for f in lint([book])}
    assert "unknown-position" in codes
    lore = lorescan.compile([book], tokenizer="chars4")
    chat = _chat(1)
    result = lore.activate(chat, trace=True)
    why = explain(lore, result, "b.0", chat, settings=Settings(), user_name="U", char_name="C")
    assert why.activated and result.activated_keys() == ["b.0"]


@settings(max_examples=max(EXAMPLES // 3, 10), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_book())
def test_lint_and_explain_generated_hostile_entries(entries: list[dict[str, Any]]) -> None:
    """The author tools read the same entries without an exception other than ``LorescanError``."""
    try:
        book = Lorebook.from_entries("b", entries)
        lint([book])
        lore = lorescan.compile([book], tokenizer="chars4")
        chat = [ChatMessage(name="U", is_user=True, mes="hello \ud800 Infinity")]
        result = lore.activate(chat, settings=Settings(world_info_recursive=True), trace=True)
        for e in entries:
            why = explain(lore, result, f"b.{e['uid']}", chat, settings=Settings(world_info_recursive=True),
                          user_name="U", char_name="C")
            assert why.activated == (f"b.{e['uid']}" in result.activated_keys())
    except LorescanError:
        pass
