"""KoboldAI world info: KoboldAI United (``{folders, entries: {uid: {...}}}``) and KoboldAI Lite
(an array of ``{key: "a,b", keysecondary, keyanti, content, …}``, or a Lite save with it under
``worldinfo``).

A United export has ``entries`` keyed by uid with SillyTavern-compatible ``key``/``keysecondary``/
``content``/``constant``/``selective``, so SillyTavern's world-info import stores it as it is;
lorescan reads it the same way (``title``, ``keyanti``, ``wpp``… are kept but not used).
SillyTavern cannot import Lite world info; lorescan maps it itself: comma-separated keys,
``keyanti`` (Lite: "selective, and none of these") → secondary keys with NOT ANY,
``widisabled`` → disabled, ``wigroup`` → inclusion group, ``probability`` kept.
"""

from __future__ import annotations

from typing import Any

from .._construct import make
from .._errors import FormatError
from .._js import trim
from .._model import Lorebook
from .common import (
    SIMPLE_FIELDS,
    book_reader,
    book_writer,
    converted_entry,
    entry_from_json,
    fill,
    js_not,
    json_writer,
    merge_entries,
    object_key,
    type_name,
)
from .registry import Detector, Format
from .worldinfo import read_worldinfo, worldinfo_to_json

UNITED = "kobold"
LITE = "kobold-lite"
WPP_DEFAULT = {"name": "", "type": "", "format": "W++", "attributes": {}}


def is_united(data: Any) -> bool:
    """A KoboldAI United world-info export (entries carry ``type: "wi"``/``manual_text``/``wpp``)."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        return False
    values = [v for v in data["entries"].values() if isinstance(v, dict)]
    return bool(values) and all(v.get("type") == "wi" or "manual_text" in v or "wpp" in v for v in values)


def read_united(data: dict[str, Any], name: str, file: str | None) -> tuple[Lorebook, list[str]]:
    """Read as SillyTavern does (stored verbatim as world info)."""
    book = read_worldinfo(data, name, file)
    notes = []
    anti = sum(1 for e in book.entries if e.get("keyanti"))
    if anti:
        notes.append(f"{anti} KoboldAI entries have keyanti, which SillyTavern ignores")
    return book, notes


def wi_to_united_entry(wi: dict[str, Any]) -> dict[str, Any]:
    """Engine entry JSON → KoboldAI United entry."""
    content = fill(wi, "content")
    return {"uid": wi.get("uid"), "title": fill(wi, "comment"), "key": fill(wi, "key"),
            "keysecondary": fill(wi, "keysecondary"), "keyanti": [], "folder": None,
            "constant": fill(wi, "constant"), "manual_text": content, "content": content,
            "comment": fill(wi, "comment"), "type": "wi", "token_length": 0,
            "selective": fill(wi, "selective"), "used_in_game": False, "wpp": dict(WPP_DEFAULT),
            "use_wpp": False, "object_type": None}


def united_json(book: Lorebook, same_format: bool) -> dict[str, Any]:
    """A United export: the book as it is when it was read from one, else converted entries."""
    if same_format:
        return worldinfo_to_json(book)
    entries = {}
    for entry in book.scan_order():
        wi = entry.to_json()
        entries[object_key(wi.get("uid"))] = wi_to_united_entry(wi)
    return {"folders": {}, "entries": entries}


# ---------------------------------------------------------------- KoboldAI Lite

def lite_items(data: Any) -> list[Any] | None:
    """The Lite world-info array of a file: the file itself, or a save's ``worldinfo``."""
    if isinstance(data, list):
        return data
    if isinstance(data, dict) and isinstance(data.get("worldinfo"), list):
        return data["worldinfo"]
    return None


def is_lite(data: Any) -> bool:
    items = lite_items(data)
    return bool(items) and all(isinstance(i, dict) and isinstance(i.get("key"), str) and "content" in i
                               for i in items)  # type: ignore[union-attr]


def _split(value: Any) -> list[str]:
    if not isinstance(value, str):
        return []
    return [k for k in (trim(part) for part in value.split(",")) if k]


