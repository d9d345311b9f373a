"""``lorescan info`` and ``lorescan convert``: summaries, conversions, refusing to overwrite the
input, and one-line errors with exit code 2 for bad files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from lorescan._cli.main import main
from lorescan._load import load

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"


def test_info_json_for_a_card(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(FIXTURES / "card_v3_decorators.json"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["format"] == "ccv3" and out["kind"] == "card"
    assert out["books"] == [{"name": "Marigold Lore", "scope": "character", "entries": 3}]
    assert out["character"]["name"] == "Captain Ilse"
    assert out["character"]["spec_version"] == "3.0"
    assert out["character"]["linked_book"] == "Skyship Atlas"
    assert out["character"]["depth_prompt"] is True
    assert out["warnings"] == []
    assert "messages" not in out


def test_info_json_for_a_chat(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(FIXTURES / "st_chat_timed.jsonl"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["format"], out["messages"], out["hidden_messages"]) == ("st-chat", 4, 1)
    assert (out["user_name"], out["character_name"], out["chat_book"]) == ("Tomas", "Ilse", "Harbor Town")
    assert out["timed_effects"] == {"sticky": 1, "cooldown": 1}
    assert out["books"] == []


def test_info_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(FIXTURES / "risu_folders.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("risu_folders.json: risu (RisuAI lorebook export)")
    assert lines[1] == "  book: risu_folders (global): 4 entries"
    assert lines[2].startswith("  warning: 1 Risu folders (Harbor)")


def test_convert_to_world_info_and_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "Marigold.json"
    assert main(["convert", str(FIXTURES / "card_v3_decorators.json"), "-o", str(out), "--to", "st"]) == 0
    book = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(book) == ["entries", "originalData"]
    assert [book["entries"][k]["key"] for k in book["entries"]] == [["Marigold"], ["mutiny"], ["rigging"]]
    card_book = tmp_path / "book.json"
    assert main(["convert", str(out), "-o", str(card_book), "--to", "ccv2"]) == 0
    original = json.loads((FIXTURES / "card_v3_decorators.json").read_text(encoding="utf-8"))
    assert json.loads(card_book.read_text(encoding="utf-8")) == original["data"]["character_book"]


def test_convert_without_to_is_lossless(tmp_path: Path) -> None:
    for name in ("lorebook_v3.json", "sample.charx", "st_chat_timed.jsonl", "glm4_messages.yaml",
                 "novelai_small.lorebook", "kobold_lite_save.json"):
        out = tmp_path / ("copy-" + name)
        assert main(["convert", str(FIXTURES / name), "-o", str(out)]) == 0
        assert out.read_bytes() == (FIXTURES / name).read_bytes(), name


def test_convert_card_to_png_and_charx(tmp_path: Path) -> None:
    png_out = tmp_path / "ilse.png"
    assert main(["convert", str(FIXTURES / "card_v3_decorators.json"), "-o", str(png_out), "--to", "png"]) == 0
    assert png_out.read_bytes().startswith(b"\x89PNG")
    charx_out = tmp_path / "ilse.charx"
    assert main(["convert", str(png_out), "-o", str(charx_out), "--to", "charx"]) == 0
    loaded = load(charx_out)
    assert loaded.format == "charx" and loaded.character is not None
    assert loaded.character.name == "Captain Ilse" and len(loaded.books[0].entries) == 3


def test_convert_with_v3_decorators(tmp_path: Path) -> None:
    out = tmp_path / "atlas.json"
    assert main(["convert", str(FIXTURES / "lorebook_v3.json"), "-o", str(out), "--to", "st",
                 "--v3-decorators", "--name", "Atlas"]) == 0
    book = load(out, name="Atlas").books[0]
    airship = book.entries[0]
    assert (airship.position, airship.depth, airship.role, airship.content) == (4, 2, 2, "Airships moor at the Spire.")


def test_lossy_conversion_prints_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "atlas.lorebook"
    assert main(["convert", str(FIXTURES / "lorebook_v3.json"), "-o", str(out), "--to", "novelai"]) == 0
    err = capsys.readouterr().err
    assert "lorescan: note: novelai cannot hold these entry fields, so they are dropped:" in err
    assert load(out).format == "novelai"


def test_convert_refuses_to_overwrite_the_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "book.json"
    shutil.copy(FIXTURES / "st_odd_keys.json", source)
    before = source.read_bytes()
    assert main(["convert", str(source), "-o", str(source), "--to", "agnai"]) == 2
    assert capsys.readouterr().err == f"lorescan: error: {source}: refusing to write over the input file\n"
    link = tmp_path / "link.json"
    link.symlink_to(source)
    assert main(["convert", str(source), "-o", str(link)]) == 2
    assert source.read_bytes() == before


def test_unknown_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(FIXTURES / "agnai_memory.json"), "-o", str(tmp_path / "x"), "--to", "docx"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("lorescan: error: unknown output format 'docx'; one of: st, lorebook_v3,")
    assert err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_wrong_kind_of_target(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(FIXTURES / "transcript.txt"), "-o", str(tmp_path / "x.json"), "--to", "st"]) == 0
    assert load(tmp_path / "x.json").format == "st-chat"
    assert main(["convert", str(FIXTURES / "transcript.txt"), "-o", str(tmp_path / "y"), "--to", "novelai"]) == 2
    assert capsys.readouterr().err.endswith("transcript.txt: holds no lorebook to write as novelai\n")


@pytest.mark.parametrize("content, message", [
    (b"\x89PNG\r\n\x1a\n\x00\x00", "truncated PNG: no IEND chunk (file ends at byte 10)"),
    (b'{"entries": {', "invalid JSON: Expecting property name enclosed in double quotes at line 1 column 14"),
    (b"PK\x03\x04garbage", "not a readable ZIP archive (File is not a zip file)"),
])
def test_bad_files_give_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                 message: str) -> None:
    path = tmp_path / "bad.bin"
    path.write_bytes(content)
    assert main(["info", str(path)]) == 2
    assert capsys.readouterr().err == f"lorescan: error: {path}: {message}\n"


def test_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "/nonexistent/book.json"]) == 2
    assert capsys.readouterr().err == "lorescan: error: /nonexistent/book.json: no such file\n"


def test_help_lists_formats(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["convert", "--help"])
    out = capsys.readouterr().out
    for name in ("st", "lorebook_v3", "charbook", "novelai", "agnai", "risu", "kobold-lite", "ccv2", "ccv3",
                 "png", "charx", "st-chat", "openai", "glm", "transcript"):
        assert f"\n  {name} " in out
