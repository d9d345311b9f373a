"""lorescan lint: one crafted book per check, asserting exactly which findings come out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lorescan
from lorescan import ChatMessage
from lorescan._cli.main import main
from lorescan._lint import CODES, Finding, common_words, lint, regex_problem, words_containing
from lorescan._model import Lorebook, Settings

from .gc_helpers import collector_passes


def book(*entries: dict[str, Any], name: str = "w") -> Lorebook:
    """A book whose entries get uids 0, 1, …, plain content and whole-word matching unless given."""
    return Lorebook.from_entries(name, [{"uid": i, "content": "Plain text.", "matchWholeWords": True, **e}
                                        for i, e in enumerate(entries)])


def found(books: Lorebook | list[Lorebook], **kwargs: Any) -> list[tuple[str, Any, str | None]]:
    books = books if isinstance(books, list) else [books]
    return [(f.code, f.uid, f.field) for f in lint(books, tokenizer=kwargs.pop("tokenizer", "chars4"), **kwargs)]


def only(books: Lorebook | list[Lorebook], code: str, **kwargs: Any) -> list[Finding]:
    books = books if isinstance(books, list) else [books]
    return [f for f in lint(books, tokenizer="chars4", **kwargs) if f.code == code]


CLEAN = [
    {"key": ["Saltmere harbour"], "content": "The harbour of Saltmere is foggy."},
    {"key": ["/\\blight ?house\\b/i", "beacon"], "keysecondary": ["night"], "selectiveLogic": 0},
    {"key": ["Maren"], "group": "keeper", "content": "Maren keeps the light."},
    {"key": ["Old Maren"], "group": "keeper", "content": "Old Maren is retired."},
    {"constant": True, "content": "Setting: a fishing town."},
    {"key": ["rum"], "matchWholeWords": True, "position": 4, "depth": 2},
]


def test_clean_book_has_no_findings() -> None:
    assert lint([book(*CLEAN)]) == []
    assert lint([book(*CLEAN)], settings=Settings(world_info_recursive=True), compat="1.12") == []


def test_invalid_regex_keys() -> None:
    b = book({"key": ["/drag(on/i"]}, {"key": ["/a/b/"]}, {"key": ["/dragon/x"]}, {"key": ["/ok+/i", " /fine/ "]},
             {"key": ["/[z-a]/"]})
    assert found(b) == [("invalid-regex", 0, "key[0]"), ("invalid-regex", 1, "key[0]"),
                        ("invalid-regex", 2, "key[0]"), ("invalid-regex", 4, "key[0]")]
    messages = [f.message for f in only(b, "invalid-regex")]
    assert "literal text" in messages[0] and "Unterminated group" in messages[0]
    assert "unescaped '/'" in messages[1]
    assert "\"x\" are not accepted" in messages[2]
    assert all(f.severity == "error" for f in only(b, "invalid-regex"))
    assert regex_problem("/ok/gi") is None and regex_problem("plain") is None
    assert regex_problem("/ok/gg") is not None          # duplicate flag: new RegExp throws


def test_regex_keys_that_cannot_match_where_expected() -> None:
    b = book({"key": ["/^dragon/i"]}, {"key": ["/^(?:wyrm|drake)/m"]}, {"key": ["/dragon/y"]},
             {"key": ["/^.*dragon/"]})
    assert found(b) == [("regex-start-anchor", 0, "key[0]"), ("regex-start-anchor", 1, "key[0]"),
                        ("regex-sticky-flag", 2, "key[0]")]
    assert "never matches" in only(b, "regex-start-anchor")[0].message
    assert "line starts inside a message" in only(b, "regex-start-anchor")[1].message


def test_empty_and_whitespace_keys() -> None:
    b = book({"key": ["", "dragon"]}, {"key": ["   ", "dragon"], "group": "g"},
             {"key": ["wyvern"], "keysecondary": ["", "sky"], "selectiveLogic": 1, "group": "g"},
             {"key": ["wyvern"], "keysecondary": ["\t"], "group": "g"})
    assert found(b) == [("empty-key", 0, "key[0]"), ("duplicate-key", 0, "key[1]"), ("whitespace-key", 1, "key[0]"),
                        ("empty-key", 2, "keysecondary[0]"), ("whitespace-key", 3, "keysecondary[0]")]
    assert "NOT ALL is always satisfied" in only(b, "empty-key")[1].message
    assert "fires on every generation" in only(b, "whitespace-key")[0].message


def test_short_keys_inside_common_words() -> None:
    off = {"matchWholeWords": None}
    b = book({"key": ["elf"], "group": "x", **off}, {"key": ["Elf"], "group": "x"}, {"key": ["amber"], "group": "x", **off},
             {"key": ["magic"], **off}, {"key": ["zqx"], **off}, {"key": ["red elf"], **off})
    got = found(b)
    assert got == [("key-inside-words", 0, "key[0]"), ("key-inside-words", 2, "key[0]")]  # elf/Elf share group x
    elf, amber = only(b, "key-inside-words")
    assert elf.severity == "warning" and amber.severity == "info"
    assert "itself" in elf.message and "shelf" in elf.message and "/\\belf\\b/i" in elf.fix
    assert "chamber" in amber.message
    # the global whole-word setting turns the check off; an entry's own false turns it back on
    assert found(book({"key": ["elf"], **off}), settings=Settings(world_info_match_whole_words=True)) == []
    assert found(book({"key": ["elf"], "matchWholeWords": False}),
                 settings=Settings(world_info_match_whole_words=True)) == [("key-inside-words", 0, "key[0]")]


def test_word_list_and_search() -> None:
    words = common_words()
    assert len(words) > 3000 and len(set(words)) == len(words)
    assert all(w == w.lower() and w.isalpha() for w in words)
    assert words_containing("elf", limit=3) == ["self", "shelf", "elfish"]
    assert "cats" not in words_containing("cat") and "scatter" in words_containing("cat")
    assert words_containing("magic") == []                          # magical: a longer key's own extension
    assert words_containing("Elf", case_sensitive=True) == ["elfish"]  # as at the start of a sentence


def test_duplicate_keys_across_entries_and_books() -> None:
    a = book({"key": ["Dragon"]}, {"key": [" dragon ", "wyrm"]}, {"key": ["wyrm"], "group": "w"},
             {"key": ["orc"], "group": "w"})
    b = book({"key": ["DRAGON"]}, name="other")
    assert found([a, b]) == [("duplicate-key", 0, "key[0]"), ("duplicate-key", 1, "key[1]")]
    first = only([a, b], "duplicate-key")[0]
    assert first.book == "w" and "w.1, other.0" in first.message and first.severity == "info"
    # members of one inclusion group are meant to share keys
    assert found(book({"key": ["sea"], "group": "g", "matchWholeWords": True},
                      {"key": ["sea"], "group": "g", "matchWholeWords": True})) == []


def test_entries_without_keys() -> None:
    b = book({"key": []}, {"key": [""]}, {"key": [], "constant": True}, {"key": [], "content": "@@activate\nHi"},
             {"key": [], "vectorized": True})
    assert found(b) == [("no-keys", 0, "key"), ("no-keys", 1, "key"), ("empty-key", 1, "key[0]"),
                        ("no-keys", 4, "key")]
    assert [f.severity for f in only(b, "no-keys")] == ["warning", "warning", "info"]


def test_disabled_entries_report_only_that() -> None:
    b = book({"key": [""], "disable": True, "position": "x"}, {"key": ["dragon"], "disable": 1},
             {"key": ["dragon"], "disable": "true"})
    assert found(b) == [("disabled", 0, "disable"), ("disabled", 1, "disable"), ("not-a-boolean", 2, "disable")]
    assert [f.severity for f in lint([b])] == ["info", "info", "warning"]   # "true" == true is false: enabled


def test_delay_until_recursion_without_recursion() -> None:
    one_level = book({"key": ["sea"], "delayUntilRecursion": True}, {"key": ["ship"], "delayUntilRecursion": 1})
    assert found(one_level) == [("delay-never-recursion", 0, "delayUntilRecursion"),
                                ("delay-never-recursion", 1, "delayUntilRecursion")]
    assert only(one_level, "delay-never-recursion")[0].severity == "warning"   # default settings
    explicit = only(one_level, "delay-never-recursion", settings=Settings())
    assert explicit[0].severity == "error" and "(the default" not in explicit[0].message
    assert found(one_level, settings=Settings(world_info_recursive=True)) == []
    assert found(one_level, settings=Settings(world_info_recursive=True, world_info_max_recursion_steps=1)) == [
        ("delay-never-recursion", 0, "delayUntilRecursion"), ("delay-never-recursion", 1, "delayUntilRecursion")]
    two_levels = book({"key": ["sea"], "delayUntilRecursion": 1}, {"key": ["ship"], "delayUntilRecursion": 2})
    assert found(two_levels) == []


def test_selective_logic_problems() -> None:
    b = book({"key": ["sea"], "keysecondary": ["storm"], "selectiveLogic": 4},
             {"key": ["ship"], "keysecondary": ["storm"], "selectiveLogic": "1"},
             {"key": ["mast"], "keysecondary": ["storm", ""], "selectiveLogic": 3},
             {"key": ["sail"], "keysecondary": [""], "selectiveLogic": 3, "selective": False},
             {"key": ["oar"], "selectiveLogic": 9},
             {"key": ["keel"], "keysecondary": ["storm"], "selectiveLogic": None})
    assert found(b) == [("bad-selective-logic", 0, "selectiveLogic"), ("bad-selective-logic", 1, "selectiveLogic"),
                        ("and-all-empty-secondary", 2, "keysecondary[1]")]
    assert all(f.severity == "error" for f in lint([b], tokenizer="chars4"))


def test_unknown_triggers() -> None:
    b = book({"key": ["sea"], "triggers": ["nomral"]}, {"key": ["ship"], "triggers": ["normal", "Swipe"]},
             {"key": ["mast"], "triggers": ["continue", "quiet"]})
    assert found(b) == [("unknown-trigger", 0, "triggers"), ("unknown-trigger", 1, "triggers")]
    assert [f.severity for f in only(b, "unknown-trigger")] == ["error", "warning"]
    assert [f.severity for f in only(b, "unknown-trigger", compat="1.12")] == ["info", "info"]


def test_triggers_as_javascript_holds_them() -> None:
    """SillyTavern filters by ``triggers`` only when it is a list, and compares items with ``===``."""
    b = book({"key": ["sea"], "triggers": "swipe"}, {"key": ["ship"], "triggers": ["normal", 5]},
             {"key": ["mast"], "triggers": [5, {"x": 1}]}, {"key": ["oar"], "triggers": None})
    assert found(b) == [("unknown-trigger", 0, "triggers"), ("unknown-trigger", 1, "triggers"),
                        ("unknown-trigger", 2, "triggers")]
    assert [f.severity for f in only(b, "unknown-trigger")] == ["warning", "warning", "error"]
    assert "not a list" in only(b, "unknown-trigger")[0].message
    assert b.entries[2].to_json()["triggers"] == [5, {"x": 1}]       # kept as read
    lore = lorescan.compile([b])
    chat = [ChatMessage(name="U", is_user=True, mes="sea ship mast oar")]
    assert lore.activate(chat).activated_keys() == ["w.0", "w.1", "w.3"]
    assert lore.activate(chat, generation_type="continue").activated_keys() == ["w.0", "w.3"]


def test_outlet_names_as_javascript_holds_them() -> None:
    """An outlet's name is a property key, ``String(outletName)``; a falsy name places nothing."""
    b = book({"key": ["sea"], "position": 7, "outletName": 5, "content": "five"},
             {"key": ["sea"], "position": 7, "outletName": True, "content": "yes"},
             {"key": ["sea"], "position": 7, "outletName": 0, "content": "zero"},
             {"key": ["sea"], "position": 7, "outletName": 1.5, "content": "half"})
    result = lorescan.compile([b]).activate([ChatMessage(name="U", is_user=True, mes="sea")])
    assert result.activated_keys() == ["w.0", "w.1", "w.2", "w.3"]
    assert result.outlets == {"5": ["five"], "true": ["yes"], "1.5": ["half"]}
    assert [f for f in found(b) if f[0] != "duplicate-key"] == [("outlet-without-name", 2, "outletName")]


