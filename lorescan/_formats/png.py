"""PNG chunks: read a card (tEXt ``ccv3``/``chara``, base64 JSON) or a NovelAI lorebook image
(tEXt ``naidata``), and write one back keeping the image and every other chunk.

Reading follows SillyTavern's server: every chunk CRC is checked, only ``tEXt`` counts, keywords
compare case-insensitively, the first ``ccv3`` wins over the first ``chara``, the text is Latin-1
and its base64 decodes to UTF-8 JSON. Writing follows SillyTavern too: card chunks are dropped and
``chara`` (the card as given) then ``ccv3`` (the same with ``spec`` V3) go right before ``IEND``.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import FormatError
from . import cards
from .common import dump_json, parse_json
from .registry import Detector, Format, ReadContext, Reading

if TYPE_CHECKING:
    from .._load import Loaded

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Largest chunk lorescan accepts (cards are well under 10 MB of base64).
MAX_CHUNK_BYTES = 64 * 1024 * 1024
#: Most chunks one file may have.
MAX_CHUNKS = 100_000
CARD_KEYWORDS = ("chara", "ccv3")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


@dataclass
class Chunk:
    """One PNG chunk: its 4-letter type and data (the CRC is recomputed when written)."""

    type: bytes
    data: bytes

    @property
    def keyword(self) -> str | None:
        """The keyword of a ``tEXt`` chunk (bytes before the first NUL), else ``None``."""
        if self.type != b"tEXt":
            return None
        return self.data.split(b"\0", 1)[0].decode("latin-1")

    @property
    def text(self) -> str:
        """The text of a ``tEXt`` chunk, byte per character (as ``png-chunk-text`` decodes it)."""
        parts = self.data.split(b"\0", 1)
        return parts[1].decode("latin-1") if len(parts) > 1 else ""

    def to_bytes(self) -> bytes:
        crc = zlib.crc32(self.type + self.data) & 0xFFFFFFFF
        return struct.pack(">I", len(self.data)) + self.type + self.data + struct.pack(">I", crc)


def is_png(data: bytes) -> bool:
    return data.startswith(SIGNATURE)


def read_chunks(data: bytes, file: str | None) -> tuple[list[Chunk], bytes]:
    """Every chunk up to and including ``IEND`` (CRCs checked, but ``IEND``'s), and any bytes after it."""
    if not data.startswith(SIGNATURE):
        raise FormatError("not a PNG file (bad signature)", file=file)
    chunks: list[Chunk] = []
    pos = len(SIGNATURE)
    while True:
        if pos + 8 > len(data):
            raise FormatError(f"truncated PNG: no IEND chunk (file ends at byte {len(data)})", file=file)
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        name = ctype.decode("latin-1")
        if length > MAX_CHUNK_BYTES:
            raise FormatError(f"PNG chunk {name!r} at byte {pos} is {length} bytes; chunks over "
                              f"{MAX_CHUNK_BYTES} bytes are refused", file=file)
        end = pos + 12 + length
        if ctype == b"IEND":    # as SillyTavern's reader: its CRC is never read (nor need be there)
            chunks.append(Chunk(ctype, data[pos + 8:pos + 8 + length]))
            return chunks, data[end:]
        if end > len(data):
            raise FormatError(f"truncated PNG: chunk {name!r} at byte {pos} needs {length} bytes "
                              f"but the file ends at byte {len(data)}", file=file)
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:end])
        if zlib.crc32(ctype + body) & 0xFFFFFFFF != crc:
            raise FormatError(f"PNG chunk {name!r} at byte {pos} has a bad CRC", file=file)
        chunks.append(Chunk(ctype, body))
        if len(chunks) > MAX_CHUNKS:
            raise FormatError(f"PNG has more than {MAX_CHUNKS} chunks", file=file)
        pos = end


def find_text(chunks: list[Chunk], keyword: str) -> Chunk | None:
    """The first ``tEXt`` chunk whose keyword equals ``keyword`` case-insensitively."""
    for chunk in chunks:
        kw = chunk.keyword
        if kw is not None and kw.lower() == keyword:
            return chunk
    return None


