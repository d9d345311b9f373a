"""Every real file in ``../shared/corpora`` (see its SOURCES.md): it loads as the right format
with the entry or message count SOURCES.md gives, writes back to the same JSON value (and, when
unchanged, the same bytes), and the broken or unsupported ones fail with one clean line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lorescan._errors import LorescanError
from lorescan._formats import png
from lorescan._load import document, load, render

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"

#: local path → (format, lorebook entries or None, chat messages or None), from SOURCES.md.
EXPECTED: dict[str, tuple[str, int | None, int | None]] = {
    "card-json/bronya_Arlecchino.json": ("ccv3", 42, None),
    "card-json/bronya_Castorice.json": ("ccv3", 16, None),
    "card-json/bronya_Kafka.json": ("ccv2", 20, None),
    "card-json/bronya_Lumine.json": ("ccv2", 119, None),
    "card-json/bronya_RaidenEi_v1.json": ("ccv1", 0, None),
    "card-json/bronya_Yshtola.json": ("ccv2", 0, None),
    "card-png/bronya_Acheron.png": ("png", 19, None),
    "card-png/bronya_Aether.png": ("png", 119, None),
    "card-png/bronya_Arlecchino.png": ("png", 42, None),
    "card-png/bronya_Celestia.png": ("png", 11, None),
    "card-png/bronya_Melina.png": ("png", 34, None),
    "card-png/bronya_RaidenEi_v1.png": ("png", 0, None),
    "card-png/bronya_Xiao.png": ("png", 31, None),
    "card-png/sillytavern_default_Seraphina.png": ("png", 4, None),
    "card-png/stcontent_Amy.png": ("png", 0, None),
    "card-png/stcontent_CodingSensei.png": ("png", 0, None),
    "card-png/stcontent_FluxTheCat.png": ("png", 0, None),
    "card-png/stcontent_Sakana.png": ("png", 14, None),
    "card-png/vibetavern_ccv3_over_chara.png": ("png", 0, None),
    "kobold/klite_scenario_julius_caesar_worldinfo.json": ("kobold-lite", 34, None),
    "kobold/sillytavern_KoboldAI_world_Sample.json": ("kobold", 2, None),
    "novelai/grahamwaters_lorebook_example.lorebook": ("novelai", 125, None),
    "novelai/grahamwaters_lorebook_generated_wiki.lorebook": ("novelai", 174, None),
    "novelai/grahamwaters_new_story_single_empty.lorebook": ("novelai", 1, None),
    "novelai/ssjmarx_test_lorebook_v6.lorebook": ("novelai", 3, None),
    "novelai/wbrown_a_laboratory_assistant_interviewee.scenario": ("novelai-scenario", 12, None),
    "risu/conirinn3_rpg_module_lorebook.json": ("risu", 2, None),
    "st-chats/sillytavern_early_Aqua.jsonl": ("st-chat", None, 1),
    "st-chats/sillytavern_early_Darkness.jsonl": ("st-chat", None, 1),
    "st-chats/sillytavern_early_Megumin.jsonl": ("st-chat", None, 3),
    "st-chats/stbackload_Assistant_2026-01-15.jsonl": ("st-chat", None, 2),
    "st-chats/stbackload_header_only.jsonl": ("st-chat", None, 0),
    "st-chats/tavernai_legacy_Aqua_chat.json": ("tavernai-chat", None, 1),
    "st-worldinfo/bronya_Eorzea.json": ("st", 29, None),
    "st-worldinfo/bronya_GI-Core.json": ("st", 256, None),
    "st-worldinfo/bronya_HI3-Core.json": ("st", 11, None),
    "st-worldinfo/bronya_HSR.json": ("st", 251, None),
    "st-worldinfo/bronya_Traveler-WI.json": ("st", 119, None),
    "st-worldinfo/bronya_Veliona_Lorebook_HI3.json": ("st", 26, None),
    "st-worldinfo/sillytavern_default_Eldoria.json": ("st", 4, None),
    "st-worldinfo/sillytavern_early_Toaru.json": ("st", 18, None),
    "st-worldinfo/vibetavern_complete_book.json": ("st", 6, None),
    "st-worldinfo/vibetavern_st_v1150_fields.json": ("st", 8, None),
    "st-worldinfo/vibetavern_timed_effects.json": ("st", 4, None),
}
BROKEN = {
    "novelai/MALFORMED_grahamwaters_entries_is_python_repr.lorebook":
        "field 'entries': must be an array of NovelAI entries, got string",
    "card-other/vibetavern_sample.byaf":
        "Backyard AI archive (.byaf) is not supported; export the character as a PNG or JSON card",
}


@pytest.fixture(scope="module")
def corpora() -> Path:
    if not CORPORA.is_dir():
        pytest.skip("../shared/corpora is not present")
    return CORPORA


def _json_of(path: Path) -> object:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def test_every_corpus_file_is_listed(corpora: Path) -> None:
    files = {str(p.relative_to(corpora)) for p in corpora.rglob("*") if p.is_file() and not p.name.startswith(".")}
    files.discard("SOURCES.md")
    assert files == set(EXPECTED) | set(BROKEN)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_loads_with_its_counts(corpora: Path, name: str) -> None:
    fmt, entries, messages = EXPECTED[name]
    loaded = load(corpora / name)
    assert loaded.format == fmt
    if entries is not None:
        assert sum(len(b.entries) for b in loaded.books) == entries
        assert len(loaded.books) == (1 if entries or fmt not in ("ccv1", "ccv2", "png") else 0)
    if messages is not None:
        assert loaded.chat is not None and len(loaded.chat.messages) == messages


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_round_trips(corpora: Path, name: str) -> None:
    path = corpora / name
    loaded = load(path)
    data, notes = render(loaded)
    assert data == path.read_bytes()
    assert notes == []
    if path.suffix == ".png":
        card, _, _ = png.read_card_png(path.read_bytes(), str(path))
        assert document(loaded) == card
    else:
        assert document(loaded) == _json_of(path)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_file_written_alike_with_and_without_the_c_layout(corpora: Path, name: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Each file's document, written indented and compact, is the same text with the C extension's
    ``json_layout`` as with Python's own indenting encoder."""
    from lorescan._formats import common

    if common._native is None:
        pytest.skip("the C extension is not built")
    doc = document(load(corpora / name))
    for indent in (4, None):
        got = common.dump_json(doc, indent)
        monkeypatch.setattr(common, "_native", None)
        assert got == common.dump_json(doc, indent)
        monkeypatch.undo()


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_files_fail_with_one_line(corpora: Path, name: str) -> None:
    with pytest.raises(LorescanError) as info:
        load(corpora / name)
    message = str(info.value)
    assert message == f"{corpora / name}: {BROKEN[name]}"
    assert "\n" not in message


