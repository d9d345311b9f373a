"""CHARX (``.charx``): a ZIP holding ``card.json`` (a V3 card, V2 accepted) and assets.

Reading is bounded: member count, each member's size, the total uncompressed size and the
compression ratio the archive claims are checked before anything is inflated; then each member is
inflated as a stream (stored, deflate, bzip2 or LZMA) and refused as soon as it passes the size
it claims, so a zip bomb, honestly labelled or not, is refused with a one-line error after at
most that many bytes. Writing back keeps every other member's
bytes and replaces only ``card.json``. Like SillyTavern, an archive may have bytes before it
(self-extracting archives, Risu's "charx-jpeg").
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import FormatError
from . import cards, png
from .common import decode_as_sillytavern, dump_json, parse_json
from .registry import Detector, Format, ReadContext, Reading

if TYPE_CHECKING:
    import lzma
    import zipfile

    from .._load import Loaded

ZIP_MAGIC = b"PK\x03\x04"
CARD_MEMBER = "card.json"
#: Largest ``card.json`` read (uncompressed).
MAX_CARD_BYTES = 32 * 1024 * 1024
#: Largest total uncompressed size of all members (what writing the archive back would inflate).
MAX_TOTAL_BYTES = 512 * 1024 * 1024
#: Most members an archive may have.
MAX_MEMBERS = 10_000
#: Highest compression ratio accepted for a member bigger than 1 MiB.
MAX_RATIO = 200
ICON_PATH = "assets/icon/images/main.png"
#: the ZIP compression methods read (APPNOTE 4.4.5: stored, deflated, bzip2, LZMA); ``zipfile``, with
#: ``bz2`` and ``lzma``, is imported when an archive is read or written, not with the format list
ZIP_STORED, ZIP_DEFLATED, ZIP_BZIP2, ZIP_LZMA = 0, 8, 12, 14
_METHODS = (ZIP_STORED, ZIP_DEFLATED, ZIP_BZIP2, ZIP_LZMA)
#: A local file header: signature … file name length, extra field length.
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")


def zip_offset(data: bytes) -> int:
    """Offset of the first local file header, or -1 (SillyTavern also scans for it)."""
    return data.find(ZIP_MAGIC)


def has_zip_end(data: bytes) -> bool:
    """Whether the data ends with a ZIP archive (an end-of-central-directory record near the end)."""
    return data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557)) >= 0


def open_zip(data: bytes, file: str | None) -> zipfile.ZipFile:
    """The archive, after checking what its central directory claims (member count, sizes,
    ratios, encryption). The claims only refuse early: :func:`read_member` enforces the caps on
    the bytes it actually inflates."""
    import zipfile
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as exc:
        raise FormatError(f"not a readable ZIP archive ({exc})", file=file) from None
    except NotImplementedError as exc:
        raise FormatError(f"ZIP archive of a version lorescan cannot read ({exc}; 6.3 is the newest)",
                          file=file) from None
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise FormatError(f"ZIP has {len(infos)} members; more than {MAX_MEMBERS} are refused", file=file)
    total = 0
    for info in infos:
        total += info.file_size
        if info.flag_bits & 0x41:
            raise FormatError(f"ZIP member {info.filename!r} is encrypted", file=file)
        if info.file_size > (1 << 20) and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise FormatError(f"ZIP member {info.filename!r} inflates {info.compress_size} bytes to "
                              f"{info.file_size} (zip bomb?); refused", file=file)
    if total > MAX_TOTAL_BYTES:
        raise FormatError(f"ZIP would inflate to {total} bytes; more than {MAX_TOTAL_BYTES} are "
                          "refused (zip bomb?)", file=file)
    return archive


def read_member(archive: zipfile.ZipFile, name: str, file: str | None, limit: int) -> bytes:
    """A member's bytes. It is inflated as a stream and never past the size the central directory
    declares (at most ``limit``): a member that inflates further is refused, whatever its
    compression, so an archive inflates to no more than the sizes its checks accepted."""
    import lzma
    info = archive.getinfo(name)
    if info.file_size > limit:
        raise FormatError(f"ZIP member {name!r} is {info.file_size} bytes; more than {limit} are refused",
                          file=file)
    if info.compress_type not in _METHODS:
        raise FormatError(f"ZIP member {name!r} uses compression method {info.compress_type}; lorescan reads "
                          "stored, deflate, bzip2 and LZMA members", file=file)
    raw = _raw_member(archive, info, file)
    try:
        body, ended = _inflate(info.compress_type, raw, info.file_size + 1)
    except (OSError, ValueError, EOFError, zlib.error, lzma.LZMAError) as exc:
        raise FormatError(f"ZIP member {name!r} is corrupt ({exc})", file=file) from None
    if len(body) > info.file_size:
        raise FormatError(f"ZIP member {name!r} inflates past the {info.file_size} bytes its header "
                          "declares (zip bomb?); refused", file=file)
    if len(body) < info.file_size or not (ended or info.compress_type in (ZIP_STORED, ZIP_LZMA)):
        raise FormatError(f"ZIP member {name!r} is corrupt (its data ends early)", file=file)
    if zlib.crc32(body) != info.CRC:
        raise FormatError(f"ZIP member {name!r} is corrupt (bad CRC-32)", file=file)
    return body


def _raw_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str | None) -> bytes:
    """The member's compressed bytes, found through its local header."""
    if info.flag_bits & 0x20:
        raise FormatError(f"ZIP member {info.filename!r} uses patched data, which lorescan cannot read",
                          file=file)
    source = archive.fp
    if source is None or info.header_offset < 0:
        raise FormatError(f"ZIP member {info.filename!r} is corrupt (bad offset)", file=file)
    source.seek(info.header_offset)
    header = source.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or header[:4] != ZIP_MAGIC:
        raise FormatError(f"ZIP member {info.filename!r} is corrupt (no local header)", file=file)
    fields = _LOCAL_HEADER.unpack(header)
    source.seek(info.header_offset + _LOCAL_HEADER.size + fields[10] + fields[11])
    raw = source.read(info.compress_size)
    if len(raw) < info.compress_size:
        raise FormatError(f"ZIP member {info.filename!r} is truncated", file=file)
    return raw