def test_unknown_positions_and_outlets() -> None:
    b = book({"key": ["a1"], "position": "0"}, {"key": ["a2"], "position": 8}, {"key": ["a3"], "position": 1.5},
             {"key": ["a4"], "position": None}, {"key": ["a5"], "position": 7, "outletName": "x"},
             {"key": ["a6"], "position": 7}, {"key": ["a7"], "position": 6.0}, {"key": ["a8"], "position": True})
    assert found(b) == [("unknown-position", 0, "position"), ("unknown-position", 1, "position"),
                        ("unknown-position", 2, "position"), ("unknown-position", 3, "position"),
                        ("outlet-without-name", 5, "outletName"), ("unknown-position", 7, "position")]
    # SillyTavern 1.12 has no outlets: position 7 is emitted nowhere
    assert [u for c, u, _ in found(b, compat="1.12") if c == "unknown-position"] == [0, 1, 2, 3, 4, 5, 7]
    assert '"0"' in only(b, "unknown-position")[0].message


def test_probability_zero() -> None:
    b = book({"key": ["a1"], "probability": 0}, {"key": ["a2"], "probability": None},
             {"key": ["a3"], "probability": 0, "useProbability": False}, {"key": ["a4"], "probability": 1},
             {"key": ["a5"], "probability": "abc"}, {"key": ["a6"], "probability": -5})
    assert found(b) == [("probability-zero", 0, "probability"), ("probability-zero", 1, "probability"),
                        ("probability-zero", 4, "probability"), ("probability-zero", 5, "probability")]


