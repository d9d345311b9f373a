"""Character cards V1/V2/V3, card books ⇄ world info (convertCharacterBook and its reverse),
lorebook_v3, bare character books and the opt-in V3 decorator mapping."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import lorescan
from lorescan._errors import FormatError, LorescanError
from lorescan._formats import cards
from lorescan._load import document, load, load_bytes, render
from lorescan._model import DepthPrompt

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"
CARD = FIXTURES / "card_v3_decorators.json"
LOREBOOK_V3 = FIXTURES / "lorebook_v3.json"

X16_BOOK = {"entries": [
    {"keys": ["a"], "content": "x", "enabled": True, "insertion_order": 10},
    {"id": 7, "keys": ["b"], "secondary_keys": ["c"], "selective": True, "content": "y",
     "insertion_order": 3, "position": "before_char", "case_sensitive": True,
     "extensions": {"position": 4, "depth": 2, "role": 1, "selectiveLogic": 3, "probability": 40,
                    "useProbability": True, "group": "g", "sticky": 2}},
]}


def test_convert_character_book_vector_x16() -> None:
    entries = cards.character_book_entries(copy.deepcopy(X16_BOOK), None)
    assert list(entries) == ["0", "7"]
    first, second = entries["0"], entries["7"]
    assert (first["uid"], first["key"], first["keysecondary"], first["selective"]) == (0, ["a"], [], False)
    assert (first["order"], first["position"], first["disable"], first["depth"]) == (10, 1, False, 4)
    assert (first["role"], first["displayIndex"], first["extensions"]) == (0, 0, {})
    assert (second["uid"], second["selective"], second["selectiveLogic"], second["order"]) == (7, True, 3, 3)
    assert (second["position"], second["disable"], second["depth"], second["role"]) == (4, True, 2, 1)
    assert (second["probability"], second["group"], second["sticky"]) == (40, "g", 2)
    assert second["caseSensitive"] is None
    assert second["displayIndex"] == 1


def test_convert_character_book_118_fields_and_defaults() -> None:
    book = json.loads(LOREBOOK_V3.read_text(encoding="utf-8"))["data"]
    entries = cards.character_book_entries(book, None)
    storm = entries["2"]
    assert storm["outletName"] == "weather"
    assert storm["triggers"] == ["normal", "swipe"]
    assert storm["ignoreBudget"] is True
    assert all(storm[f] is True for f in ("matchPersonaDescription", "matchCharacterDescription",
                                          "matchCharacterPersonality", "matchCharacterDepthPrompt",
                                          "matchScenario", "matchCreatorNotes"))
    assert (storm["groupOverride"], storm["groupWeight"], storm["scanDepth"]) == (True, 7, 5)
    assert (storm["excludeRecursion"], storm["preventRecursion"], storm["delayUntilRecursion"]) == (True, True, 2)
    assert (storm["automationId"], storm["cooldown"], storm["delay"], storm["displayIndex"]) == ("qr-storm", 3, 1, 9)
    assert storm["matchWholeWords"] is True and storm["useGroupScoring"] is False
    ship = entries["ship"]
    assert ship["uid"] == "ship" and ship["position"] == 0 and ship["addMemo"] is True
    assert ship["comment"] == "Airships" and ship["caseSensitive"] is None
    assert ship["extensions"] == {"custom_tool": {"kept": "yes"}}
    assert ship["triggers"] == [] and ship["ignoreBudget"] is False and ship["outletName"] == ""
    pirate = entries["3"]
    assert pirate["disable"] is True and pirate["position"] == 1 and pirate["addMemo"] is False


def test_duplicate_ids_keep_the_last_in_the_first_slot() -> None:
    book = {"entries": [{"id": 1, "keys": ["a"], "content": "A", "enabled": True},
                        {"id": 2, "keys": ["b"], "content": "B", "enabled": True},
                        {"id": 1, "keys": ["c"], "content": "C", "enabled": True}]}
    lorebook, notes = cards.read_character_book(book, "dup", None)
    assert lorebook.entry_keys == ["1", "2"]
    assert [e.content for e in lorebook.entries] == ["C", "B"]
    assert notes == ["1 character_book entries share an id with a later entry; SillyTavern keeps only the last of each"]
    assert cards.character_book_json(lorebook) == book


def test_world_info_to_character_book_entry() -> None:
    wi = {"uid": 3, "key": ["k"], "keysecondary": ["s"], "comment": "c", "content": "t", "constant": True,
          "selective": True, "order": 7, "position": 4, "disable": True, "depth": 1, "role": 2,
          "displayIndex": 5, "useGroupScoring": None, "triggers": ["swipe"], "ignoreBudget": True,
          "outletName": "o", "extensions": {"mine": 1, "position": 99}}
    card = cards.wi_to_card_entry(wi)
    assert card["id"] == 3 and card["keys"] == ["k"] and card["secondary_keys"] == ["s"]
    assert (card["insertion_order"], card["enabled"], card["position"], card["use_regex"]) == (7, False, "after_char", True)
    ext = card["extensions"]
    assert ext["mine"] == 1 and ext["position"] == 4 and ext["depth"] == 1 and ext["role"] == 2
    assert ext["display_index"] == 5 and ext["use_group_scoring"] is None
    assert ext["triggers"] == ["swipe"] and ext["ignore_budget"] is True and ext["outlet_name"] == "o"
    assert cards.wi_to_card_entry({"uid": 0, "position": "0"})["position"] == "before_char"
    back = cards.card_entry_to_wi(card, 0)
    for field in ("key", "keysecondary", "comment", "content", "constant", "selective", "order", "position",
                  "disable", "depth", "role", "displayIndex", "triggers", "ignoreBudget", "outletName"):
        assert back[field] == wi[field], field


def test_card_info_fields() -> None:
    loaded = load(CARD)
    info = loaded.character
    assert info is not None
    assert (info.name, info.format, info.spec, info.spec_version) == ("Captain Ilse", "ccv3", "chara_card_v3", "3.0")
    assert info.description == "{{char}} commands the skyship Marigold."
    assert (info.personality, info.scenario) == ("stern, fair", "A storm front approaches the Atlas.")
    assert info.creator_notes.startswith("Hand-written V3 card")
    assert info.depth_prompt == DepthPrompt(prompt="Ilse never lies about the weather.", depth=3, role="system")
    assert info.tags == ["airship", "captain"]
    assert info.world == "Skyship Atlas"
    assert info.alternate_greetings == ["The wind is up today.", "Mind the rigging."]
    assert (info.system_prompt, info.post_history_instructions) == ("You are {{char}}.", "Stay in character.")
    assert info.avatar == "Captain Ilse.png"
    book = loaded.books[0]
    assert (book.name, book.scope, len(book.entries)) == ("Marigold Lore", "character", 3)
    assert book.extra["originalData"]["name"] == "Marigold Lore"


def test_card_book_without_name_is_named_after_the_character() -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0",
            "data": {"name": "Ilse", "character_book": {"entries": []}}}
    loaded = load_bytes(json.dumps(card).encode(), "ilse.json")
    assert loaded.books[0].name == "Ilse's Lorebook"
    assert loaded.format == "ccv2"


def test_st_decorators_are_left_in_the_content_by_default() -> None:
    book = load(CARD).books[0]
    assert book.entries[0].content.startswith("@@depth 0\n")
    assert book.entries[0].position == 1


def test_v3_decorators_mapped_on_request() -> None:
    loaded = load(CARD, v3_decorators=True)
    ship, mutiny, rigging = loaded.books[0].entries
    assert (ship.position, ship.depth) == (4, 0)
    assert ship.content == "The Marigold is a three-masted skyship."
    assert mutiny.constant is True and mutiny.disable is False
    assert mutiny.content == "There was never a mutiny."
    assert rigging.role == 1
    assert rigging.content == "@@instruct_depth 4\nThe rigging is tarred hemp."
    assert any("@@instruct_depth 4" in w for w in loaded.warnings)
    atlas = load(LOREBOOK_V3, v3_decorators=True).books[0]
    airship, storm, pirate = atlas.entries
    assert (airship.position, airship.depth, airship.role) == (4, 2, 2)
    assert storm.constant is True
    assert (pirate.position, pirate.scanDepth, pirate.disable) == (1, 3, True)
    assert pirate.content == "@@is_greeting 1\nSky pirates fly black kites."


def test_lorebook_v3_reads_and_writes_back() -> None:
    loaded = load(LOREBOOK_V3)
    assert loaded.format == "lorebook_v3"
    book = loaded.books[0]
    assert (book.name, book.scope, len(book.entries)) == ("Skyship Atlas", "global", 3)
    assert [e.uid for e in book.entries] == ["ship", 2, 3]
    original = json.loads(LOREBOOK_V3.read_text(encoding="utf-8"))
    assert document(loaded) == original
    assert render(loaded)[0] == LOREBOOK_V3.read_bytes()
    assert document(loaded, "ccv2") == original["data"]


def test_edit_is_mirrored_into_the_card_book_only() -> None:
    loaded = load(CARD)
    book = loaded.books[0]
    book.entries[1].order = 999
    book.entries[1].position = 0
    del book.entries[2]
    book.entry_keys = None
    card = json.loads(render(loaded)[0])
    original = json.loads(CARD.read_text(encoding="utf-8"))
    entries = card["data"]["character_book"]["entries"]
    assert len(entries) == 2
    assert entries[0] == original["data"]["character_book"]["entries"][0]
    assert entries[1]["insertion_order"] == 999
    assert entries[1]["position"] == "before_char"
    assert entries[1]["extensions"] == {"position": 0}
    assert "display_index" not in entries[1]["extensions"]
    card["data"].pop("character_book")
    original["data"].pop("character_book")
    assert card == original


def test_card_versions() -> None:
    loaded = load(CARD)
    v2 = document(loaded, "ccv2")
    assert (v2["spec"], v2["spec_version"]) == ("chara_card_v2", "2.0")
    assert v2["data"] == json.loads(CARD.read_text(encoding="utf-8"))["data"]
    v1 = {"name": "Old", "description": "d", "personality": "p", "scenario": "s", "first_mes": "hi",
          "mes_example": "", "creatorcomment": "note", "tags": "a, b", "lorescan_keep": 1}
    old = load_bytes(json.dumps(v1).encode(), "old.json")
    assert old.format == "ccv1" and old.character is not None and old.character.name == "Old"
    assert old.character.creator_notes == "note"
    upgraded = document(old, "ccv3")
    assert (upgraded["spec"], upgraded["spec_version"]) == ("chara_card_v3", "3.0")
    data = upgraded["data"]
    assert (data["name"], data["first_mes"], data["creator_notes"], data["tags"]) == ("Old", "hi", "note", ["a", "b"])
    assert data["extensions"]["depth_prompt"] == {"prompt": "", "depth": 4, "role": "system"}
    assert data["group_only_greetings"] == [] and upgraded["lorescan_keep"] == 1
    assert document(old) == v1


def test_gradio_card() -> None:
    gradio = {"char_name": "Gr", "char_persona": "persona", "char_greeting": "hey", "world_scenario": "w",
              "example_dialogue": "ex"}
    loaded = load_bytes(json.dumps(gradio).encode(), "g.json")
    info = loaded.character
    assert info is not None and loaded.format == "ccv1"
    assert (info.name, info.description, info.first_mes, info.scenario, info.mes_example) == (
        "Gr", "persona", "hey", "w", "ex")


def test_newer_v3_spec_version_warns() -> None:
    card = {"spec": "chara_card_v3", "spec_version": "4.1", "data": {"name": "N"}}
    loaded = load_bytes(json.dumps(card).encode(), "n.json")
    assert loaded.warnings == ["card spec_version 4.1 is newer than 3.x; read as V3"]


def test_unknown_spec_is_an_error() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(b'{"spec": "something_else", "data": {}}', "x.json")
    assert str(info.value) == "x.json: unknown spec 'something_else': not a character card or lorebook_v3"


def test_bad_character_book_types() -> None:
    """A book SillyTavern's converter throws on leaves the card without a book (as SillyTavern
    imports it), said in a warning; a false one is no book, silently. An entry field of a wrong
    type is still an error naming it."""
    card: dict = {"spec": "chara_card_v2", "data": {"name": "N", "description": "D"}}
    for book, why in (({"entries": "no"}, "its entries are string, not an array"),
                      ({}, "its entries are missing, not an array"), ([1], "is array, not an object"),
                      ({"entries": [{"keys": ["a"]}, None]}, "its entry 1 is null, not an object"),
                      (False, None), ("", None)):
        card["data"]["character_book"] = book
        loaded = load_bytes(json.dumps(card).encode(), "n.json")
        assert (loaded.books, loaded.character.description) == ([], "D")
        assert loaded.warnings == ([f"data.character_book {why}: SillyTavern imports the card without its book"]
                                   if why else [])
    card["data"]["character_book"] = {"entries": [{"id": 1, "keys": "k", "content": "c"}]}
    with pytest.raises(LorescanError) as info:
        load_bytes(json.dumps(card).encode(), "n.json")
    assert str(info.value).startswith("n.json: entry 1: field 'key': ")


def test_bare_character_book() -> None:
    book = {"name": "Chub book", "entries": [{"keys": ["a"], "content": "A", "enabled": True,
                                             "insertion_order": 1, "extensions": {}}], "is_creation": False}
    loaded = load_bytes(json.dumps(book).encode(), "chub.json")
    assert loaded.format == "charbook"
    assert loaded.books[0].name == "Chub book"
    assert loaded.books[0].entries[0].key == ["a"]
    assert document(loaded) == book
    lorebook = document(loaded, "ccv3")
    assert lorebook == {"spec": "lorebook_v3", "data": book}


def test_world_info_to_fresh_card_book() -> None:
    loaded = load(FIXTURES / "st_odd_keys.json")
    book = document(loaded, "ccv2")
    assert book["name"] == "st_odd_keys"
    assert [e["id"] for e in book["entries"]] == [2, 10, "b", 1]
    assert book["entries"][0]["enabled"] is False
    back = load_bytes(json.dumps(book).encode(), "back.json").books[0]
    # the card ids become object keys again, so integer-like ones come first, ascending
    assert [e.key for e in back.scan_order()] == [["one"], ["two"], ["ten"], ["bee"]]


def test_null_character_book_round_trips() -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "N", "character_book": None}}
    loaded = load_bytes(json.dumps(card).encode(), "n.json")
    assert loaded.books == []
    assert document(loaded) == card
    assert document(loaded, "ccv3")["data"]["character_book"] is None


def test_converted_entries_keep_sillytaverns_key_order() -> None:
    # the timed-effect hash is computed over the entry's JSON text, so key order matters
    entry = cards.card_entry_to_wi({"id": 4, "keys": ["k"], "content": "c", "enabled": True,
                                    "insertion_order": 1, "extensions": {"x": 1}}, 0)
    keys = list(entry)
    assert keys[:12] == ["key", "keysecondary", "comment", "content", "constant", "vectorized", "selective",
                         "selectiveLogic", "addMemo", "order", "position", "disable"]
    assert keys[-5:] == ["delay", "triggers", "uid", "displayIndex", "extensions"]
    assert keys.index("outletName") == keys.index("depth") + 1


def test_an_array_entry_is_written_back_as_it_was() -> None:
    """A card book entry that is an array (read as an empty, disabled entry, as SillyTavern does)
    stays the array when another entry is edited and the card written back."""
    card = {"spec": "chara_card_v2", "data": {"name": "N", "character_book": {"entries": [
        [1, 2], {"id": 1, "keys": ["k"], "content": "C", "enabled": True}]}}}
    loaded = load_bytes(json.dumps(card).encode(), "c.json")
    loaded.books[0].entries[1].content = "D"
    written = json.loads(render(loaded)[0])["data"]["character_book"]["entries"]
    assert written == [[1, 2], {"id": 1, "keys": ["k"], "content": "D", "enabled": True}]


# SillyTavern 1.12.6 stored this card book entry as (its importer, the same card):
_ST112_STORED = {"key": ["dragon"], "keysecondary": [], "comment": "", "content": "Dragons.", "constant": False,
                 "vectorized": False, "selective": False, "selectiveLogic": 0, "addMemo": False, "order": 100,
                 "position": 0, "disable": False, "excludeRecursion": False, "preventRecursion": False,
                 "delayUntilRecursion": False, "probability": 100, "useProbability": True, "depth": 4, "group": "",
                 "groupOverride": False, "groupWeight": 100, "scanDepth": None, "caseSensitive": None,
                 "matchWholeWords": None, "useGroupScoring": None, "automationId": "", "role": 0, "sticky": 3,
                 "cooldown": None, "delay": None, "uid": 0, "displayIndex": 0}


def test_an_imported_entry_hashes_as_each_version_stored_it() -> None:
    """A card book entry's timed-effect hash is the hash of the JSON that version's importer
    stored: 1.12.6's importer did not write the fields 1.18 added, so under 1.12 a sticky record
    SillyTavern 1.12.6 wrote for it still finds it. (Both hashes are SillyTavern's own, from its
    importers' output.)"""
    book = {"name": "B", "entries": [{"id": 0, "keys": ["dragon"], "content": "Dragons.", "enabled": True,
                                      "insertion_order": 100, "position": "before_char", "extensions": {"sticky": 3}}]}
    card = json.dumps({"spec": "chara_card_v2", "data": {"name": "X", "character_book": book}}).encode()
    imported = load_bytes(card, "card.json").books[0]
    assert [lorescan.compile([imported], compat=v)._all[0].st_hash for v in ("1.12", "1.18")] == [
        1510926261953756, 7770550103786290]
    native = lorescan.Lorebook.from_entries("B", [_ST112_STORED])
    assert lorescan.compile([native], compat="1.12")._all[0].st_hash == 1510926261953756
    state = lorescan.TimedState.model_validate(
        {"sticky": {"B.0": {"hash": 1510926261953756, "start": 1, "end": 4, "protected": False}}})
    lore = lorescan.compile([imported], compat="1.12", tokenizer="words")
    chat = [lorescan.ChatMessage(name="U", is_user=True, mes="hello"), lorescan.ChatMessage(name="X", mes="hi")]
    card_x = lorescan.Character(name="X")
    assert lore.activate(chat, timed=state, character=card_x, char_name="X").activated_keys() == ["B.0"]
    state.sticky["B.0"].hash = 7770550103786290        # 1.18's hash: not this entry under 1.12.6
    assert lore.activate(chat, timed=state, character=card_x, char_name="X").activated_keys() == []


def test_fields_as_sillytavern_imports_them() -> None:
    """What SillyTavern's importers keep of a card (values from running its own importer on
    the same cards): a V1 card keeps only its V1 fields, and its creator notes are
    ``creatorcomment ?? creator_notes`` without the placeholder; a V2 card's V2-only fields come
    from ``data`` alone, and a card with a spec but no ``data`` has none."""
    def read(card: dict) -> tuple:
        loaded = load_bytes(json.dumps(card).encode(), "c.json")
        c = loaded.character
        return (c.name, c.description, c.creator_notes, c.system_prompt, c.tags, len(loaded.books), loaded.warnings)

    book = {"entries": [{"id": 0, "keys": ["k"], "content": "c", "enabled": True}]}
    v1 = {"name": "Ann", "description": "D", "creatorcomment": "CC", "creator_notes": "CN", "tags": "a, b ,c",
          "system_prompt": "SP", "character_book": book}
    assert read(v1) == ("Ann", "D", "CC", "", ["a", "b", "c"], 0, [
        "a V1 card (no spec): SillyTavern's import keeps only its V1 fields, so its character_book, "
        "system_prompt are not read"])
    assert read({"name": "Ann", "description": "D", "creator_notes": "Creator's notes go here. X"})[2] == " X"
    v2 = {"spec": "chara_card_v2", "creatorcomment": "CC", "data": {"name": "Ann", "description": "D"}}
    assert read(v2)[2] == ""
    # readFromV2: a V1 field data has (even "") is data's; one it lacks is the top level's
    v2 = {"spec": "chara_card_v2", "name": "Top", "description": "TD", "tags": ["t"], "data": {"name": ""}}
    assert read(v2)[:5] == ("", "TD", "", "", ["t"])
    no_data = {"spec": "chara_card_v2", "name": "Ann", "description": "TD", "creator_notes": "TCN",
               "system_prompt": "TSP", "character_book": book}
    assert read(no_data)[:6] == ("Ann", "TD", "", "", [], 0)


def test_a_book_never_read_is_kept_when_the_card_is_written() -> None:
    """A malformed book (or a V1 card's top-level one) was never read, so writing the card keeps it
    as it was; a book that was read and then removed is removed."""
    for card in ({"spec": "chara_card_v2", "data": {"name": "N", "character_book": {"entries": "no"}}},
                 {"name": "N", "description": "D", "character_book": {"entries": []}}):
        loaded = load_bytes(json.dumps(card).encode(), "c.json")
        assert cards.card_of(loaded) == card
    card = {"spec": "chara_card_v2", "data": {"name": "N", "character_book": {"entries": []}}}
    loaded = load_bytes(json.dumps(card).encode(), "c.json")
    loaded.books.clear()
    assert cards.card_of(loaded) == {"spec": "chara_card_v2", "data": {"name": "N"}}


def test_a_card_is_named_as_each_version_imports_it() -> None:
    """SillyTavern 1.18 cleans an imported card's name as the ``sanitize-filename`` package does
    ({{char}} is then "Dr. Who"); 1.12.6 only a V1 card's. (The cleaning agrees with that package
    on 3,000 generated names.)"""
    from lorescan._inputs import character_from_card, sanitized_name

    assert [sanitized_name(n) for n in ("Dr. Who?", "Mrs.", "AC/DC", 'Say "hi"', "con.txt", "é" * 150)] == [
        "Dr. Who", "Mrs", "ACDC", "Say hi", "", "é" * 127]
    v2 = load_bytes(json.dumps({"spec": "chara_card_v2", "data": {"name": "Dr. Who?"}}).encode(), "c.json")
    v1 = load_bytes(json.dumps({"name": "Who?", "description": "D"}).encode(), "v1.json")
    names = [(character_from_card(c.character, "c.json", v).name, character_from_card(c.character, "c.json", v).avatar)
             for c in (v2, v1) for v in ("1.18", "1.12")]
    assert names == [("Dr. Who", "Dr. Who.png"), ("Dr. Who?", "Dr. Who?.png"), ("Who", "Who.png"), ("Who", "Who.png")]
