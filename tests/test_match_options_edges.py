"""``word_boundaries`` and ``card_book_settings`` at the edges: the command line and the service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lorescan._cli.main import build_parser, main

BOOK = {"entries": {"0": {"uid": 0, "key": ["кот"], "content": "cat", "matchWholeWords": True},
                    "1": {"uid": 1, "key": ["Straße"], "content": "street", "matchWholeWords": True}}}
CARD = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
    "name": "C", "description": "", "personality": "", "scenario": "", "first_mes": "", "mes_example": "",
    "creator_notes": "", "system_prompt": "", "post_history_instructions": "", "alternate_greetings": [],
    "tags": [], "creator": "", "character_version": "", "extensions": {},
    "character_book": {"name": "C's book", "scan_depth": 1, "extensions": {}, "entries": [
        {"id": 0, "keys": ["dragon"], "content": "a dragon", "enabled": True, "insertion_order": 1,
         "extensions": {}}]}}}


@pytest.fixture()
def book(tmp_path: Path) -> str:
    path = tmp_path / "book.json"
    path.write_text(json.dumps(BOOK, ensure_ascii=False), encoding="utf-8")
    return str(path)


def test_scan_with_unicode_word_boundaries_marks_whole_words_of_every_script(book: str, capsys: Any) -> None:
    text = "котлета, кот и STRASSE"
    assert main(["scan", "--book", book, "--text", text]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "[кот]лета, кот и STRASSE"       # SillyTavern's rule
    assert main(["scan", "--book", book, "--text", text, "--word-boundaries", "unicode"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "котлета, [кот] и [STRASSE]"     # the folded match is marked in the text as written
    assert out[2:] == ["book.0: activated in pass 1: primary key 'кот' matched in the text",
                       "book.1: activated in pass 1: primary key 'Straße' matched in the text"]


def test_lint_reports_by_the_rule_it_is_given(book: str, capsys: Any) -> None:
    assert main(["lint", book, "--json"]) == 0
    assert [f["code"] for f in json.loads(capsys.readouterr().out)] == ["word-rule-script"]
    assert main(["lint", book, "--json", "--word-boundaries", "unicode"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_the_commands_that_compile_books_take_both_flags() -> None:
    parser = build_parser()
    for argv in (["scan", "--book", "b", "--text", "t"], ["replay", "--book", "b", "--chat", "c"],
                 ["explain", "--book", "b", "--chat", "c", "--entry", "b.0"], ["report", "--book", "b", "--chat", "c", "-o", "r.html"],
                 ["serve"]):
        args = parser.parse_args([*argv, "--word-boundaries", "unicode", "--card-book-settings"])
        assert (args.word_boundaries, args.card_book_settings) == ("unicode", True), argv
        args = parser.parse_args(argv)
        assert (args.word_boundaries, args.card_book_settings) == ("sillytavern", False), argv
    assert parser.parse_args(["bench", "--word-boundaries", "unicode"]).word_boundaries == "unicode"


def test_card_book_settings_on_the_command_line(tmp_path: Path, capsys: Any) -> None:
    card = tmp_path / "card.json"
    data = json.loads(json.dumps(CARD))
    data["data"]["character_book"]["scan_depth"] = 0      # the card's book scans no message
    card.write_text(json.dumps(data), encoding="utf-8")
    base = ["scan", "--book", str(card), "--text", "the dragon", "--json"]
    assert main(base) == 0
    assert json.loads(capsys.readouterr().out)["activated"] == ["C's book.0"]
    assert main([*base, "--card-book-settings"]) == 0
    assert json.loads(capsys.readouterr().out)["activated"] == []


# -- the service (in process) -------------------------------------------------------------------

pytest.importorskip("fastapi")
pytest.importorskip("httpx")


def _service_calls(tmp_path: Path, calls: list[tuple[str, str, Any]], **config: Any) -> list[Any]:
    from .serve_helpers import asgi_calls

    return asgi_calls(tmp_path, calls, **config)


ENTRIES = [{"uid": 0, "key": ["кот"], "content": "cat", "matchWholeWords": True}]
CHAT = [{"name": "U", "is_user": True, "mes": "котлета"}]


def test_the_service_setting_and_the_body_field_pick_the_word_rule(tmp_path: Path) -> None:
    body = {"entries": ENTRIES, "chat": CHAT}
    default, unicode, back = _service_calls(tmp_path / "a", [
        ("POST", "/v1/activate", body), ("POST", "/v1/activate", {**body, "word_boundaries": "unicode"}),
        ("POST", "/v1/activate", {**body, "word_boundaries": "sillytavern"})])
    assert default.json()["result"]["activated"] == ["global.0"]
    assert unicode.json()["result"]["activated"] == []
    assert back.json()["result"]["activated"] == ["global.0"]
    served, = _service_calls(tmp_path / "b", [("POST", "/v1/activate", body)], word_boundaries="unicode")
    assert served.json()["result"]["activated"] == []


def test_the_service_rejects_an_unknown_word_rule_naming_the_field(tmp_path: Path) -> None:
    reply, = _service_calls(tmp_path, [("POST", "/v1/activate", {"entries": ENTRIES, "chat": CHAT,
                                                                  "word_boundaries": "klingon"})])
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "word_boundaries"


def test_the_service_applies_a_stored_cards_book_settings_when_asked(tmp_path: Path) -> None:
    chat = [{"name": "U", "is_user": True, "mes": "the dragon"}, {"name": "U", "is_user": True, "mes": "hi"}]
    body = {"stored_books": ["card"], "chat": chat}
    stored, default, carded = _service_calls(tmp_path, [
        ("PUT", "/v1/books/card?scope=character", json.dumps(CARD).encode()),
        ("POST", "/v1/activate", body), ("POST", "/v1/activate", {**body, "card_book_settings": True})])
    assert stored.status_code == 201, stored.text
    assert default.json()["result"]["activated"] == ["card.0"]         # SillyTavern's depth 2
    assert carded.json()["result"]["activated"] == []                  # the card's depth 1
