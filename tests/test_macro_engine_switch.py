"""The macro engine switch (``macro_engine``): SillyTavern 1.18's default new engine, or the legacy
one, chosen the same way everywhere: the API, scenario files, case files, the command line, lint
and the service. Each check uses a text the two engines substitute differently (what each gives
is SillyTavern's own result; see ``tests/fixtures/differential/st118-macro-*``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import lorescan
from lorescan import Lorebook, LorescanError, ScenarioError, mode_for
from lorescan._cli.main import main
from lorescan._lint import lint
from lorescan._mode import with_options

#: a key written with spaces inside the braces: the new engine reads it as the user's name
SPACED = [{"uid": 0, "key": ["{{ user }}"], "content": "found"}]
CHAT = [{"name": "Al", "is_user": True, "mes": "Al waves"}]


def _fires(macro_engine: str | None, version: str = "1.18") -> list[str]:
    lore = lorescan.compile([Lorebook.from_entries("book", SPACED)], compat=version, tokenizer="chars4",
                            macro_engine=macro_engine)
    return lore.activate(CHAT, user_name="Al", char_name="Moon").activated_keys()


def test_each_version_has_its_default_engine_and_the_mode_names_it() -> None:
    assert mode_for("1.18").macro_engine == "new" and mode_for("1.19.0").macro_engine == "new"
    assert mode_for("1.12").macro_engine == "legacy"
    assert with_options(mode_for("1.18"), macro_engine="Experimental").macro_engine == "new"
    assert _fires(None) == ["book.0"] and _fires("new") == ["book.0"]
    assert _fires("legacy") == [] and _fires(None, "1.12") == []


@pytest.mark.parametrize("key", ["{{description}}", "{{charDescription}}", "{{ description }}", "{{!Description}}",
                                 "{{if description}}elf{{/if}}", "{{reverse::{{reverse::{{description}}}}}}"])
def test_a_key_naming_a_card_macro_the_new_engine_way_reads_the_card(key: str) -> None:
    """Keys are prepared per names unless they name a card macro; the new engine's aliases,
    spaces, flags and conditions name one too, so such a key reads the card's description."""
    lore = lorescan.compile([Lorebook.from_entries("book", [{"uid": 0, "key": [key], "content": "x"}])],
                            tokenizer="chars4")
    elf = lorescan.Character(name="C", description=" tall elf ")
    chat = [{"name": "U", "is_user": True, "mes": "a tall elf"}]
    assert lore.activate(chat, character=elf).activated_keys() == ["book.0"]
    assert lore.activate(chat, character=elf.model_copy(update={"description": ""})).activated_keys() == []


@pytest.mark.parametrize(("version", "engine", "says"), [
    ("1.18", "fancy", "unknown macro engine 'fancy' (accepted: new, legacy)"),
    ("1.12", "new", "SillyTavern 1.12.6 has only the legacy macro engine"),
])
def test_a_wrong_engine_is_a_clear_error_naming_the_field(version: str, engine: str, says: str) -> None:
    with pytest.raises(LorescanError) as err:
        lorescan.compile([Lorebook.from_entries("book", SPACED)], compat=version, macro_engine=engine)
    assert err.value.message == says and err.value.field == "macro_engine"


def test_a_scenario_names_its_engine_and_run_scenario_overrides_it() -> None:
    sc = {"user_name": "Al", "char_name": "Moon", "entries": SPACED, "chat": CHAT}
    assert lorescan.run_scenario(sc)["activated"] == ["global.0"]
    assert lorescan.run_scenario({**sc, "macro_engine": "legacy"})["activated"] == []
    assert lorescan.run_scenario({**sc, "macro_engine": "legacy"}, macro_engine="new")["activated"] == ["global.0"]
    with pytest.raises(ScenarioError) as err:
        lorescan.run_scenario({**sc, "macro_engine": "old"})
    assert err.value.field == "macro_engine" and "unknown macro engine 'old'" in err.value.message


@pytest.fixture()
def book(tmp_path: Path) -> str:
    path = tmp_path / "book.json"
    path.write_text(json.dumps({"entries": {"0": SPACED[0]}}), encoding="utf-8")
    return str(path)