def decode_payload(text: str, file: str | None, keyword: str, warnings: list[str] | None = None) -> Any:
    """base64 → UTF-8 → JSON, with a one-line error saying which step failed. With ``warnings``
    (a card, which SillyTavern's server reads with Node's ``Buffer``), loose base64 and bytes that
    are not UTF-8 are read as Node reads them, and a warning says so."""
    if warnings is not None:
        raw = node_base64(text)
        notes = []
        loose = not _BASE64.fullmatch(text) or len("".join(text.split()).rstrip("=")) % 4 == 1
        if loose:
            notes.append(f"tEXt {keyword!r} is not strict base64; read as SillyTavern reads it "
                         "(other characters skipped, a lone last character dropped)")
        try:
            json_text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            json_text = raw.decode("utf-8", "replace")
            notes.append(f"tEXt {keyword!r} is not all UTF-8 (byte {exc.start}); such bytes are read as "
                         "U+FFFD, as SillyTavern reads them")
        try:
            card = parse_json(json_text, file, what=f"tEXt {keyword!r}: ")
        except FormatError:
            if loose:
                raise FormatError(f"tEXt {keyword!r} is not valid base64", file=file) from None
            raise
        warnings.extend(notes)
        return card
    if not _BASE64.fullmatch(text):
        raise FormatError(f"tEXt {keyword!r} is not valid base64", file=file)
    compact = "".join(text.split()).rstrip("=")
    if len(compact) % 4 == 1:
        raise FormatError(f"tEXt {keyword!r} is not valid base64 (bad length)", file=file)
    try:
        raw = base64.b64decode(compact + "=" * (-len(compact) % 4))
    except (binascii.Error, ValueError):
        raise FormatError(f"tEXt {keyword!r} is not valid base64", file=file) from None
    try:
        json_text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"tEXt {keyword!r} does not decode to UTF-8 (byte {exc.start})", file=file) from None
    return parse_json(json_text, file, what=f"tEXt {keyword!r}: ")


_NOT_BASE64 = re.compile(r"[^A-Za-z0-9+/]")
_URL_SAFE = str.maketrans("-_", "+/")


def node_base64(text: str) -> bytes:
    """``Buffer.from(text, 'base64')``: both alphabets, every other character skipped, the text read
    up to its first ``=``, and a lone last character dropped."""
    digits = _NOT_BASE64.sub("", text.split("=", 1)[0].translate(_URL_SAFE))
    digits = digits[:len(digits) - (len(digits) % 4 == 1)]
    return base64.b64decode(digits + "=" * (-len(digits) % 4))


def read_card_png(data: bytes, file: str | None) -> tuple[Any, str, list[str]]:
    """The card JSON of a PNG, the keyword it came from, and warnings (``ccv3`` preferred)."""
    chunks, trailing = read_chunks(data, file)
    warnings = [f"{len(trailing)} bytes after IEND are ignored"] if trailing else []
    texts = [c for c in chunks if c.type == b"tEXt"]
    refused = [f"its first chunk is {chunks[0].type.decode('latin-1')!r}, not 'IHDR'"] if chunks[0].type != b"IHDR" \
        else []
    refused += [f"tEXt {c.keyword!r} holds a NUL in its text" for c in texts if "\0" in c.text]
    if refused:     # read all the same: what lorescan shows, SillyTavern would not import
        warnings.append(f"SillyTavern refuses this PNG: {'; '.join(refused)}")
    if not texts:
        raise FormatError("PNG has no tEXt metadata, so no character card", file=file)
    chunk = find_text(chunks, "ccv3")
    keyword = "ccv3"
    if chunk is None:
        chunk, keyword = find_text(chunks, "chara"), "chara"
    if chunk is None:
        found = sorted({c.keyword or "" for c in texts})
        raise FormatError(f"PNG has no 'chara' or 'ccv3' tEXt chunk (found: {', '.join(found)})", file=file)
    card = decode_payload(chunk.text, file, keyword, warnings)
    if not isinstance(card, dict):
        raise FormatError(f"tEXt {keyword!r} holds JSON {type(card).__name__}, not a card object", file=file)
    other = find_text(chunks, "chara" if keyword == "ccv3" else "ccv3")
    if keyword == "ccv3" and other is not None and other.text and other.text != chunk.text:
        try:
            v2 = decode_payload(other.text, file, "chara", [])
        except FormatError:
            v2 = None
        if isinstance(v2, dict) and _strip_spec(v2) != _strip_spec(card):
            warnings.append("'chara' and 'ccv3' chunks disagree; 'ccv3' is used")
    return card, keyword, warnings


def _strip_spec(card: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in card.items() if k not in ("spec", "spec_version")}


