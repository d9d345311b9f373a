"""CHARX (``.charx``): a ZIP holding ``card.json`` (a V3 card, V2 accepted) and assets.

Reading is bounded: member count, each member's size, the total uncompressed size and the
compression ratio are checked before anything is inflated, and ``card.json`` is read with a hard
cap, so a zip bomb is refused with a one-line error. Writing back keeps every other member's
bytes and replaces only ``card.json``. Like SillyTavern, an archive may have bytes before it
(self-extracting archives, Risu's "charx-jpeg").
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import FormatError
from . import cards, png
from .common import decode_text, dump_json, parse_json
from .registry import Detector, Format, ReadContext, Reading

if TYPE_CHECKING:
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


def zip_offset(data: bytes) -> int:
    """Offset of the first local file header, or -1 (SillyTavern also scans for it)."""
    return data.find(ZIP_MAGIC)


def has_zip_end(data: bytes) -> bool:
    """Whether the data ends with a ZIP archive (an end-of-central-directory record near the end)."""
    return data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557)) >= 0


def open_zip(data: bytes, file: str | None) -> zipfile.ZipFile:
    """The archive, after checking it is not a zip bomb."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise FormatError(f"not a readable ZIP archive ({exc})", file=file) from None
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise FormatError(f"ZIP has {len(infos)} members; more than {MAX_MEMBERS} are refused", file=file)
    total = 0
    for info in infos:
        total += info.file_size
        if info.flag_bits & 0x1:
            raise FormatError(f"ZIP member {info.filename!r} is encrypted", file=file)
        if info.file_size > (1 << 20) and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise FormatError(f"ZIP member {info.filename!r} inflates {info.compress_size} bytes to "
                              f"{info.file_size} (zip bomb?); refused", file=file)
    if total > MAX_TOTAL_BYTES:
        raise FormatError(f"ZIP would inflate to {total} bytes; more than {MAX_TOTAL_BYTES} are "
                          "refused (zip bomb?)", file=file)
    return archive


def read_member(archive: zipfile.ZipFile, name: str, file: str | None, limit: int) -> bytes:
    """A member's bytes, never inflating more than ``limit`` whatever its header claims."""
    info = archive.getinfo(name)
    if info.file_size > limit:
        raise FormatError(f"ZIP member {name!r} is {info.file_size} bytes; more than {limit} are refused",
                          file=file)
    try:
        with archive.open(info) as stream:
            body = stream.read(limit + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError, zlib.error) as exc:
        raise FormatError(f"ZIP member {name!r} is corrupt ({exc})", file=file) from None
    except NotImplementedError as exc:
        raise FormatError(f"ZIP member {name!r} uses an unsupported compression ({exc})", file=file) from None
    if len(body) > limit:
        raise FormatError(f"ZIP member {name!r} inflates past {limit} bytes (zip bomb?); refused", file=file)
    return body


def member_names(data: bytes, file: str | None) -> list[str]:
    return open_zip(data, file).namelist()


def read_charx(data: bytes, file: str | None) -> tuple[dict[str, Any], bytes | None, list[str]]:
    """The card of a CHARX, its icon image (if any) and warnings."""
    archive = open_zip(data, file)
    names = archive.namelist()
    if CARD_MEMBER not in names:
        raise FormatError("ZIP has no card.json, so it is not a CHARX card", file=file)
    warnings: list[str] = []
    if zip_offset(data) > 0:
        warnings.append(f"{zip_offset(data)} bytes before the ZIP archive are ignored")
    text = decode_text(read_member(archive, CARD_MEMBER, file, MAX_CARD_BYTES), file, "card.json ")
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
    out = io.BytesIO()
    body = dump_json(card, indent=4).encode("utf-8")
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        if original is not None:
            source = open_zip(original, None)
            for info in source.infolist():
                if info.filename == CARD_MEMBER:
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
    data = dict(out.get("data") or {})
    assets = [a for a in data.get("assets") or [] if not (isinstance(a, dict) and a.get("type") == "icon")]
    assets.insert(0, {"type": "icon", "uri": f"embeded://{ICON_PATH}", "name": "main", "ext": "png"})
    data["assets"] = assets
    out["data"] = data
    return out


# ---------------------------------------------------------------- registration

def is_zip(data: bytes) -> bool:
    """A ZIP archive from the first byte, or appended to other data (SillyTavern scans for it)."""
    return zip_offset(data) == 0 or (zip_offset(data) > 0 and has_zip_end(data))


def _read(data: bytes, ctx: ReadContext) -> Reading:
    names = member_names(data, ctx.file)
    if CARD_MEMBER not in names:
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
