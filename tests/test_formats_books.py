"""NovelAI, Agnai, Risu and KoboldAI books: SillyTavern's importers field by field, lossless
write-back, conversions between them, and detection from content."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lorescan._errors import FormatError, LorescanError
from lorescan._load import document, load, load_bytes, render

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"


def _json(name: str) -> object:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_novelai_entries_as_sillytavern_imports_them() -> None:
    loaded = load(FIXTURES / "novelai_small.lorebook")
    assert loaded.format == "novelai"
    book = loaded.books[0]
    assert book.name == "novelai_small"
    first, second = (e.to_json() for e in book.entries)
    assert first["uid"] == 0 and first["displayIndex"] == 0
    assert first["key"] == ["lighthouse", "/north\\s+pier/i"]
    assert (first["comment"], first["content"]) == ("Lighthouse", "The lighthouse on the north pier is dark.")
    assert (first["order"], first["disable"], first["addMemo"]) == (300, False, True)
    assert (first["constant"], first["selective"], first["position"], first["keysecondary"]) == (False, False, 0, [])
    assert (second["order"], second["disable"], second["addMemo"], second["comment"]) == (0, True, False, "   ")
    assert loaded.warnings == ["1 NovelAI entries have no 'enabled'; SillyTavern imports them disabled",
                               "1 NovelAI entries use forceActivation, which SillyTavern's import drops",
                               ]


def test_novelai_round_trip_and_edit() -> None:
    path = FIXTURES / "novelai_small.lorebook"
    loaded = load(path)
    assert document(loaded) == _json("novelai_small.lorebook")
    assert render(loaded)[0] == path.read_bytes()
    loaded.books[0].entries[0].order = 5
    loaded.books[0].entries[1].disable = False
    out = json.loads(render(loaded)[0])
    assert out["entries"][0]["contextConfig"]["budgetPriority"] == 5
    assert out["entries"][0]["contextConfig"]["tokenBudget"] == 2048
    assert out["entries"][0]["loreBiasGroups"][0]["phrases"] == ["beam"]
    assert out["entries"][1]["enabled"] is True
    assert out["categories"] == _json("novelai_small.lorebook")["categories"]


def test_novelai_errors() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"lorebookVersion": "4", "entries": "[{\'text\': 1}]"}', "m.lorebook")
    assert str(info.value) == "m.lorebook: field 'entries': must be an array of NovelAI entries, got string"
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"lorebookVersion": 4, "entries": [null]}', "n.lorebook")
    assert str(info.value) == "n.lorebook: field 'entries[0]': must be an object, got null"


def test_agnai_memory_book() -> None:
    loaded = load(FIXTURES / "agnai_memory.json")
    assert loaded.format == "agnai"
    book = loaded.books[0]
    assert book.name == "agnai_memory"
    light, guild, smuggler = (e.to_json() for e in book.entries)
    assert (light["key"], light["content"], light["comment"]) == (
        ["lighthouse", "north pier"], "The lighthouse on the north pier has been dark for ten years.", "Lighthouse")
    assert (light["order"], light["disable"], light["addMemo"], light["selective"]) == (10, False, True, False)
    assert (guild["order"], guild["disable"], guild["addMemo"], guild["constant"]) == (200, True, False, False)
    assert guild["keysecondary"] == [] and guild["comment"] == ""
    assert (smuggler["order"], smuggler["disable"]) == (3, True)
    assert loaded.warnings == ["Agnai fields SillyTavern's import ignores: constant, position, probability, "
                               "secondaryKeys, selective, selectiveLogic"]
    assert document(loaded) == _json("agnai_memory.json")


def test_agnai_edit_keeps_unknown_fields() -> None:
    loaded = load(FIXTURES / "agnai_memory.json")
    loaded.books[0].entries[1].content = "Dues are due."
    out = document(loaded)
    original = _json("agnai_memory.json")
    assert out["entries"][1]["entry"] == "Dues are due."
    assert out["entries"][1]["secondaryKeys"] == ["moon"] and out["entries"][1]["id"] == "guild-entry"
    out["entries"][1]["entry"] = original["entries"][1]["entry"]
    assert out == original


def test_risu_with_folders() -> None:
    loaded = load(FIXTURES / "risu_folders.json")
    assert loaded.format == "risu"
    folder, light, guild, salt = (e.to_json() for e in loaded.books[0].entries)
    assert folder["key"] == ["\uf000folder:6f1c8c1e-0000-4000-8000-00000000abcd"] and folder["content"] == ""
    assert (light["key"], light["keysecondary"]) == (["lighthouse", "pier"], ["night", "dusk"])
    assert (light["order"], light["probability"], light["useProbability"]) == (250, 35, 35)
    assert (light["selective"], light["constant"], light["disable"], light["addMemo"]) == (True, False, False, True)
    assert light["comment"] == "Lighthouse"
    assert (guild["key"], guild["constant"], guild["order"]) == (["/gu+ild/i"], True, 10)
    assert guild["content"] == "@@depth 0\nThe guild collects dues."
    assert (salt["probability"], salt["useProbability"], salt["keysecondary"]) == (100, True, [])
    assert loaded.warnings == [
        "1 Risu folders (Harbor); SillyTavern imports folder rows as entries that never match",
        "1 Risu entries set useRegex, which SillyTavern's import ignores"]
    assert document(loaded) == _json("risu_folders.json")


def test_risu_bad_key_type() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"type": "risu", "data": [{"key": ["a"], "content": "x"}]}', "r.json")
    assert str(info.value) == "r.json: entry 0: field 'key': must be a comma-separated string, got array"


def test_kobold_united_is_world_info() -> None:
    data = {"folders": {"F": [0]}, "entries": {"0": {
        "uid": 0, "title": "T", "key": ["a", "b"], "keysecondary": ["c"], "keyanti": ["d"], "folder": "F",
        "constant": False, "manual_text": "txt", "content": "txt", "comment": "", "type": "wi",
        "token_length": 0, "selective": True, "used_in_game": False,
        "wpp": {"name": "", "type": "", "format": "W++", "attributes": {}}, "use_wpp": False, "object_type": None}}}
    loaded = load_bytes(json.dumps(data).encode(), "world.json")
    assert loaded.format == "kobold"
    entry = loaded.books[0].entries[0]
    assert (entry.key, entry.keysecondary, entry.selective, entry.content) == (["a", "b"], ["c"], True, "txt")
    assert entry.get("title") == "T"
    assert loaded.books[0].extra == {"folders": {"F": [0]}}
    assert loaded.warnings == ["1 KoboldAI entries have keyanti, which SillyTavern ignores"]
    assert document(loaded) == data


def test_kobold_lite_save() -> None:
    loaded = load(FIXTURES / "kobold_lite_save.json")
    assert loaded.format == "kobold-lite"
    light, guild, salt = (e.to_json() for e in loaded.books[0].entries)
    assert (light["key"], light["comment"], light["selective"], light["addMemo"]) == (
        ["lighthouse", "north pier"], "Lighthouse", False, True)
    assert (guild["keysecondary"], guild["selectiveLogic"], guild["probability"], guild["group"]) == (
        ["moon", "tide"], 2, 80, "harbor")
    assert (salt["keysecondary"], salt["selectiveLogic"], salt["constant"], salt["disable"]) == (["Marn"], 0, True, True)
    assert loaded.warnings[1] == "entry 2: keyanti customs cannot be kept next to secondary keys"
    assert document(loaded) == _json("kobold_lite_save.json")
    loaded.books[0].entries[0].content = "Lit."
    out = document(loaded)
    assert out["worldinfo"][0]["content"] == "Lit." and out["wifolders_l"] == ["crime"]


def test_lite_export_round_trip() -> None:
    loaded = load(FIXTURES / "kobold_lite_save.json")
    items = document(loaded, "kobold-lite")
    assert isinstance(items, dict)
    lite = json.dumps(document(load(FIXTURES / "agnai_memory.json"), "kobold-lite")).encode()
    again = load_bytes(lite, "lite.json")
    assert again.format == "kobold-lite"
    assert [e.key for e in again.books[0].entries] == [["lighthouse", "north pier"], ["guild", "dues"], ["Marn", "salt"]]
    assert [e.disable for e in again.books[0].entries] == [False, True, True]


@pytest.mark.parametrize("target", ["st", "lorebook_v3", "charbook", "novelai", "agnai", "risu", "kobold",
                                    "kobold-lite"])
def test_every_book_format_reads_back(target: str) -> None:
    loaded = load(FIXTURES / "agnai_memory.json")
    data, _ = render(loaded, target)
    again = load_bytes(data, f"out.{'lorebook' if target == 'novelai' else 'json'}")
    expected = {"lorebook_v3": "lorebook_v3", "charbook": "charbook"}.get(target, target)
    assert again.format == expected
    assert [e.content for e in again.books[0].scan_order()] == [e.content for e in loaded.books[0].entries]
    assert [e.key for e in again.books[0].scan_order()] == [e.key for e in loaded.books[0].entries]


def test_lossy_targets_say_what_they_drop() -> None:
    loaded = load(FIXTURES / "lorebook_v3.json")
    _, notes = render(loaded, "novelai")
    assert notes[0].startswith("novelai cannot hold these entry fields, so they are dropped: ")
    assert "sticky (1)" in notes[0] and "triggers (1)" in notes[0]
    _, notes = render(loaded, "risu")
    assert "2 entries have keys with commas or outer spaces" not in " ".join(notes)
    loaded.books[0].entries[0].key = ["a, b"]
    assert any(n.startswith("1 entries have keys with commas") for n in render(loaded, "risu")[1])


def test_ambiguous_importers() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"lorebookVersion": 1, "kind": "memory", "entries": []}', "a.json")
    assert str(info.value) == "a.json: ambiguous: looks like novelai and agnai at once"


def test_unknown_json_shapes() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"hello": 1}', "h.json")
    assert str(info.value) == "h.json: JSON object of an unknown format (no entries, spec, kind, type or messages)"
    with pytest.raises(FormatError, match="empty JSON array"):
        load_bytes(b"[]", "e.json")
    with pytest.raises(FormatError, match="JSON number is not a lorebook, card or chat"):
        load_bytes(b"42", "n.json")


def test_agnai_entry_of_wrong_type() -> None:
    with pytest.raises(LorescanError) as info:
        load_bytes(b'{"kind": "memory", "entries": [{"keywords": "k", "entry": "x"}]}', "a.json")
    assert str(info.value).startswith("a.json: entry 0: field 'key': ")


def test_new_entries_without_uid_are_all_written() -> None:
    from lorescan._model import Entry

    loaded = load(FIXTURES / "agnai_memory.json")
    loaded.books[0].entries.append(Entry.from_json({"key": ["a"], "content": "A"}))
    loaded.books[0].entries.append(Entry.from_json({"key": ["b"], "content": "B"}))
    out = document(loaded)
    assert [e["entry"] for e in out["entries"][3:]] == ["A", "B"]
    assert out["entries"][3] == {"name": "", "entry": "A", "keywords": ["a"], "priority": 100, "weight": 100,
                                 "enabled": True}
    assert out["entries"][:3] == _json("agnai_memory.json")["entries"]  # type: ignore[index]


# ---------------------------------------------------------------- as SillyTavern's importers store books
# Each value below is what SillyTavern's own converters (1.12.6 and 1.19.0) stored for the same
# input, run side by side with lorescan's importers.

def _entries(data: object, name: str = "b.json") -> list[dict]:
    return [e.to_json() for e in load_bytes(json.dumps(data).encode(), name).books[0].scan_order()]


def test_a_converted_number_too_large_for_a_double_is_stored_as_null() -> None:
    """SillyTavern stores an importer's result through JSON.stringify, so ±Infinity (``1e400`` in
    the file) becomes null: here the order, and both uids (their keys stay "Infinity")."""
    card = {"spec": "chara_card_v2", "data": {"name": "N", "character_book": {"entries": [
        {"id": 1e400, "keys": ["a"], "content": "A", "enabled": True, "insertion_order": 1e400},
        {"id": -1e400, "keys": ["a"], "content": "B", "enabled": True, "insertion_order": 50}]}}}
    text = json.dumps(card).replace("Infinity", "1e400").encode()
    book = load_bytes(text, "c.json").books[0]
    assert book.entry_keys == ["Infinity", "-Infinity"]
    assert [(e.uid, e.order) for e in book.entries] == [(None, None), (None, 50)]
    novel = b'{"lorebookVersion": 5, "entries": [{"keys": ["a"], "text": "A", "enabled": true, ' \
            b'"contextConfig": {"budgetPriority": -1e400}}]}'
    assert [e.order for e in load_bytes(novel, "n.lorebook").books[0].entries] == [None]


def test_an_entry_that_is_an_array_is_read_as_an_empty_disabled_entry() -> None:
    card_book = _entries({"spec": "chara_card_v2", "data": {"name": "N", "character_book": {
        "entries": [["x"], {"id": 5, "keys": ["k"], "content": "C", "enabled": True}]}}})
    assert [(e["uid"], e.get("key"), e["disable"], e["position"]) for e in card_book] == [
        (0, None, True, 1), (5, ["k"], False, 1)]
    novel = _entries({"lorebookVersion": 5, "entries": [[1]]})
    assert [(e.get("key"), e["disable"], e["order"], e["addMemo"]) for e in novel] == [(None, True, 0, False)]
    agnai = _entries({"kind": "memory", "entries": [[], 5, "x", True]})
    assert [(e.get("key"), e["disable"], e["addMemo"]) for e in agnai] == [(None, True, False)] * 4
    assert len(_entries({"lorebookVersion": 5, "entries": [7, "y"]})) == 2     # NovelAI's too
    with pytest.raises(FormatError, match="must be an object, got null"):
        _entries({"kind": "memory", "entries": [None]})


def test_novelai_display_name_is_trimmed_as_javascript_does_and_must_be_a_string() -> None:
    def memo(name: str) -> bool:
        return _entries({"lorebookVersion": 5, "entries": [{"displayName": name, "keys": ["a"]}]})[0]["addMemo"]
    assert (memo("\x1c"), memo("\x85"), memo("\ufeff"), memo(" x ")) == (True, True, False, True)
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"lorebookVersion": 5, "entries": [{"displayName": null, "keys": ["a"]}]}', "n.lorebook")
    assert str(info.value) == "n.lorebook: entry 0: field 'displayName': must be a string, got null"


def test_risu_secondary_keys_that_are_truthy_but_not_a_string_are_refused() -> None:
    for value, shown in (([], "array"), ({}, "object"), (5, "number")):
        with pytest.raises(FormatError) as info:
            load_bytes(json.dumps({"type": "risu", "data": [{"key": "a", "secondkey": value}]}).encode(), "r.json")
        assert str(info.value) == f"r.json: entry 0: field 'secondkey': must be a comma-separated string, got {shown}"
    assert _entries({"type": "risu", "data": [{"key": "a", "secondkey": 0}]})[0]["keysecondary"] == []


def test_a_comment_of_any_scalar_type_is_kept() -> None:
    """SillyTavern never reads an entry's comment while activating, so a number there is kept."""
    risu = load_bytes(b'{"type": "risu", "data": [{"key": "a", "comment": 5}]}', "r.json").books[0].entries[0]
    assert (risu.comment, risu.comment_text) == (5, "5")
    agnai = load_bytes(b'{"kind": "memory", "entries": [{"name": 0, "keywords": ["a"]}]}', "a.json").books[0]
    assert (agnai.entries[0].comment, agnai.entries[0].comment_text) == (0, "")


def test_entries_beside_an_unknown_spec_are_world_info() -> None:
    loaded = load_bytes(b'{"spec": "x", "entries": {"0": {"uid": 0, "key": ["a"], "content": "A"}}}', "w.json")
    assert (loaded.format, [e.content for e in loaded.books[0].entries]) == ("st", ["A"])


def test_a_boolean_id_stays_a_boolean_uid() -> None:
    """``id: true`` is the uid ``true`` (key "true"), never the number 1 (see the bool-uid
    differential scenarios for what it changes)."""
    book = load_bytes(json.dumps({"spec": "chara_card_v2", "data": {"name": "N", "character_book": {"entries": [
        {"id": True, "keys": ["a"], "content": "A", "enabled": True}]}}}).encode(), "c.json").books[0]
    assert (book.entry_keys, book.entries[0].uid) == (["true"], True)
