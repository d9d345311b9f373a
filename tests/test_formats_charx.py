"""CHARX archives: reading card.json and the icon, writing back member by member, and refusing
zip bombs, encrypted or card-less archives and Backyard (.byaf) files."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from lorescan._errors import FormatError
from lorescan._formats import charx, png
from lorescan._load import document, load, load_bytes, render

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"
SAMPLE = FIXTURES / "sample.charx"
CARD = json.loads((FIXTURES / "charx_card.json").read_text(encoding="utf-8"))


def _zip(members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as archive:
        for name, body in members.items():
            archive.writestr(name, body)
    return buf.getvalue()


def test_sample_charx_loads() -> None:
    loaded = load(SAMPLE)
    assert loaded.format == "charx"
    assert loaded.raw == CARD
    info = loaded.character
    assert info is not None and (info.name, info.spec, info.tags) == ("Harbor Master", "chara_card_v3", ["harbor"])
    book = loaded.books[0]
    assert (book.name, book.scope) == ("Harbor Lore", "character")
    assert [(e.uid, e.key, e.position) for e in book.scan_order()] == [(0, ["customs"], 0), (7, ["/tide(s)?/i"], 4)]
    assert loaded.image == png.blank_png()


def test_unchanged_charx_is_written_byte_for_byte() -> None:
    loaded = load(SAMPLE)
    assert render(loaded)[0] == SAMPLE.read_bytes()


def test_edit_replaces_only_card_json() -> None:
    loaded = load(SAMPLE)
    loaded.books[0].entries[1].content = "High tide is at noon."
    out = render(loaded)[0]
    before = zipfile.ZipFile(io.BytesIO(SAMPLE.read_bytes()))
    after = zipfile.ZipFile(io.BytesIO(out))
    assert after.namelist() == before.namelist()
    for name in before.namelist():
        if name != "card.json":
            assert after.read(name) == before.read(name)
    card = json.loads(after.read("card.json"))
    assert card["data"]["character_book"]["entries"][1]["content"] == "High tide is at noon."
    card["data"]["character_book"]["entries"][1]["content"] = "High tide is at midnight."
    assert card == CARD


def test_png_card_to_charx_carries_the_image() -> None:
    png_card = load_bytes(render(load(FIXTURES / "card_v3_decorators.json"), "png")[0], "ilse.png")
    out = render(png_card, "charx")[0]
    archive = zipfile.ZipFile(io.BytesIO(out))
    assert sorted(archive.namelist()) == ["assets/icon/images/main.png", "card.json"]
    icon = archive.read("assets/icon/images/main.png")
    assert png.read_chunks(icon, None)[0][-1].type == b"IEND"
    assert not any(c.type == b"tEXt" for c in png.read_chunks(icon, None)[0])
    again = load_bytes(out, "ilse.charx")
    assert again.raw["data"]["assets"][0] == {"type": "icon", "uri": "embeded://assets/icon/images/main.png",
                                              "name": "main", "ext": "png"}
    assert again.image == icon
    assert [e.to_json() for e in again.books[0].entries] == [e.to_json() for e in png_card.books[0].entries]


def test_charx_to_png_uses_the_icon() -> None:
    out = render(load(SAMPLE), "png")[0]
    again = load_bytes(out, "h.png")
    assert again.raw == CARD


def test_prefixed_archive_is_read() -> None:
    data = b"\xff\xd8\xff\xe0JPEGDATA" + SAMPLE.read_bytes()
    loaded = load_bytes(data, "jpeg.charx")
    assert loaded.format == "charx"
    assert loaded.warnings[0] == "12 bytes before the ZIP archive are ignored"
    loaded.books[0].entries[0].order = 1
    assert render(loaded)[0].startswith(b"\xff\xd8\xff\xe0JPEGDATA")


def test_missing_card_json() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(_zip({"readme.txt": b"hi"}), "x.charx")
    assert str(info.value) == "x.charx: ZIP archive without card.json: not a CHARX card"


def test_byaf_is_unsupported() -> None:
    data = _zip({"manifest.json": b"{}", "characters/character.json": b"{}"})
    with pytest.raises(FormatError) as info:
        load_bytes(data, "x.byaf")
    assert str(info.value) == ("x.byaf: Backyard AI archive (.byaf) is not supported; export the character "
                               "as a PNG or JSON card")


def test_card_json_without_spec() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(_zip({"card.json": b'{"name": "x"}'}), "x.charx")
    assert str(info.value) == "x.charx: card.json has no 'spec' field"
    with pytest.raises(FormatError, match="card.json: invalid JSON"):
        load_bytes(_zip({"card.json": b'{"name": '}), "x.charx")


def test_zip_bomb_is_refused() -> None:
    bomb = _zip({"card.json": json.dumps(CARD).encode(), "assets/other/pad.bin": b"\0" * (8 << 20)})
    with pytest.raises(FormatError) as info:
        load_bytes(bomb, "bomb.charx")
    assert "inflates" in str(info.value) and "zip bomb" in str(info.value)
    assert str(info.value).startswith("bomb.charx: ZIP member 'assets/other/pad.bin' inflates ")


def test_total_size_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charx, "MAX_TOTAL_BYTES", 1000)
    data = _zip({"card.json": json.dumps(CARD).encode(), "a.bin": bytes(range(256)) * 8})
    with pytest.raises(FormatError, match="would inflate to .* bytes; more than 1000 are refused"):
        load_bytes(data, "big.charx")


def test_lying_header_cannot_inflate_past_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(charx, "MAX_CARD_BYTES", 64)
    with pytest.raises(FormatError, match="'card.json' is .* bytes; more than 64 are refused"):
        load_bytes(_zip({"card.json": json.dumps(CARD).encode()}), "c.charx")


def test_encrypted_member_is_refused() -> None:
    data = bytearray(_zip({"card.json": json.dumps(CARD).encode()}, zipfile.ZIP_STORED))
    data[6] |= 1  # local header flag
    central = data.rfind(b"PK\x01\x02")
    data[central + 8] |= 1  # central directory flag
    with pytest.raises(FormatError) as info:
        load_bytes(bytes(data), "enc.charx")
    assert str(info.value) == "enc.charx: ZIP member 'card.json' is encrypted"


def test_corrupt_zip() -> None:
    data = SAMPLE.read_bytes()
    with pytest.raises(FormatError) as info:
        load_bytes(data[: len(data) // 2], "half.charx")
    assert str(info.value).startswith("half.charx: not a readable ZIP archive")


def test_lorebook_cannot_become_a_charx() -> None:
    with pytest.raises(FormatError) as info:
        document(load(FIXTURES / "agnai_memory.json"), "charx")
    assert str(info.value).endswith("charx needs a character card; this is a agnai lorebook")


def test_self_extracting_prefix_is_found() -> None:
    data = b"MZ\0\0stub program\0" + SAMPLE.read_bytes()
    loaded = load_bytes(data, "sfx.exe")
    assert loaded.format == "charx" and loaded.raw == CARD


def test_corrupt_member_data() -> None:
    body = json.dumps(CARD).encode()
    data = bytearray(_zip({"card.json": body}))
    start = 30 + len("card.json")
    for i in range(start, start + 20):
        data[i] ^= 0x5A
    with pytest.raises(FormatError) as info:
        load_bytes(bytes(data), "bad.charx")
    assert str(info.value).startswith("bad.charx: ZIP member 'card.json' is corrupt")


def test_what_is_taken_for_a_zip_archive() -> None:
    """An archive from the first byte, or one appended to other data (its end record near the end);
    a local header's signature inside other data, or an end record alone, is not an archive."""
    archive = _zip({"card.json": b"{}"})
    assert charx.is_zip(archive) and charx.is_zip(b"MZ stub " * 100 + archive)
    assert not charx.is_zip(b'{"entries": {"0": {"content": "PK\\x03\\x04 ' + charx.ZIP_MAGIC + b'"}}}')
    assert not charx.is_zip(b"data " + b"PK\x05\x06" + bytes(18))
    assert charx.is_zip(charx.ZIP_MAGIC + b"truncated")     # from the first byte: read, then refused
    assert not charx.is_zip(b"")


