"""SillyTavern world-info JSON: lossless read/write, SillyTavern's naming and key order, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lorescan._errors import FormatError, LorescanError
from lorescan._formats.worldinfo import (
    book_name,
    load_worldinfo,
    new_entry,
    read_worldinfo,
    worldinfo_to_json,
    write_worldinfo,
)
from lorescan._load import document, load, load_bytes, render

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"
ODD = FIXTURES / "st_odd_keys.json"


def test_book_is_named_after_the_file_and_keeps_everything() -> None:
    book = load_worldinfo(ODD)
    assert book.name == "st_odd_keys"
    assert book.scope == "global"
    assert book.entry_keys == ["10", "b", "2", "01"]
    assert book.extra == {"name": "Odd keys", "_comment": "hand-written: Object.keys order is 2, 10, then b, 01"}
    assert [e.uid for e in book.scan_order()] == [2, 10, "b", 1]
    two = next(e for e in book.entries if e.uid == 2)
    assert two.disable == 1 and two.order == 1.5
    assert two.characterFilter is not None and two.characterFilter.names == ["Ilse"]
    bee = next(e for e in book.entries if e.uid == "b")
    assert bee.get("lorescanUnknown") == {"x": [1, {"y": None}]}
    one = next(e for e in book.entries if e.uid == 1)
    assert one.extensions == {"kept": True}


def test_write_is_the_same_json_value() -> None:
    original = json.loads(ODD.read_text(encoding="utf-8"))
    book = load_worldinfo(ODD)
    assert worldinfo_to_json(book) == original
    assert json.loads(write_worldinfo(book)) == original
    assert list(worldinfo_to_json(book)["entries"]) == ["10", "b", "2", "01"]


def test_explicit_name_wins() -> None:
    assert load_worldinfo(ODD, name="Harbor").name == "Harbor"
    assert load(str(ODD), name="Harbor").books[0].name == "Harbor"


def test_book_name_rule() -> None:
    assert book_name("/x/My Book.v2.json") == "My Book.v2"
    assert book_name("noext") == "noext"


def test_unchanged_file_is_written_byte_for_byte(tmp_path: Path) -> None:
    loaded = load(ODD)
    data, notes = render(loaded)
    assert data == ODD.read_bytes()
    assert notes == []


def test_edit_changes_only_that_entry() -> None:
    loaded = load(ODD)
    entry = next(e for e in loaded.books[0].entries if e.uid == 10)
    entry.content = "Ten, edited."
    out = json.loads(render(loaded)[0])
    original = json.loads(ODD.read_text(encoding="utf-8"))
    assert out["entries"]["10"]["content"] == "Ten, edited."
    out["entries"]["10"]["content"] = "Ten."
    assert out == original


def test_new_entry_takes_smallest_free_uid() -> None:
    book = load_worldinfo(ODD)
    entry = new_entry(book, key=["zero"], content="Zero.")
    assert entry.uid == 0
    again = new_entry(book, key=["three"])
    assert again.uid == 3
    data = worldinfo_to_json(book)
    assert list(data["entries"]) == ["10", "b", "2", "01", "0", "3"]
    assert data["entries"]["0"] == {"uid": 0, "key": ["zero"], "content": "Zero."}


def test_entries_array_is_kept_as_array() -> None:
    raw = {"entries": [{"key": ["a"], "content": "A"}, {"keys": ["b"], "content": "B"}], "x": 1}
    book = read_worldinfo(raw, "arr")
    assert book.entries_was_list is True
    assert book.entry_keys == ["0", "1"]
    assert worldinfo_to_json(book) == raw


def test_missing_entries_is_an_error() -> None:
    with pytest.raises(FormatError, match="no 'entries'"):
        read_worldinfo({"name": "x"}, "x", file="x.json")


def test_entries_of_wrong_type_names_the_field() -> None:
    with pytest.raises(FormatError) as info:
        read_worldinfo({"entries": "oops"}, "x", file="x.json")
    assert str(info.value) == "x.json: field 'entries': must be an object keyed by uid, got string"


def test_wrong_field_type_names_file_uid_and_field() -> None:
    data = json.dumps({"entries": {"4": {"uid": 4, "key": "not-a-list", "content": "x"}}}).encode()
    with pytest.raises(LorescanError) as info:
        load_bytes(data, "bad.json")
    message = str(info.value)
    assert message.startswith("bad.json: entry 4: field 'key': ")
    assert "\n" not in message


def test_entry_that_is_not_an_object() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"entries": {"1": 5}}', "bad.json")
    assert str(info.value) == "bad.json: entry 1: entry must be an object, got number"


def test_invalid_json_is_one_line() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"entries": {"1": }', "broken.json")
    assert str(info.value) == "broken.json: invalid JSON: Expecting value at line 1 column 19"


def test_nan_is_not_json() -> None:
    with pytest.raises(FormatError, match="NaN is not valid JSON"):
        load_bytes(b'{"entries": {"1": {"order": NaN}}}', "nan.json")


def test_original_data_follows_edits() -> None:
    card_book = {"name": "B", "entries": [{"id": 0, "keys": ["a"], "content": "A", "enabled": True,
                                            "insertion_order": 5, "extensions": {}}]}
    loaded = load_bytes(json.dumps({"spec": "lorebook_v3", "data": card_book}).encode(), "b.json")
    loaded.books[0].entries[0].order = 9
    st = document(loaded, "st")
    assert st["originalData"]["entries"][0]["insertion_order"] == 9
    assert st["entries"]["0"]["order"] == 9
    assert st["originalData"]["entries"][0]["keys"] == ["a"]


def test_a_value_no_scalar_type_takes_is_named_once_for_its_field() -> None:
    """A value that is not a JSON scalar, where a scalar is read, is said once for the field (not
    as the first type pydantic tried, under ``order.bool``), and the entry is named by its uid as
    the book writes it."""
    with pytest.raises(LorescanError) as info:
        load_bytes(b'{"entries": {"0": {"uid": true, "order": [1]}}}', "w.json")
    assert str(info.value) == ("w.json: entry true: field 'order': must be true or false, a number, a string "
                               "or null (got [1])")
    with pytest.raises(LorescanError) as info:
        load_bytes(b'{"entries": {"0": {"uid": "a b", "key": "a"}}}', "w.json")
    assert str(info.value) == "w.json: entry a b: field 'key': Input should be a valid list (got \"a\")"


def test_a_file_that_is_not_all_utf8_is_read_as_sillytavern_reads_it() -> None:
    """SillyTavern reads a file with replacement characters for bytes that are not UTF-8 (a book
    saved as Latin-1): so does lorescan, with a warning; the key then holds U+FFFD, as there."""
    data = '{"entries": {"0": {"uid": 0, "key": ["café"], "content": "x"}}}'.encode("latin-1")
    loaded = load_bytes(data, "latin.json")
    assert loaded.books[0].entries[0].key == ["caf\ufffd"]
    assert loaded.warnings == ["not all UTF-8 (byte 41): such bytes are read as U+FFFD, as SillyTavern reads the file"]