def _inflate(method: int, raw: bytes, cap: int) -> tuple[bytes, bool]:
    """At most ``cap`` bytes inflated from ``raw``, and whether the compressed stream ended."""
    import bz2
    if method == ZIP_STORED:
        return raw[:cap], True
    if method == ZIP_DEFLATED:
        inflater = zlib.decompressobj(-15)
        parts = [inflater.decompress(raw, cap)]
        size = len(parts[0])
        while inflater.unconsumed_tail and size < cap:
            tail = inflater.unconsumed_tail
            parts.append(inflater.decompress(tail, cap - size))
            size += len(parts[-1])
            if not parts[-1] and inflater.unconsumed_tail == tail:
                break
        return b"".join(parts), inflater.eof
    if method == ZIP_BZIP2:
        stream: Any = bz2.BZ2Decompressor()
    else:
        stream, raw = _lzma(raw, cap)
    parts = [stream.decompress(raw, cap)]
    size = len(parts[0])
    while not stream.eof and not stream.needs_input and size < cap:
        parts.append(stream.decompress(b"", cap - size))
        size += len(parts[-1])
    return b"".join(parts), stream.eof


def _lzma(raw: bytes, cap: int) -> tuple[lzma.LZMADecompressor, bytes]:
    """A raw LZMA1 decompressor for a ZIP member (a 4-byte header, then the properties), and the
    stream after them. The dictionary is no larger than the output it may produce."""
    import lzma
    if len(raw) < 9:
        raise ValueError("LZMA header is truncated")
    size = int.from_bytes(raw[2:4], "little")
    props = raw[4:4 + size]
    if size < 5 or len(props) < size or props[0] >= 9 * 5 * 5:
        raise ValueError("bad LZMA properties")
    lc, rest = props[0] % 9, props[0] // 9
    dictionary = max(4096, min(int.from_bytes(props[1:5], "little"), cap))
    lzma1 = {"id": lzma.FILTER_LZMA1, "lc": lc, "lp": rest % 5, "pb": rest // 5, "dict_size": dictionary}
    return lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[lzma1]), raw[4 + size:]


def member_names(data: bytes, file: str | None) -> list[str]:
    return open_zip(data, file).namelist()


def card_member(names: list[str]) -> str | None:
    """The archive's card, as SillyTavern finds it: the first member whose name ends with
    ``card.json`` (``sub/card.json`` and ``mycard.json`` too), outside ``__MACOSX``."""
    return next((n for n in names if n.endswith(CARD_MEMBER) and not n.startswith("__MACOSX")), None)