def test_the_card_is_the_first_member_named_card_json() -> None:
    """SillyTavern reads the first member whose name ends with ``card.json`` (not under
    ``__MACOSX``), wherever it lies; writing the card back replaces that member."""
    def card(name: str) -> bytes:
        return json.dumps({"spec": "chara_card_v3", "spec_version": "3.0", "data": {"name": name}}).encode()
    data = _zip({"__MACOSX/card.json": card("Mac"), "sub/card.json": card("Bea"), "card.json": card("Ann")})
    loaded = load_bytes(data, "c.charx")
    assert loaded.character.name == "Bea"
    assert loaded.warnings == ["the card is 'sub/card.json' (the first member named *card.json, as SillyTavern "
                               "reads it)"]
    assert load_bytes(_zip({"mycard.json": card("My")}), "m.charx").character.name == "My"
    out = zipfile.ZipFile(io.BytesIO(charx.write_charx({"spec": "chara_card_v3", "data": {"name": "New"}}, data)))
    assert [json.loads(out.read(n))["data"]["name"] for n in out.namelist()] == ["Mac", "New", "Ann"]


def test_a_card_json_that_is_not_all_utf8_is_read_as_sillytavern_reads_it() -> None:
    card = '{"spec": "chara_card_v3", "spec_version": "3.0", "data": {"name": "Zoé"}}'.encode("latin-1")
    loaded = load_bytes(_zip({"card.json": card}), "z.charx")
    assert (loaded.character.name, loaded.warnings) == ("Zo\ufffd", [
        "card.json is not all UTF-8 (byte 69): such bytes are read as U+FFFD, as SillyTavern reads it"])