def has_text(data: bytes, keyword: str) -> bool:
    """Whether the PNG has a ``tEXt`` chunk with ``keyword`` (no CRC check; for detection)."""
    try:
        chunks = _walk(data)
    except ValueError:
        return False
    return any(t == b"tEXt" and body.split(b"\0", 1)[0].lower() == keyword.encode() for t, body in chunks)


def _walk(data: bytes) -> list[tuple[bytes, bytes]]:
    out = []
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        length, ctype = struct.unpack(">I4s", data[pos:pos + 8])
        out.append((ctype, data[pos + 8:pos + 8 + length]))
        pos += 12 + length
        if ctype == b"IEND":
            break
    return out


def read_naidata(data: bytes, file: str | None) -> Any:
    """A NovelAI lorebook image: the first ``tEXt`` whose data starts with ``naidata``, as
    SillyTavern's browser-side reader finds it (no CRC checks there)."""
    if not data.startswith(SIGNATURE):
        raise FormatError("not a PNG file (bad signature)", file=file)
    for ctype, body in _walk(data):
        if ctype == b"tEXt" and body.startswith(b"naidata"):
            text = body[len(b"naidata") + 1:].decode("latin-1")
            return decode_payload(text, file, "naidata")
    raise FormatError("PNG has no 'naidata' tEXt chunk", file=file)


def text_chunk(keyword: str, text: str) -> Chunk:
    return Chunk(b"tEXt", keyword.encode("latin-1") + b"\0" + text.encode("latin-1"))


def encode_payload(value: Any) -> str:
    """base64 of the compact UTF-8 JSON, as SillyTavern writes card chunks."""
    return base64.b64encode(dump_json(value, indent=None).encode("utf-8")).decode("ascii")


def replace_text(data: bytes, drop: tuple[str, ...], add: list[Chunk], file: str | None = None) -> bytes:
    """The PNG with every ``tEXt`` chunk keyed by one of ``drop`` removed and ``add`` inserted
    right before ``IEND``; all other chunks (and bytes after IEND) are kept as they were."""
    chunks, trailing = read_chunks(data, file)
    kept = [c for c in chunks if not (c.keyword is not None and c.keyword.lower() in drop)]
    out = [SIGNATURE]
    for chunk in kept:
        if chunk.type == b"IEND":
            out.extend(c.to_bytes() for c in add)
        out.append(chunk.to_bytes())
    out.append(trailing)
    return b"".join(out)


def write_card_png(image: bytes | None, card: dict[str, Any]) -> bytes:
    """A card PNG as SillyTavern writes it: ``chara`` = the card, ``ccv3`` = the card with
    ``spec: chara_card_v3``; ``image`` defaults to a 1×1 transparent pixel."""
    v3 = dict(card)
    v3["spec"], v3["spec_version"] = "chara_card_v3", "3.0"
    add = [text_chunk("chara", encode_payload(card)), text_chunk("ccv3", encode_payload(v3))]
    return replace_text(image if image is not None else blank_png(), CARD_KEYWORDS, add)


def write_naidata_png(image: bytes | None, lorebook: Any) -> bytes:
    """A NovelAI lorebook image: ``naidata`` = base64 of the lorebook JSON."""
    add = [text_chunk("naidata", encode_payload(lorebook))]
    return replace_text(image if image is not None else blank_png(), ("naidata",), add)


def blank_png() -> bytes:
    """A valid 1×1 transparent PNG, for cards written without an image."""
    header = Chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0))
    pixels = Chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00\x00"))
    return SIGNATURE + header.to_bytes() + pixels.to_bytes() + Chunk(b"IEND", b"").to_bytes()


# ---------------------------------------------------------------- registration

def _read(data: bytes, ctx: ReadContext) -> Reading:
    card, _keyword, notes = read_card_png(data, ctx.file)
    reading = cards.card_reading(card, ctx, avatar=Path(ctx.file).name, notes=notes)
    reading.image = data
    return reading


def _write(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    card = cards.card_of(loaded)
    image = loaded.image if loaded.image and is_png(loaded.image) else None   # a PNG card's, a CHARX's icon
    return card, lambda doc: write_card_png(image, doc)


FORMATS = (
    Format("png", "character card PNG (tEXt chara/ccv3)", "card", (Detector("bytes", 200, is_png),),
           _read, _write, carries=cards.CARD_FIELDS),
)