def lite_entry_to_wi(item: Any, index: int, file: str | None = None) -> tuple[dict[str, Any], str | None]:
    """One Lite item → engine entry JSON, and a note when something could not be kept."""
    if not isinstance(item, dict):
        raise FormatError(f"must be an object, got {type_name(item)}", file=file, field=f"[{index}]")
    secondary, anti = _split(item.get("keysecondary")), _split(item.get("keyanti"))
    selective = item.get("selective") is True
    logic, note = 0, None
    if selective and anti and not secondary:
        secondary, logic = anti, 2
    elif anti:
        note = f"entry {index}: keyanti {', '.join(anti)} cannot be kept next to secondary keys"
    probability = item.get("probability")
    comment = item.get("comment") if isinstance(item.get("comment"), str) else ""
    fields = {
        "key": _split(item.get("key")), "keysecondary": secondary, "comment": comment,
        "content": item.get("content") if isinstance(item.get("content"), str) else "",
        "constant": item.get("constant") is True, "selective": selective, "selectiveLogic": logic,
        "addMemo": bool(comment), "position": 0, "disable": item.get("widisabled") is True,
        "probability": probability if isinstance(probability, (int, float)) else 100,
        "useProbability": True, "group": item.get("wigroup") if isinstance(item.get("wigroup"), str) else "",
    }
    return converted_entry(index, fields, display_index=index), note


def read_lite(data: Any, name: str, file: str | None) -> tuple[Lorebook, list[str]]:
    """Lite world info → :class:`Lorebook` (lorescan's mapping; SillyTavern has none)."""
    items = lite_items(data)
    if items is None:
        raise FormatError("KoboldAI Lite world info must be an array", file=file)
    notes = ["SillyTavern cannot import KoboldAI Lite world info; lorescan's own mapping is used"]
    converted = []
    for index, item in enumerate(items):
        wi, note = lite_entry_to_wi(item, index, file)
        converted.append(wi)
        if note:
            notes.append(note)
    entries = [entry_from_json(wi, file, uid=wi["uid"]) for wi in converted]
    return make(Lorebook, name=name, entries=entries, entry_keys=[str(i) for i in range(len(entries))]), notes


def wi_to_lite_entry(wi: dict[str, Any]) -> dict[str, Any]:
    """Engine entry JSON → Lite item (NOT ANY secondary keys become ``keyanti``)."""
    secondary = ",".join(str(k) for k in fill(wi, "keysecondary") or [])
    anti = fill(wi, "selectiveLogic") == 2
    return {"key": ",".join(str(k) for k in fill(wi, "key") or []),
            "keysecondary": "" if anti else secondary, "keyanti": secondary if anti else "",
            "content": fill(wi, "content"), "comment": fill(wi, "comment"), "folder": None,
            "selective": fill(wi, "selective") is True, "constant": fill(wi, "constant") is True,
            "probability": fill(wi, "probability"), "wigroup": fill(wi, "group"),
            "widisabled": not js_not(fill(wi, "disable"))}


def lite_json(book: Lorebook, original: Any = None) -> Any:
    """Lite world info for ``book``, in the original's shape (array or save) when there is one."""
    ordered = book.scan_order()
    items = lite_items(original)
    if items is None:
        return [wi_to_lite_entry(e.to_json()) for e in ordered]
    pairs = [(item, lite_entry_to_wi(item, i)[0]) for i, item in enumerate(items)]
    merged = merge_entries(pairs, ordered, wi_to_lite_entry)
    if isinstance(original, list):
        return merged
    out = dict(original)
    out["worldinfo"] = merged
    return out


FORMATS = (
    Format(UNITED, "KoboldAI United world info", "book", (Detector("object", 500, is_united),),
           book_reader(read_united), lambda loaded, same: (united_json(loaded.books[0], same), json_writer()),
           carries=frozenset({"uid", "key", "keysecondary", "content", "comment", "constant", "selective"})),
    Format(LITE, "KoboldAI Lite world info (array or save)", "book",
           (Detector("object", 1100, is_lite), Detector("array", 400, is_lite)),
           book_reader(read_lite), book_writer(lite_json), aliases=("lite",),
           carries=SIMPLE_FIELDS - {"order"} | {"keysecondary", "constant", "selective", "probability", "group"},
           carried_values={"selectiveLogic": (0, 2)}, comma_keys=True),   # NOT ANY secondary keys are keyanti
)