def test_the_command_line_takes_the_engine(book: str, capsys: Any) -> None:
    base = ["scan", "--book", book, "--text", "Al waves", "--user", "Al", "--json"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["activated"] == ["book.0"]
    assert main([*base, "--macro-engine", "legacy"]) == 0
    assert json.loads(capsys.readouterr().out)["activated"] == []
    with pytest.raises(SystemExit) as stop:
        main([*base, "--macro-engine", "old"])
    assert stop.value.code == 2 and "invalid choice: 'old'" in capsys.readouterr().err


def test_titles_name_the_legacy_engine_when_it_was_asked_for(book: str, capsys: Any) -> None:
    assert mode_for("1.18").shown == "1.18" and mode_for("1.12").shown == "1.12"
    assert with_options(mode_for("1.18"), macro_engine="legacy").shown == "1.18, legacy macro engine"
    main(["lint", book, "--macro-engine", "legacy"])
    assert capsys.readouterr().out.splitlines()[0] == "lorescan lint (SillyTavern 1.18, legacy macro engine)"
    main(["lint", book])
    assert capsys.readouterr().out.splitlines()[0] == "lorescan lint (SillyTavern 1.18)"


def test_lorescan_scenario_takes_the_engine(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "sc.json"
    path.write_text(json.dumps({"user_name": "Al", "entries": SPACED, "chat": CHAT}), encoding="utf-8")
    assert main(["scenario", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["activated"] == ["global.0"]
    assert main(["scenario", str(path), "--macro-engine", "legacy"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["activated"] == []


def test_a_case_file_names_its_engine(tmp_path: Path, book: str, capsys: Any) -> None:
    case = {"books": [book], "user": "Al", "tokenizer": "chars4",
            "cases": [{"name": "spaced", "chat": CHAT, "expect": {"activated_exactly": ["book.0"]}}]}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(case), encoding="utf-8")
    assert main(["test", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pass"] is True
    path.write_text(json.dumps({**case, "macro_engine": "legacy"}), encoding="utf-8")
    assert main(["test", str(path), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["activated"] == []
    path.write_text(json.dumps({**case, "macro_engine": "old"}), encoding="utf-8")
    assert main(["test", str(path)]) != 0
    err = capsys.readouterr().err
    assert str(path) in err and "unknown macro engine 'old'" in err and "Traceback" not in err


def test_lint_reads_keys_with_the_engine_it_is_given() -> None:
    """A key that is only a spaced comment is blank under the new engine (it matches every text)
    and a plain comment-like text under the legacy one."""
    b = Lorebook.from_entries("book", [{"uid": 0, "key": ["{{ // note }}"], "content": "x"}])
    blank = [f.code for f in lint([b]) if f.code == "whitespace-key"]
    legacy = [f.code for f in lint([b], macro_engine="legacy") if f.code == "whitespace-key"]
    assert blank == ["whitespace-key"] and legacy == []


# -- the service (in process) -------------------------------------------------------------------

pytest.importorskip("fastapi")
pytest.importorskip("httpx")


def _service_calls(tmp_path: Path, bodies: list[dict[str, Any]], **config: Any) -> list[Any]:
    from .serve_helpers import asgi_calls

    return asgi_calls(tmp_path, [("POST", "/v1/activate", body) for body in bodies], **config)


BODY = {"entries": SPACED, "chat": CHAT, "user_name": "Al"}


def test_the_service_setting_and_the_body_field_pick_the_engine(tmp_path: Path) -> None:
    default, legacy, new, old_version = _service_calls(tmp_path / "a", [
        BODY, {**BODY, "macro_engine": "legacy"}, {**BODY, "macro_engine": "new"}, {**BODY, "st_version": "1.12"}])
    assert [r.json()["result"]["activated"] for r in (default, legacy, new, old_version)] == [
        ["global.0"], [], ["global.0"], []]
    served_legacy, asked_new, old_version = _service_calls(tmp_path / "b", [
        BODY, {**BODY, "macro_engine": "new"}, {**BODY, "st_version": "1.12"}], macro_engine="legacy")
    assert [r.json()["result"]["activated"] for r in (served_legacy, asked_new, old_version)] == [
        [], ["global.0"], []]


@pytest.mark.parametrize(("body", "says"), [
    ({"macro_engine": "old"}, "unknown macro engine 'old' (accepted: new, legacy)"),
    ({"macro_engine": "new", "st_version": "1.12.6"}, "SillyTavern 1.12.6 has only the legacy macro engine"),
])
def test_a_wrong_engine_in_a_body_is_a_422_naming_the_field(tmp_path: Path, body: dict[str, Any],
                                                             says: str) -> None:
    (reply,) = _service_calls(tmp_path, [{**BODY, **body}])
    assert reply.status_code == 422
    assert reply.json() == {"error": {"type": "invalid_request", "message": says, "field": "macro_engine"}}