def test_card_books_are_named_like_sillytavern_names_them(corpora: Path) -> None:
    seraphina = load(corpora / "card-png/sillytavern_default_Seraphina.png")
    assert seraphina.character is not None and seraphina.character.name == "Seraphina"
    assert [(b.name, b.scope) for b in seraphina.books] == [("Eldoria", "character")]
    assert load(corpora / "st-worldinfo/sillytavern_default_Eldoria.json").books[0].name == "sillytavern_default_Eldoria"


def test_ccv3_wins_over_chara_in_real_files(corpora: Path) -> None:
    tiny = load(corpora / "card-png/vibetavern_ccv3_over_chara.png")
    assert tiny.character is not None and tiny.character.name == "V3"
    amy = load(corpora / "card-png/stcontent_Amy.png")
    assert amy.character is not None and amy.character.spec == "chara_card_v3"


def test_sakana_keeps_its_exif_chunk_when_edited(corpora: Path) -> None:
    path = corpora / "card-png/stcontent_Sakana.png"
    loaded = load(path)
    loaded.books[0].entries[0].content = "edited"
    chunks, _ = png.read_chunks(render(loaded)[0], None)
    before, _ = png.read_chunks(path.read_bytes(), None)
    keep = [(c.type, c.data) for c in before if c.keyword not in ("chara", "ccv3")]
    assert [(c.type, c.data) for c in chunks if c.keyword not in ("chara", "ccv3")] == keep
    assert [c.keyword for c in chunks if c.type == b"tEXt"] == ["chara", "ccv3"]


def test_card_lore_to_world_info_matches_the_card(corpora: Path) -> None:
    loaded = load(corpora / "card-json/bronya_Kafka.json")
    st = document(loaded, "st")
    book = loaded.raw["data"]["character_book"]
    assert st["originalData"] == book
    assert len(st["entries"]) == len(book["entries"]) == 20
    first = book["entries"][0]
    converted = st["entries"][str(first.get("id", 0))]
    assert converted["key"] == first["keys"] and converted["content"] == first["content"]
    assert converted["order"] == first["insertion_order"]
    assert converted["disable"] is (not first["enabled"])


def test_timed_world_info_of_a_real_chat(corpora: Path) -> None:
    loaded = load(corpora / "st-chats/stbackload_Assistant_2026-01-15.jsonl")
    chat = loaded.chat
    assert chat is not None
    assert (chat.user_name, chat.character_name) == ("周瞳", "Assistant")
    assert chat.timed is not None and chat.timed.sticky == {} and chat.timed.cooldown == {}
    assert chat.metadata["integrity"] == "49b92c50-4505-4e02-94f1-e56877fadba0"
    assert chat.messages[1].swipes is not None