def test_content_over_budget() -> None:
    settings = Settings(max_context=400)              # 25 % of 400 = 100 tokens
    b = book({"key": ["a1"], "content": "x" * 399}, {"key": ["a2"], "content": "x" * 395},
             {"key": ["a3"], "content": "x" * 1000, "ignoreBudget": True})
    assert found(b, settings=settings) == [("content-over-budget", 0, "content")]
    f = only(b, "content-over-budget", settings=settings)[0]
    assert "100 tokens (chars4" in f.message and "budget is 100" in f.message and f.severity == "error"
    # 1.12 has no ignoreBudget
    assert [u for c, u, _ in found(b, settings=settings, compat="1.12")] == [0, 2]
    # the default counter is cl100k: "x" * 399 is far fewer than 100 tokens there
    assert [f.uid for f in lint([b], settings=settings) if f.code == "content-over-budget"] == []
    words = " ".join(["harbour"] * 120)
    assert [f.uid for f in lint([book({"key": ["a"], "content": words, "matchWholeWords": True})],
                                settings=settings)] == [0]


def test_case_sensitive_key_against_its_own_content() -> None:
    b = book({"key": ["Maren"], "caseSensitive": True, "content": "maren keeps the light."},
             {"key": ["Saltmere"], "caseSensitive": True, "content": "Saltmere and saltmere."},
             {"key": ["Mora"], "content": "mora is a spirit."})
    assert found(b) == [("case-mismatch-own-content", 0, "key[0]")]
    assert found(b, settings=Settings(world_info_case_sensitive=True)) == [
        ("case-mismatch-own-content", 0, "key[0]"), ("case-mismatch-own-content", 2, "key[0]")]


