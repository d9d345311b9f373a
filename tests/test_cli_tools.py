"""The author tools on the bundled sample book and chat: replay, explain, scan, test."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from lorescan import Lorebook, run_scenario
from lorescan._cli.main import main
from lorescan._load import load

from .conftest import ROOT, TESTS

BOOK = str(ROOT / "corpora" / "saltmere.json")
CHAT = str(ROOT / "corpora" / "saltmere-chat.jsonl")
SETTINGS = str(ROOT / "corpora" / "saltmere-settings.json")


def _json_lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]


def test_replay_json_lists_every_generation(capsys) -> None:
    assert main(["replay", "--book", BOOK, "--chat", CHAT, "--json", "--tokenizer", "chars4"]) == 0
    gens = _json_lines(capsys)
    assert [g["generation"] for g in gens] == [1, 2, 3, 4, 5, 6]
    assert [g["message"] for g in gens] == [3, 5, 7, 9, 11, 13]     # #1 is the greeting
    assert gens[0]["activated"] == ["saltmere.0", "saltmere.1", "saltmere.8"]
    assert gens[0]["depth"] == [{"depth": 2, "role": 0, "entries": ["[The fog thickens whenever someone lies nearby.]"]}]
    assert gens[2]["activated"] == ["saltmere.0", "saltmere.2", "saltmere.3", "saltmere.7"]
    assert gens[2]["timed"]["sticky"] == {"saltmere.3": {"start": 6, "end": 9, "protected": False}}
    assert gens[3]["activated"][0] == "saltmere.3"          # sticky: first, without its key
    assert gens[3]["new"] == ["saltmere.6"] and "saltmere.1" not in gens[3]["gone"]
    # ceil((len(content 0) + len(content 1) + len(content 8) + 3 newlines) / 4) = ceil(274 / 4)
    assert gens[0]["budget"] == {"limit": 1024, "used": 69, "overflowed": False}


def test_replay_equals_the_scenario_runner_on_each_prefix(capsys) -> None:
    assert main(["replay", "--book", BOOK, "--chat", CHAT, "--json", "--settings", SETTINGS,
                 "--tokenizer", "words"]) == 0
    gens = _json_lines(capsys)
    chat = load(CHAT).chat
    book = load(BOOK).books[0]
    settings = json.loads(Path(SETTINGS).read_text())
    settings.pop("tokenizer")
    messages = [m.model_dump(include={"name", "is_user", "is_system", "mes"}) for m in chat.messages]
    entries = [e.to_json() for e in book.entries]
    draws = random.Random(0)          # the replay's seed (--seed 0): the same draws, turn by turn
    assert [(g["generation"], g["message"]) for g in gens] == [(1, 3), (2, 5), (3, 7), (4, 9), (5, 11), (6, 13)]
    turns = [{"chat": messages[: g["message"] - 1], "random": [draws.random() for _ in range(g["rolls"])]}
             for g in gens]
    scenario = {"books": [{"name": "saltmere", "scope": "global", "entries": entries}], "settings": settings, "user_name": "Rowan", "char_name": "Ines",
                "tokenizer": "words", "turns": turns, "st_version": "1.18.0"}
    expected = run_scenario(scenario)["turns"]
    shape = ("activated", "before", "after", "an_top", "an_bottom", "em", "depth", "outlets", "timed", "rolls")
    assert [{k: g[k] for k in shape} for g in gens] == [{k: t[k] for k in shape} for t in expected]
    assert isinstance(book, Lorebook) and book.name == "saltmere"
    assert sum(g["rolls"] for g in gens) > 0          # the factions group really rolled


def test_replay_table(capsys) -> None:
    assert main(["replay", "--book", BOOK, "--chat", CHAT]) == 0
    out = capsys.readouterr().out
    assert "6 generations, 17 activations in all." in out
    assert "saltmere.8 (at depth)" in out


def test_explain_in_plain_words(capsys) -> None:
    assert main(["explain", "--book", BOOK, "--chat", CHAT, "--entry", "saltmere.10", "--at", "6",
                 "--json"]) == 0
    exp = json.loads(capsys.readouterr().out)
    assert exp["activated"] is True and exp["message"] == 13      # generation 6 wrote message #13
    assert exp["lines"] == ["primary key 'cat' matched in message #11 (Ines)"]
    assert [(m["message"], m["offset"], m["where"]) for m in exp["matches"]] == [(11, 30, "message #11 (Ines)")]
    assert main(["explain", "--book", BOOK, "--chat", CHAT, "--entry", "4", "--at", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("saltmere.4 at generation 1, before message #3 (messages are numbered from #1, the first "
                      "message of the chat)")
    assert out[1] == "not activated: no primary key matched"


def test_scan_marks_matched_spans(capsys) -> None:
    assert main(["scan", "--book", BOOK, "--text", "The keeper lit the beacon.", "--tokenizer", "chars4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "The [keeper] lit the [beacon]."
    assert out[2:] == ["saltmere.0: activated in pass 1: constant (always active)",
                       "saltmere.1: activated in pass 1: primary key 'beacon' matched in the text",
                       "saltmere.2: activated in pass 1: primary key 'keeper' matched in the text"]


def test_case_file_passes_and_fails_with_exit_codes(tmp_path: Path, capsys) -> None:
    assert main(["test", str(TESTS / "fixtures" / "cases.yaml")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "5 passed, 0 failed"
    bad = tmp_path / "cases.json"
    bad.write_text(json.dumps({"books": [BOOK], "cases": [
        {"name": "wrong", "chat": [{"name": "R", "mes": "rum"}], "expect": {"activated": ["saltmere.1"]}}]}))
    assert main(["test", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL  wrong" in out and "expected saltmere.1 to be activated" in out and "0 passed, 1 failed" in out


def test_bad_input_is_one_line(tmp_path: Path, capsys) -> None:
    assert main(["replay", "--book", str(tmp_path / "nope.json"), "--chat", CHAT]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nope.json" in err
    assert main(["explain", "--book", BOOK, "--chat", CHAT, "--entry", "99"]) == 2
    assert "no entry '99'" in capsys.readouterr().err


def test_settings_file_flat_or_sillytavern_shape(tmp_path: Path) -> None:
    from lorescan._cli.common import read_settings

    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"world_info_depth": 6, "max_context": 8000, "tokenizer": "words"}))
    settings, tokenizer = read_settings(str(flat))
    assert (settings.world_info_depth, settings.max_context, tokenizer) == (6, 8000, "words")
    st = tmp_path / "settings.json"
    st.write_text(json.dumps({"max_context": 16384, "world_info_settings": {
        "world_info": {"globalSelect": ["x"]}, "world_info_depth": 3, "world_info_recursive": True,
        "world_info_budget": 40}}))
    settings, tokenizer = read_settings(str(st))
    assert (settings.world_info_depth, settings.world_info_recursive, settings.budget_tokens()) == (3, True, 6554)
    assert tokenizer is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"world_info_depth": "deep"}))
    try:
        read_settings(str(bad))
    except Exception as exc:
        assert "bad.json" in str(exc) and "world_info_depth" in str(exc)
    else:
        raise AssertionError("a bad setting must be an error")


def test_explain_draws_like_replay(tmp_path: Path, capsys) -> None:
    book = tmp_path / "coin.json"
    book.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": ["the"], "content": "Heads.", "probability": 50}}}))
    assert main(["replay", "--book", str(book), "--chat", CHAT, "--json", "--seed", "3"]) == 0
    gens = _json_lines(capsys)
    for n, gen in enumerate(gens, 1):
        assert main(["explain", "--book", str(book), "--chat", CHAT, "--entry", "coin.0", "--at", str(n),
                     "--json", "--seed", "3"]) == 0
        assert json.loads(capsys.readouterr().out)["activated"] == ("coin.0" in gen["activated"])
    # one roll per generation from one stream: heads, tails, heads, tails, tails, heads
    assert [("coin.0" in g["activated"]) for g in gens] == [True, False, True, False, False, True]


def test_only_a_command_line_run_freezes_the_loaded_books(monkeypatch, capsys) -> None:
    """``gc.freeze()`` is process-wide: the CLI does it only when it owns the process (argv from
    the command line), never when called from Python with arguments."""
    import gc
    import sys

    from lorescan import _construct

    monkeypatch.setattr(_construct, "_frozen_here", False)     # restored after (it says lorescan froze)
    gc.unfreeze()
    try:
        assert main(["replay", "--book", BOOK, "--chat", CHAT, "--json"]) == 0
        assert gc.get_freeze_count() == 0
        monkeypatch.setattr(sys, "argv", ["lorescan", "replay", "--book", BOOK, "--chat", CHAT, "--json"])
        assert main() == 0
        assert gc.get_freeze_count() > 0 and _construct._frozen_here
    finally:
        gc.unfreeze()
    capsys.readouterr()


@pytest.mark.parametrize(("argv", "said"), [
    (["bench", "--entries", "-5"], "argument --entries: must be at least 1: '-5'"),
    (["bench", "--entries", "100", "0"], "argument --entries: must be at least 1: '0'"),
    (["bench", "--rounds", "0"], "argument --rounds: must be at least 1: '0'"),
    (["bench", "--messages", "many"], "argument --messages: not a whole number: 'many'"),
    (["bench", "--depth", "-1"], "argument --depth: must be at least 0: '-1'"),
    (["bench", "--replay-generations", "0"], "argument --replay-generations: must be at least 1: '0'"),
    (["bench", "--baseline-rounds", "-1"], "argument --baseline-rounds: must be at least 0: '-1'"),
    (["serve", "--workers", "0"], "argument --workers: must be at least 1: '0'"),
])
def test_counts_on_the_command_line_are_checked(argv: list[str], said: str, capsys) -> None:
    # bench used to run (and exit 0) with no entries, a negative book size or no timed rounds
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"lorescan {argv[0]}: error: {said}"
