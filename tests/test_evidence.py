"""Focused traces, match spans, the budget entry by entry and the closest miss (``_evidence``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import lorescan
from lorescan import ChatMessage, Settings
from lorescan._evidence import budget_use, closest_miss, message_spans
from lorescan._explain import explain_many
from lorescan._results import result_json
from lorescan._scenario import evaluate_scenario, scenario_books, scenario_mode

from .conftest import CONFORMANCE, ROOT

FILES = sorted(CONFORMANCE.glob("st-*/*.json"))
BOOK = lorescan.load(ROOT / "corpora" / "saltmere.json").books[0]


def _strip(results: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "trace"} for r in results]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_a_focused_trace_changes_no_result(path: Path) -> None:
    """Tracing only what the scan text reaches gives every scenario the result it gives untraced."""
    sc = json.loads(path.read_text(encoding="utf-8"))
    mode = scenario_mode(sc, path.parent.name.removeprefix("st-"))
    lore = lorescan.compile(scenario_books(sc), compat=mode, tokenizer=sc.get("tokenizer", "chars4"))

    def run(**kw: object) -> list[dict]:
        return _strip([result_json(r, outlets=mode.outlets) for _, r in evaluate_scenario(lore, sc, **kw)])

    assert run(trace=True, trace_focus=[]) == run()


def _evaluate(text: str, focus: list[str] | None = None, **settings: object):
    lore = lorescan.compile([BOOK])
    chat = [ChatMessage(name="Ines", is_user=False, mes="Welcome to Saltmere."),
            ChatMessage(name="Rowan", is_user=True, mes=text)]
    s = Settings(world_info_depth=4, world_info_match_whole_words=True, **settings)
    result = lore.activate(chat, settings=s, user_name="Rowan", char_name="Ines", trace=True, trace_focus=focus)
    return lore, chat, s, result


def _explained(keys: list[str], text: str, **settings: object) -> dict[str, lorescan.Explanation]:
    lore, chat, s, result = _evaluate(text, focus=keys, **settings)
    exps = explain_many(lore, result, keys, chat, settings=s, user_name="Rowan", char_name="Ines")
    return {e.entry: e for e in exps}


def test_a_focused_trace_names_only_what_the_text_reaches_and_the_focus() -> None:
    _, _, _, result = _evaluate("The keeper lit the beacon.", focus=["saltmere.9"])
    named = {e["entry"] for e in result.trace or [] if "entry" in e}
    assert {"saltmere.0", "saltmere.1", "saltmere.2", "saltmere.9"} <= named
    assert "saltmere.3" not in named          # the tide-bell is not mentioned
    assert result.activated_keys()[:3] == ["saltmere.0", "saltmere.1", "saltmere.2"]


def test_spans_are_utf16_offsets_into_the_message() -> None:
    lore, chat, s, _ = _evaluate("🌊 the keeper and the concatenated cat")
    spans = message_spans(lore, ["saltmere.2", "saltmere.10"], chat, settings=s, user_name="Rowan", char_name="Ines")
    got = [(sp.entry, sp.key, sp.message, sp.start, sp.end, sp.counts) for sp in spans]
    # the wave is two UTF-16 code units; 'cat' inside 'concatenated' does not count (whole words)
    assert got == [("saltmere.2", "keeper", 1, 7, 13, True), ("saltmere.10", "cat", 1, 25, 28, False),
                   ("saltmere.10", "cat", 1, 35, 38, True)]


def test_spans_follow_the_unicode_word_rule_when_the_books_use_it() -> None:
    book = lorescan.Lorebook.from_entries("ru", [
        {"uid": 0, "key": ["кот"], "content": "Кот."}, {"uid": 1, "key": ["straße"], "content": "Road."}])
    chat = [ChatMessage(name="Rowan", is_user=True, mes="Котлета, кот и STRASSE")]
    s = Settings(world_info_match_whole_words=True)
    spans = {rule: [(sp.entry, sp.start, sp.end, sp.counts) for sp in message_spans(
        lorescan.compile([book], word_boundaries=rule), ["ru.0", "ru.1"], chat, settings=s, user_name="Rowan",
        char_name="Ines")] for rule in ("sillytavern", "unicode")}
    # SillyTavern's ASCII rule sees no word inside "Котлета"; the unicode rule does, and folds ß to ss
    assert spans["sillytavern"] == [("ru.0", 0, 3, True), ("ru.0", 9, 12, True)]
    assert spans["unicode"] == [("ru.0", 0, 3, False), ("ru.0", 9, 12, True), ("ru.1", 15, 22, True)]


@pytest.mark.parametrize(("engine", "want"), [("new", [("m.0", 0, 5, True)]), ("legacy", [])])
def test_spans_read_keys_with_the_books_macro_engine(engine: str, want: list) -> None:
    """A key written ``{{ user }}`` is the user's name to 1.18's default macro engine (the key the
    activation matched) and text to the legacy one: the spans show what the activation read."""
    book = lorescan.Lorebook.from_entries("m", [{"uid": 0, "key": ["{{ user }}"], "content": "u"}])
    chat = [ChatMessage(name="Rowan", is_user=True, mes="Rowan waves")]
    spans = message_spans(lorescan.compile([book], macro_engine=engine), ["m.0"], chat, settings=Settings(),
                          user_name="Rowan", char_name="Ines")
    assert [(sp.entry, sp.start, sp.end, sp.counts) for sp in spans] == want


def test_budget_use_lists_each_entry_and_the_skipped_ones() -> None:
    lore, _, _, result = _evaluate("The keeper lit the beacon; rum for the smuggler.", world_info_budget=2,
                                   max_context=4096)
    use = budget_use(lore, result)
    rows = {r["entry"]: r for r in use["rows"]}
    assert use["budget"] == 82 and use["overflowed"]
    assert rows["saltmere.0"]["outcome"] == "fits" and rows["saltmere.0"]["tokens"] == 24
    assert use["overflow_entry"] == "saltmere.2"
    skipped = [r["entry"] for r in use["rows"] if r["outcome"] == "skipped"]
    assert "saltmere.7" in skipped and rows["saltmere.7"]["tokens"] == 12
    assert use["used"] == sum(r["tokens"] for r in use["rows"] if r["outcome"] == "fits")


def test_closest_miss_secondary_whole_words_and_depth() -> None:
    exps = _explained(["saltmere.4", "saltmere.10", "saltmere.1"], "A ship in the concatenated dark.")
    assert closest_miss(exps["saltmere.4"]) == {"kind": "secondary", "text": exps["saltmere.4"].verdict}
    assert "secondary keys failed" in exps["saltmere.4"].verdict
    miss = closest_miss(exps["saltmere.10"])
    assert miss is not None and miss["kind"] == "whole_words" and "'concatenated'" in miss["text"]
    assert closest_miss(exps["saltmere.1"]) == {"kind": "no_match", "text": exps["saltmere.1"].verdict}


def test_closest_miss_scan_depth_case_and_group() -> None:
    lore = lorescan.compile([BOOK])
    chat = [ChatMessage(name="Rowan", is_user=True, mes="The lighthouse, again."),
            ChatMessage(name="Ines", is_user=False, mes="Nothing here."),
            ChatMessage(name="Rowan", is_user=True, mes="A TIDE-BELL? And the smuggler.")]
    s = Settings(world_info_depth=1, world_info_case_sensitive=True)
    keys = ["saltmere.1", "saltmere.3", "saltmere.6"]
    # the group roll is drawn from rng: with seed 1, saltmere.5 wins the group and saltmere.6 loses
    result = lore.activate(chat, settings=s, user_name="Rowan", char_name="Ines", trace=True, trace_focus=keys,
                           rng=random.Random(1))
    assert result.activated_keys() == ["saltmere.0", "saltmere.5"]
    exps = {e.entry: e for e in explain_many(lore, result, keys, chat, settings=s, user_name="Rowan",
                                             char_name="Ines")}
    assert closest_miss(exps["saltmere.1"]) == {
        "kind": "scan_depth", "text": "primary key 'lighthouse' occurs only in message #1 (Rowan), beyond the scan "
                                      "depth of 1 (pass 1 scanned message #3)"}
    miss = closest_miss(exps["saltmere.3"])
    assert miss is not None and miss["kind"] == "case" and "another case" in miss["text"]
    assert closest_miss(exps["saltmere.6"]) == {"kind": "group", "text": exps["saltmere.6"].verdict}
    assert "inclusion group" in exps["saltmere.6"].verdict