def test_single_member_groups() -> None:
    b = book({"key": ["sea"], "group": "Weather"}, {"key": ["rain"], "group": "weather"},
             {"key": ["fog"], "group": "weather"}, {"key": ["ship"], "group": "boats, crew"},
             {"key": ["mast"], "group": "crew"}, {"key": ["oar"], "group": "ghost", "disable": True})
    assert found(b) == [("single-member-group", 0, "group"), ("single-member-group", 3, "group"),
                        ("disabled", 5, "disable")]
    weather, boats = only(b, "single-member-group")
    assert "did you mean group \"weather\"" in weather.fix and "\"boats\"" in boats.message


def test_codes_table_and_json_shape() -> None:
    findings = lint([book({"key": ["/x(/"]}, {"key": [], "position": "1"})], tokenizer="chars4")
    assert {f.code for f in findings} <= set(CODES)
    assert findings[0].to_json() == {
        "code": "invalid-regex", "severity": "error", "book": "w", "uid": 0, "field": "key[0]",
        "message": findings[0].message, "fix": findings[0].fix}
    assert all(f.fix for f in findings)


def _write(tmp_path: Path, name: str, entries: list[dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps({"entries": {str(i): {"uid": i, **e} for i, e in enumerate(entries)}}))
    return str(path)


def test_cli_lint_exit_codes_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clean = _write(tmp_path, "clean.json", [{"key": ["Saltmere harbour"], "content": "Fog."}])
    assert main(["lint", clean]) == 0
    assert "no findings" in capsys.readouterr().out
    warn = _write(tmp_path, "warn.json", [{"key": ["elf"], "content": "Elves."}])
    assert main(["lint", warn, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(d["code"], d["uid"], d["book"]) for d in data] == [("key-inside-words", 0, "warn")]
    bad = _write(tmp_path, "bad.json", [{"key": ["/a(/"], "content": "x"}, {"key": ["b"], "position": "0"}])
    assert main(["lint", bad, warn]) == 1
    out = capsys.readouterr().out
    assert "invalid-regex" in out and "unknown-position" in out and "2 error(s), 2 warning(s)" in out
    settings = tmp_path / "s.json"
    settings.write_text(json.dumps({"world_info_match_whole_words": True}))
    assert main(["lint", warn, "--settings", str(settings), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_cli_lint_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lorescan: error:") and "missing.json" in err and len(err.strip().splitlines()) == 1
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert main(["lint", str(broken)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_duplicate_uids() -> None:
    b = Lorebook.from_entries("w", [{"uid": 1, "key": ["a1"], "matchWholeWords": True},
                                    {"uid": 1, "key": ["a2"], "matchWholeWords": True},
                                    {"uid": 2, "key": ["a3"], "matchWholeWords": True}])
    no_uids = Lorebook.from_entries("raw", [{"key": ["b1"], "matchWholeWords": True},
                                            {"key": ["b2"], "matchWholeWords": True}])
    assert found([b, no_uids]) == [("duplicate-uid", 1, "uid"), ("duplicate-uid", None, "uid")]
    assert "w.1" in only(b, "duplicate-uid")[0].message


def test_words_containing_finds_what_a_scan_of_every_word_finds() -> None:
    """The words are looked up through the pairs of characters they hold: never fewer than a scan
    of the whole list finds."""
    import random

    def scan(key: str, cs: bool) -> list[str]:
        needle = key if cs else key.lower()
        words = list(common_words()) + ([w[:1].upper() + w[1:] for w in common_words()] if cs else [])
        found = {w.lower() for w in words if needle in w and w.lower() != needle.lower()
                 and not (len(needle) > 3 and w.lower().startswith(needle.lower()))
                 and not any(w.lower() == needle.lower() + s for s in ("s", "es", "ed", "d", "ing", "er", "ers",
                                                                       "ly", "'s"))}
        return sorted(found, key=lambda w: (len(w), w))

    rng = random.Random(5)
    keys = ["a", "E", "th", "Th", "elf", "ion", "ing", "qu", "zz", "'s", "St"]
    keys += ["".join(rng.choice("aeiostnrlEAT'") for _ in range(rng.randint(1, 4))) for _ in range(300)]
    hits = 0
    for key in keys:
        for cs in (False, True):
            got = words_containing(key, case_sensitive=cs)
            assert got == scan(key, cs), (key, cs)
            hits += bool(got)
    assert hits > 200


def test_lint_runs_no_collection_and_leaves_the_collector_on() -> None:
    """Linting a big book builds a compile's worth of objects and thousands of findings: no young
    pass of the cyclic collector walks them meanwhile, and the collector is on again after."""
    import gc

    book = Lorebook.from_entries("b", [{"uid": i, "key": [f"k{i}", "the"], "content": f"c{i} " * 5}
                                       for i in range(2000)])
    with collector_passes() as passes:
        findings = lint([book])
    assert passes == [] and gc.isenabled()
    assert len([f for f in findings if f.code == "key-inside-words"]) == 2000


def test_texts_the_two_1_18_macro_engines_substitute_differently() -> None:
    """Under 1.18 a key or content the new macro engine (SillyTavern 1.17+'s default) substitutes
    differently from the legacy one (the setting off) is an info finding showing both results; a
    plain macro is not, and 1.12.6 has only the legacy engine."""
    b = book({"key": ["{{ user }}"]}, {"key": ["ship"], "content": "a \\{b\\}"},
             {"key": ["{{!char}}"], "content": "{{if x}}y{{/if}}"}, {"key": ["{{reverse::ab}}"], "content": "{{//}}"},
             {"key": ["{{user}}"], "content": "{{// a comment}} {{reverse:ab}} {{newline}}"})
    assert [(f.uid, f.field) for f in only(b, "new-macro-engine")] == [
        (0, "key"), (1, "content"), (2, "key"), (2, "content"), (3, "key"), (3, "content")]
    got = only(b, "new-macro-engine")
    assert got[0].message == (
        'key "{{ user }}" substitutes to "User" under SillyTavern\'s default macro engine and to "{{ user }}" '
        'with "Experimental Macro Engine" off (as an install upgraded from 1.16 or earlier has it)')
    assert got[5].message.startswith('content "{{//}}" substitutes to "{{//}}" under SillyTavern\'s default macro '
                                     'engine and to "" with')
    assert only(b, "new-macro-engine", compat="1.12") == []


def test_an_outlet_macro_key_is_blank_in_1_18_and_text_in_1_12() -> None:
    """``{{outlet::x}}`` is empty while SillyTavern 1.18 scans (outlets are filled after it), under
    either macro engine; 1.12.6 has no such macro and keeps the text."""
    b = book({"key": ["{{outlet::x}}"]})
    assert [f.code for f in only(b, "whitespace-key")] == ["whitespace-key"]
    assert [f.code for f in only(b, "whitespace-key", macro_engine="legacy")] == ["whitespace-key"]
    assert only(b, "whitespace-key", compat="1.12") == []