def read_charx(data: bytes, file: str | None) -> tuple[dict[str, Any], bytes | None, list[str]]:
    """The card of a CHARX, its icon image (if any) and warnings."""
    archive = open_zip(data, file)
    names = archive.namelist()
    member = card_member(names)
    if member is None:
        raise FormatError("ZIP has no card.json, so it is not a CHARX card", file=file)
    warnings: list[str] = []
    if zip_offset(data) > 0:
        warnings.append(f"{zip_offset(data)} bytes before the ZIP archive are ignored")
    if member != CARD_MEMBER:
        warnings.append(f"the card is {member!r} (the first member named *card.json, as SillyTavern reads it)")
    text, bad = decode_as_sillytavern(read_member(archive, member, file, MAX_CARD_BYTES))
    if bad is not None:
        warnings.append(f"{member} is not all UTF-8 (byte {bad}): such bytes are read as U+FFFD, as SillyTavern "
                        "reads it")
    card = parse_json(text, file, what="card.json: ")
    if not isinstance(card, dict):
        raise FormatError("card.json is not a JSON object", file=file)
    if "spec" not in card:
        raise FormatError("card.json has no 'spec' field", file=file)
    icon = None
    path = icon_member(card, names)
    if path is not None:
        icon = read_member(archive, path, file, MAX_CARD_BYTES * 2)
    return card, icon, warnings


def icon_member(card: dict[str, Any], names: list[str]) -> str | None:
    """The archive path of the card's icon: the ``icon`` asset named ``main``, else the first icon."""
    data = card.get("data")
    assets = data.get("assets") if isinstance(data, dict) else None
    if not isinstance(assets, list):
        return None
    icons = [a for a in assets if isinstance(a, dict) and a.get("type") == "icon" and isinstance(a.get("uri"), str)]
    icons.sort(key=lambda a: a.get("name") != "main")
    for asset in icons:
        uri = asset["uri"]
        for prefix in ("embeded://", "embedded://", "__asset:"):
            if uri.startswith(prefix):
                path = uri[len(prefix):]
                if path in names:
                    return path
    return None


def write_charx(card: dict[str, Any], original: bytes | None = None, icon: bytes | None = None) -> bytes:
    """A CHARX with ``card.json`` = ``card``; other members of ``original`` are copied as they
    were. A new archive gets ``icon`` (a PNG) as its main icon asset."""
    import zipfile
    out = io.BytesIO()
    body = dump_json(card, indent=4).encode("utf-8")
    with zipfile.ZipFile(out, "w", ZIP_DEFLATED) as target:
        if original is not None:
            source = open_zip(original, None)
            member = card_member(source.namelist())
            for info in source.infolist():
                if info.filename == member:
                    target.writestr(info, body)
                else:
                    target.writestr(info, read_member(source, info.filename, None, MAX_TOTAL_BYTES))
        else:
            target.writestr(CARD_MEMBER, body)
            if icon is not None:
                target.writestr(ICON_PATH, icon)
    prefix = original[: max(zip_offset(original), 0)] if original is not None else b""
    return prefix + out.getvalue()


def with_icon_asset(card: dict[str, Any]) -> dict[str, Any]:
    """The V3 card with an ``icon``/``main`` asset pointing at :data:`ICON_PATH` (replacing the
    default ``ccdefault:`` icon)."""
    out = dict(card)
    data = dict(out["data"]) if isinstance(out.get("data"), dict) else {}
    found = data.get("assets")
    assets = [a for a in found if not (isinstance(a, dict) and a.get("type") == "icon")] \
        if isinstance(found, list) else []
    assets.insert(0, {"type": "icon", "uri": f"embeded://{ICON_PATH}", "name": "main", "ext": "png"})
    data["assets"] = assets
    out["data"] = data
    return out


# ---------------------------------------------------------------- registration

def is_zip(data: bytes) -> bool:
    """A ZIP archive from the first byte, or appended to other data (SillyTavern scans for it)."""
    # the end first: a file without an end record (any JSON book) is not searched whole for a header
    return data.startswith(ZIP_MAGIC) or (has_zip_end(data) and zip_offset(data) > 0)


def _read(data: bytes, ctx: ReadContext) -> Reading:
    names = member_names(data, ctx.file)
    if card_member(names) is None:
        if "manifest.json" in names and any(n.startswith("characters/") for n in names):
            raise FormatError("Backyard AI archive (.byaf) is not supported; export the character as a "
                              "PNG or JSON card", file=ctx.file)
        raise FormatError("ZIP archive without card.json: not a CHARX card", file=ctx.file)
    card, icon, notes = read_charx(data, ctx.file)
    reading = cards.card_reading(card, ctx, notes=notes)
    reading.image = icon
    return reading


def _write(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    card = cards.card_of(loaded)
    if same:
        source = loaded.source
        return card, lambda doc: write_charx(doc, original=source)
    v3 = cards.card_as(card, 3)
    icon = None
    if loaded.format == "png" and loaded.image is not None:
        icon = png.replace_text(loaded.image, png.CARD_KEYWORDS, [])
        v3 = with_icon_asset(v3)
    return v3, lambda doc: write_charx(doc, icon=icon)


FORMATS = (
    Format("charx", "CHARX character archive (ZIP with card.json)", "card", (Detector("bytes", 300, is_zip),),
           _read, _write, carries=cards.CARD_FIELDS),
)
