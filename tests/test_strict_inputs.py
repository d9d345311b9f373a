"""Strict inputs: unknown setting names, SillyTavern's settings.json, non-scenarios, version names."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from lorescan import LorescanError, ScenarioError, Settings, mode_for, run_scenario
from lorescan._mode import VERSIONS, version_mode
from lorescan._model import settings_from_json

from .conftest import CONFORMANCE, ROOT

BOOK = str(ROOT / "corpora" / "saltmere.json")
CHAT = str(ROOT / "corpora" / "saltmere-chat.jsonl")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m lorescan ARGS`` in a subprocess, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "lorescan", *args], capture_output=True, text=True, cwd=ROOT)


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


# -- settings ------------------------------------------------------------------------------------

def test_a_misspelled_setting_is_an_error_with_a_suggestion() -> None:
    with pytest.raises(ValidationError) as info:
        Settings(world_info_depht=4)
    assert "unknown setting 'world_info_depht' (did you mean 'world_info_depth'?)" in str(info.value)
    assert info.value.errors()[0]["loc"] == ("world_info_depht",)
    with pytest.raises(ValidationError) as info:
        Settings.model_validate({"colour": "red"})
    assert info.value.errors()[0]["msg"] == "unknown setting 'colour'"   # nothing close: no suggestion
    assert Settings(world_info_depth=4).world_info_depth == 4


def test_settings_from_json_flat_file() -> None:
    settings, tokenizer = settings_from_json({"world_info_depth": 5, "max_context": 2048, "tokenizer": "words"})
    assert (settings.world_info_depth, settings.max_context, tokenizer) == (5, 2048, "words")
    with pytest.raises(ValidationError) as info:
        settings_from_json({"world_info_budjet": 10, "tokeniser": "words"})
    text = str(info.value)
    assert "did you mean 'world_info_budget'" in text and "did you mean 'tokenizer'" in text
    with pytest.raises(LorescanError) as err:
        Settings.from_json({"world_info_recursiv": True})
    assert str(err.value) == "unknown setting 'world_info_recursiv' (did you mean 'world_info_recursive'?)"
    with pytest.raises(LorescanError, match="field 'tokenizer'"):
        Settings.from_json({"tokenizer": 5})


#: A trimmed SillyTavern settings.json: the world-info part sits among the rest of the app's settings.
ST_SETTINGS: dict[str, Any] = {
    "firstRun": False,
    "username": "Rowan",
    "api_server": "http://127.0.0.1:5000/api",
    "preset_settings": "Default",
    "user_avatar": "user-default.png",
    "amount_gen": 300,
    "max_context": 2048,
    "main_api": "textgenerationwebui",
    "world_info_settings": {
        "world_info": {"globalSelect": ["saltmere"], "charLore": [{"name": "Ines", "extraBooks": []}]},
        "world_info_depth": 4,
        "world_info_min_activations": 0,
        "world_info_min_activations_depth_max": 0,
        "world_info_budget": 25,
        "world_info_include_names": True,
        "world_info_recursive": True,
        "world_info_overflow_alert": False,
        "world_info_case_sensitive": False,
        "world_info_match_whole_words": True,
        "world_info_character_strategy": 1,
        "world_info_budget_cap": 0,
        "world_info_use_group_scoring": False,
        "world_info_max_recursion_steps": 0,
    },
    "textgenerationwebui_settings": {"temp": 0.7, "top_p": 0.9, "rep_pen": 1.1},
    "swipes": True,
    "power_user": {"tokenizer": 99, "instruct": {"enabled": False}, "persona_description": ""},
    "extension_settings": {"memory": {"source": "extras"}},
    "tags": [],
    "tag_map": {},
}


def test_settings_from_sillytavern_settings_json() -> None:
    settings, tokenizer = settings_from_json(ST_SETTINGS)
    assert tokenizer is None
    assert settings.world_info_depth == 4 and settings.world_info_recursive is True
    assert settings.world_info_match_whole_words is True and settings.max_context == 2048
    # an older settings.json keeps the world-info settings at the top level, among the rest
    old = {"firstRun": False, "main_api": "kobold", "max_context": 1024, "world_info_depth": 3,
           "world_info_budget": 40, "world_info": ["saltmere"], "power_user": {}}
    settings, _ = settings_from_json(old)
    assert (settings.world_info_depth, settings.world_info_budget, settings.max_context) == (3, 40, 1024)
    # a misspelled world-info setting is still an error in either shape
    bad = {**ST_SETTINGS, "world_info_settings": {**ST_SETTINGS["world_info_settings"], "world_info_depht": 1}}
    with pytest.raises(ValidationError, match="did you mean 'world_info_depth'"):
        settings_from_json(bad)


def test_cli_rejects_a_misspelled_setting(tmp_path: Path) -> None:
    settings = write(tmp_path, "s.json", {"world_info_depht": 4})
    out = cli("replay", "--book", BOOK, "--chat", CHAT, "--settings", settings)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"lorescan: error: {settings}: unknown setting 'world_info_depht' (did you mean 'world_info_depth'?)"]
    out = cli("lint", BOOK, "--settings", write(tmp_path, "t.json", {"world_info_depth": "deep"}))
    assert out.returncode == 2 and "field 'world_info_depth'" in out.stderr and len(out.stderr.splitlines()) == 1


def test_cli_reads_sillytavern_settings_json(tmp_path: Path) -> None:
    flat = write(tmp_path, "flat.json", {"world_info_depth": 4, "world_info_recursive": True,
                                         "world_info_match_whole_words": True, "max_context": 2048})
    st = write(tmp_path, "settings.json", ST_SETTINGS)
    runs = [cli("replay", "--book", BOOK, "--chat", CHAT, "--json", "--tokenizer", "words", *extra)
            for extra in (["--settings", st], ["--settings", flat], [])]
    assert [r.returncode for r in runs] == [0, 0, 0]
    gens = [[json.loads(line) for line in r.stdout.splitlines()] for r in runs]
    assert gens[0] == gens[1]
    assert [g["activated"] for g in gens[0]] != [g["activated"] for g in gens[2]]  # the settings were used
    assert gens[0][0]["budget"]["limit"] == 512                   # 25 % of max_context 2048


# -- scenarios -----------------------------------------------------------------------------------

def test_a_file_that_is_not_a_scenario_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="not a scenario"):
        run_scenario({"hello": "world"})
    notbook = write(tmp_path, "notbook.json", {"hello": "world"})
    out = cli("scenario", notbook)
    assert out.returncode == 2
    line = json.loads(out.stdout)
    assert line["name"] == "notbook" and "result" not in line
    assert line["error"].startswith(f"{notbook}: not a scenario: it has none of the input fields")
    # with --check too: bad input is 2, a mismatch 1
    assert cli("scenario", notbook, "--check").returncode == 2
    # one input field is enough: an empty chat is a scenario
    assert run_scenario({"chat": []})["activated"] == []


def test_scenario_settings_and_versions_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        run_scenario({"chat": [], "settings": {"world_info_depht": 3}})
    assert str(info.value) == "unknown setting 'world_info_depht' (did you mean 'world_info_depth'?) in settings"
    with pytest.raises(ScenarioError) as info:
        run_scenario({"chat": [], "settings": {"max_context": "big"}})
    assert info.value.field == "settings.max_context"
    path = write(tmp_path, "old.json", {"chat": [], "st_version": "1.17.0"})
    out = cli("scenario", path)
    assert out.returncode == 2
    error = json.loads(out.stdout)["error"]
    assert "field 'st_version': unsupported SillyTavern version '1.17.0'" in error and "1.19.0" in error


# -- versions ------------------------------------------------------------------------------------

def test_version_names_map_to_two_modes() -> None:
    assert {v: version_mode(v) for v in ("1.12", "1.12.6", "1.18", "1.18.0", "1.19", "1.19.0", " 1.19.0 ")} == {
        "1.12": "1.12", "1.12.6": "1.12", "1.18": "1.18", "1.18.0": "1.18", "1.19": "1.18", "1.19.0": "1.18",
        " 1.19.0 ": "1.18"}
    assert mode_for("1.19.0") == mode_for("1.18") and mode_for("1.12.6") == mode_for("1.12")
    assert mode_for("1.19").outlets is True and mode_for("1.12.6").outlets is False
    for bad in ("1.13", "1.120", "1.18.7", "2", ""):
        with pytest.raises(LorescanError) as info:
            mode_for(bad)
        assert f"unsupported SillyTavern version {bad!r}" in str(info.value)
        assert all(name in str(info.value) for name in VERSIONS)


def test_scenarios_run_as_1_19_give_the_1_18_results(tmp_path: Path) -> None:
    paths = sorted((CONFORMANCE / "st-1.18").glob("hand-new-*.json"))
    assert len(paths) >= 14
    for path in paths:
        sc = json.loads(path.read_text())
        assert run_scenario(sc, version="1.19.0") == run_scenario(sc) == sc["expected"], path.name
    # a file that says it is 1.19.0 runs as 1.18, and so does --st-version 1.19
    sc = json.loads(paths[0].read_text())
    renamed = write(tmp_path, "as-119.json", {**sc, "st_version": "1.19.0"})
    out = cli("scenario", renamed, "--check")
    assert out.returncode == 0 and json.loads(out.stdout)["pass"] is True
    out = cli("scenario", str(paths[0]), "--check", "--st-version", "1.19")
    assert out.returncode == 0 and json.loads(out.stdout)["pass"] is True


def test_cli_takes_1_19_and_lists_it_in_help() -> None:
    runs = {v: cli("replay", "--book", BOOK, "--chat", CHAT, "--json", "--st-version", v)
            for v in ("1.18", "1.19", "1.19.0")}
    assert {v: r.returncode for v, r in runs.items()} == {"1.18": 0, "1.19": 0, "1.19.0": 0}
    assert runs["1.19"].stdout == runs["1.18"].stdout == runs["1.19.0"].stdout
    assert cli("lint", BOOK, "--st-version", "1.19.0").returncode == 0
    for command in ("replay", "lint", "scenario", "explain", "scan", "report"):
        help_text = " ".join(cli(command, "--help").stdout.split())
        assert "1.19 or 1.19.0" in help_text and "1.12.6" in help_text, command
    bad = cli("replay", "--book", BOOK, "--chat", CHAT, "--st-version", "1.13")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "argument --st-version: unsupported SillyTavern version '1.13' (accepted: 1.12, 1.12.6" in bad.stderr


def test_case_files_reject_a_misspelled_setting_and_take_1_19(tmp_path: Path) -> None:
    cases = {"books": [BOOK], "settings": {"world_info_dept": 4}, "st_version": "1.19.0",
             "cases": [{"name": "lighthouse", "chat": [{"name": "Rowan", "is_user": True, "mes": "The lighthouse?"}],
                        "expect": {"activated": ["saltmere.0"]}}]}
    out = cli("test", write(tmp_path, "cases.json", cases))
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [
        f"lorescan: error: {tmp_path / 'cases.json'}: unknown setting 'world_info_dept' "
        "(did you mean 'world_info_depth'?) in settings"]
    cases["settings"] = {"world_info_depth": 4}
    out = cli("test", write(tmp_path, "cases.json", cases))
    assert out.returncode == 0 and "1 passed, 0 failed" in out.stdout
