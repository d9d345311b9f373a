"""PNG cards: chunk reading with CRC checks, ccv3 over chara, SillyTavern-style writing that keeps
every other chunk, NovelAI naidata images, and one-line errors for broken files."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from lorescan._errors import FormatError
from lorescan._formats import png
from lorescan._load import document, load, load_bytes, render

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"
CARD = json.loads((FIXTURES / "card_v3_decorators.json").read_text(encoding="utf-8"))


def _chunk(ctype: bytes, data: bytes) -> bytes:
    return png.Chunk(ctype, data).to_bytes()


def _text(keyword: str, value: object) -> bytes:
    payload = base64.b64encode(json.dumps(value).encode("utf-8"))
    return _chunk(b"tEXt", keyword.encode() + b"\0" + payload)


def _png(*chunks: bytes) -> bytes:
    blank = png.blank_png()
    iend = _chunk(b"IEND", b"")
    return blank[: -len(iend)] + b"".join(chunks) + iend


def test_blank_png_is_valid() -> None:
    chunks, trailing = png.read_chunks(png.blank_png(), None)
    assert [c.type for c in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    assert trailing == b""
    width, height = struct.unpack(">II", chunks[0].data[:8])
    assert (width, height) == (1, 1)


def test_ccv3_is_preferred_over_chara() -> None:
    v2 = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "V2"}}
    v3 = {"spec": "chara_card_v3", "spec_version": "3.0", "data": {"name": "V3"}}
    loaded = load_bytes(_png(_text("chara", v2), _text("CCV3", v3)), "two.png")
    assert loaded.character is not None and loaded.character.name == "V3"
    assert loaded.warnings == ["'chara' and 'ccv3' chunks disagree; 'ccv3' is used"]
    assert loaded.format == "png"
    assert loaded.character.avatar == "two.png"


def test_first_chara_wins_without_ccv3() -> None:
    first = {"name": "First", "description": "", "personality": "", "scenario": "", "first_mes": "",
             "mes_example": ""}
    loaded = load_bytes(_png(_text("Chara", first), _text("chara", {"name": "Second"})), "c.png")
    assert loaded.character is not None and loaded.character.name == "First"
    assert loaded.format == "png" and loaded.character.format == "ccv1"


def test_write_back_keeps_other_chunks_and_replaces_card_chunks() -> None:
    exif = _chunk(b"eXIf", b"MM\0*fake")
    comment = _chunk(b"tEXt", b"Comment\0hello")
    source = _png(exif, _text("chara", CARD), comment)
    loaded = load_bytes(source, "ilse.png")
    assert render(loaded)[0] == source
    loaded.books[0].entries[0].content = "Edited."
    out = render(loaded)[0]
    chunks, _ = png.read_chunks(out, None)
    assert [(c.type, c.keyword) for c in chunks] == [
        (b"IHDR", None), (b"IDAT", None), (b"eXIf", None), (b"tEXt", "Comment"), (b"tEXt", "chara"),
        (b"tEXt", "ccv3"), (b"IEND", None)]
    assert chunks[2].data == b"MM\0*fake"
    chara = png.decode_payload(chunks[4].text, None, "chara")
    ccv3 = png.decode_payload(chunks[5].text, None, "ccv3")
    assert chara["data"]["character_book"]["entries"][0]["content"] == "Edited."
    assert ccv3["spec"] == "chara_card_v3" and ccv3["data"] == chara["data"]


def test_json_card_to_png_and_back() -> None:
    loaded = load(FIXTURES / "card_v3_decorators.json")
    data, _ = render(loaded, "png")
    again = load_bytes(data, "ilse.png")
    assert again.raw == CARD
    assert [e.to_json() for e in again.books[0].entries] == [e.to_json() for e in loaded.books[0].entries]
    v2_source = dict(CARD, spec="chara_card_v2", spec_version="2.0")
    as_v2 = load_bytes(json.dumps(v2_source).encode(), "v2.json")
    chunks, _ = png.read_chunks(render(as_v2, "png")[0], None)
    texts = {c.keyword: png.decode_payload(c.text, None, c.keyword or "") for c in chunks if c.type == b"tEXt"}
    assert texts["chara"]["spec"] == "chara_card_v2"
    assert texts["ccv3"]["spec"] == "chara_card_v3"


def test_truncated_png() -> None:
    data = _png(_text("chara", CARD))
    with pytest.raises(FormatError) as info:
        load_bytes(data[:50], "cut.png")
    assert str(info.value).startswith("cut.png: truncated PNG: chunk 'IDAT' at byte 33 needs ")
    with pytest.raises(FormatError, match="truncated PNG: no IEND chunk"):
        load_bytes(data[:33], "cut.png")


def test_bad_crc() -> None:
    data = bytearray(_png(_text("chara", CARD)))
    data[45] ^= 0xFF
    with pytest.raises(FormatError) as info:
        load_bytes(bytes(data), "crc.png")
    assert str(info.value) == "crc.png: PNG chunk 'IDAT' at byte 33 has a bad CRC"


def test_no_card_chunk() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(png.blank_png(), "plain.png")
    assert str(info.value) == "plain.png: PNG has no tEXt metadata, so no character card"
    with pytest.raises(FormatError) as info:
        load_bytes(_png(_chunk(b"tEXt", b"Software\0gimp")), "gimp.png")
    assert str(info.value) == "gimp.png: PNG has no 'chara' or 'ccv3' tEXt chunk (found: Software)"


def test_invalid_base64_and_json() -> None:
    with pytest.raises(FormatError) as info:
        load_bytes(_png(_chunk(b"tEXt", b"chara\0!!not base64!!")), "b64.png")
    assert str(info.value) == "b64.png: tEXt 'chara' is not valid base64"
    bad_json = base64.b64encode(b'{"name": ').decode()
    with pytest.raises(FormatError) as info:
        load_bytes(_png(_chunk(b"tEXt", b"chara\0" + bad_json.encode())), "json.png")
    assert str(info.value).startswith("json.png: tEXt 'chara': invalid JSON: Expecting value")
    not_utf8 = base64.b64encode(b'\xff\xfe').decode()
    with pytest.raises(FormatError, match="invalid JSON"):      # read as U+FFFD U+FFFD, as Node reads it
        load_bytes(_png(_chunk(b"tEXt", b"chara\0" + not_utf8.encode())), "u.png")
    array = base64.b64encode(b"[1, 2]").decode()
    with pytest.raises(FormatError, match="holds JSON list, not a card object"):
        load_bytes(_png(_chunk(b"tEXt", b"ccv3\0" + array.encode())), "a.png")


def test_unpadded_base64_is_accepted() -> None:
    payload = base64.b64encode(json.dumps(CARD).encode()).decode().rstrip("=") + "\n"
    loaded = load_bytes(_png(_chunk(b"tEXt", b"chara\0" + payload.encode())), "np.png")
    assert loaded.character is not None and loaded.character.name == "Captain Ilse"


def test_oversize_chunk_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(png, "MAX_CHUNK_BYTES", 100)
    with pytest.raises(FormatError) as info:
        load_bytes(_png(_text("chara", CARD)), "big.png")
    assert "chunks over 100 bytes are refused" in str(info.value)
    assert str(info.value).startswith("big.png: PNG chunk 'tEXt' at byte ")


def test_huge_declared_length_is_refused() -> None:
    data = png.SIGNATURE + struct.pack(">I4s", 0x7FFFFFFF, b"tEXt") + b"chara\0"
    with pytest.raises(FormatError, match="refused"):
        load_bytes(data, "huge.png")


def test_trailing_bytes_are_kept_and_reported() -> None:
    source = _png(_text("chara", CARD)) + b"TRAILER"
    loaded = load_bytes(source, "t.png")
    assert loaded.warnings[0] == "7 bytes after IEND are ignored"
    loaded.books[0].entries[0].order = 1
    assert render(loaded)[0].endswith(b"TRAILER")


def test_naidata_png_is_a_novelai_lorebook() -> None:
    lorebook = json.loads((FIXTURES / "novelai_small.lorebook").read_text(encoding="utf-8"))
    payload = base64.b64encode(json.dumps(lorebook).encode()).decode()
    source = _png(_chunk(b"tEXt", b"naidata\0" + payload.encode()))
    loaded = load_bytes(source, "book.png")
    assert loaded.format == "novelai-png"
    assert loaded.books[0].name == "book"
    assert [e.comment for e in loaded.books[0].entries] == ["Lighthouse", "   "]
    assert render(loaded)[0] == source
    loaded.books[0].entries[0].content = "Lit again."
    again = load_bytes(render(loaded)[0], "book.png")
    assert again.books[0].entries[0].content == "Lit again."
    assert document(again)["categories"] == lorebook["categories"]


def test_card_chunk_with_utf8_text() -> None:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "周瞳 ✨"}}
    loaded = load_bytes(_png(_text("chara", card)), "zh.png")
    assert loaded.character is not None and loaded.character.name == "周瞳 ✨"


def test_crc_is_recomputed_on_write() -> None:
    loaded = load(FIXTURES / "card_v3_decorators.json")
    data = render(loaded, "png")[0]
    pos = len(png.SIGNATURE)
    while pos < len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert zlib.crc32(ctype + body) & 0xFFFFFFFF == crc
        pos += 12 + length
    assert pos == len(data)


def test_a_card_payload_is_read_as_sillytavern_reads_it() -> None:
    """SillyTavern's server decodes the card chunk with Node's Buffer: both base64 alphabets, other
    characters skipped, a lone last character dropped, and bytes that are not UTF-8 read as U+FFFD
    (each value below is what Node gives for the same chunk). Each is said in a warning."""
    latin = base64.b64encode(b'{"name": "Caf\xe9", "description": "D"}').decode()
    loaded = load_bytes(_png(_chunk(b"tEXt", b"chara\0" + latin.encode())), "l.png")
    assert loaded.character.name == "Caf\ufffd"
    assert loaded.warnings == ["tEXt 'chara' is not all UTF-8 (byte 13); such bytes are read as U+FFFD, "
                               "as SillyTavern reads them"]
    url_safe = base64.urlsafe_b64encode(json.dumps({"name": "Ann??>", "description": "D"}).encode()).decode()
    loaded = load_bytes(_png(_chunk(b"tEXt", b"chara\0!" + url_safe.encode() + b"Z")), "u.png")
    assert loaded.character.name == "Ann??>"
    assert loaded.warnings == ["tEXt 'chara' is not strict base64; read as SillyTavern reads it (other "
                               "characters skipped, a lone last character dropped)"]
    assert (png.node_base64("YW-_"), png.node_base64("YWJj=ZGVm"), png.node_base64("Y=WJj"),
            png.node_base64("YWJjZ")) == (bytes([97, 111, 191]), b"abc", b"", b"abc")


def test_iend_is_taken_as_sillytavern_takes_it() -> None:
    """SillyTavern's PNG reader stops at IEND's type: a bad IEND CRC, or a file cut just after
    IEND's type, still reads (every other chunk's CRC is checked)."""
    payload = base64.b64encode(json.dumps(CARD).encode())
    good = _png(_chunk(b"tEXt", b"chara\0" + payload))
    name = CARD["data"]["name"]
    assert load_bytes(good[:-4] + b"\0\0\0\0", "crc.png").character.name == name
    assert load_bytes(good[:-4], "cut.png").character.name == name
    with pytest.raises(FormatError, match="bad CRC"):
        load_bytes(good[:-len(_chunk(b"IEND", b"")) - 1] + b"\0" + _chunk(b"IEND", b""), "text.png")


def test_a_png_sillytavern_refuses_is_read_with_a_warning() -> None:
    """SillyTavern's PNG reader refuses a PNG whose first chunk is not IHDR, and one with a NUL in
    any tEXt chunk's text; lorescan reads the card and says that SillyTavern would not."""
    payload = base64.b64encode(json.dumps(CARD).encode())
    loaded = load_bytes(_png(_chunk(b"tEXt", b"Comment\0a\0b"), _chunk(b"tEXt", b"chara\0" + payload)), "n.png")
    assert loaded.character.name == CARD["data"]["name"]
    assert loaded.warnings[-1] == "SillyTavern refuses this PNG: tEXt 'Comment' holds a NUL in its text"
    good = _png(_chunk(b"tEXt", b"chara\0" + payload))
    ihdr_length = struct.unpack(">I", good[8:12])[0]
    ihdr = good[8:8 + 12 + ihdr_length]
    swapped = good[:8] + _chunk(b"tEXt", b"Software\0x") + ihdr + good[8 + len(ihdr):]
    assert load_bytes(swapped, "s.png").warnings[-1] == ("SillyTavern refuses this PNG: its first chunk is "
                                                         "'tEXt', not 'IHDR'")
