"""Books read from the real corpus files equal, entry for entry, the books SillyTavern's own
importer produced for the ``real-`` conformance scenarios (card books via convertCharacterBook)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lorescan._load import load

from .conftest import CONFORMANCE

SOURCES = {
    "acheron": "card-png/bronya_Acheron.png", "arlecchino": "card-json/bronya_Arlecchino.json",
    "castorice": "card-json/bronya_Castorice.json", "celestia": "card-png/bronya_Celestia.png",
    "eldoria": "st-worldinfo/sillytavern_default_Eldoria.json", "eorzea": "st-worldinfo/bronya_Eorzea.json",
    "gicore": "st-worldinfo/bronya_GI-Core.json", "hi3core": "st-worldinfo/bronya_HI3-Core.json",
    "hsr": "st-worldinfo/bronya_HSR.json", "kafka": "card-json/bronya_Kafka.json",
    "lumine": "card-json/bronya_Lumine.json", "melina": "card-png/bronya_Melina.png",
    "sakana": "card-png/stcontent_Sakana.png", "seraphina": "card-png/sillytavern_default_Seraphina.png",
    "toaru": "st-worldinfo/sillytavern_early_Toaru.json", "traveler": "st-worldinfo/bronya_Traveler-WI.json",
    "veliona": "st-worldinfo/bronya_Veliona_Lorebook_HI3.json",
    "vtcomplete": "st-worldinfo/vibetavern_complete_book.json",
    "vtfields": "st-worldinfo/vibetavern_st_v1150_fields.json",
    "vttimed": "st-worldinfo/vibetavern_timed_effects.json", "xiao": "card-png/bronya_Xiao.png",
}


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_corpus_book_equals_the_scenario_book(name: str, shared_corpora: Path) -> None:
    scenario = json.loads(sorted((CONFORMANCE / "st-1.18").glob(f"real-{name}-*.json"))[0].read_text())
    mine = {e.uid: e.to_json() for e in load(str(shared_corpora / SOURCES[name])).books[0].entries}
    candidates = [scenario.get("entries"), scenario.get("character_entries")]
    candidates += [b["entries"] for b in scenario.get("books", [])]
    books = [{e["uid"]: e for e in c} for c in candidates if c]
    theirs = next(b for b in books if set(b) == set(mine))
    for uid, entry in theirs.items():
        for field, value in entry.items():
            assert mine[uid].get(field, "<absent>") == value, f"entry {uid} field {field}"
