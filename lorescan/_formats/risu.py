"""RisuAI lorebook exports (``{"type": "risu", "ver": 1, "data": [...]}``), converted to engine
entries as SillyTavern's ``convertRisuLorebook`` does: comma-separated ``key``/``secondkey`` are
split and trimmed, ``alwaysActive`` → constant, ``insertorder`` → order, ``activationPercent`` →
probability (and, a SillyTavern quirk, also ``useProbability``).

Folders: a folder is an entry with ``mode: "folder"`` whose ``key`` is ``"\\uF000folder:<id>"``;
members carry the same string in ``folder``. SillyTavern imports folder rows as ordinary entries
(their key never matches chat text); lorescan does the same and reports the folder structure.
"""

from __future__ import annotations

from typing import Any

from .._construct import make
from .._errors import FormatError
from .._js import js_string, trim, truthy
from .._model import Lorebook
from .common import (
    SIMPLE_FIELDS,
    book_reader,
    book_writer,
    converted_entry,
    entry_from_json,
    fill,
    get,
    merged_export,
    nullish,
    type_name,
)
from .registry import Detector, Format

FORMAT = "risu"
FOLDER_PREFIX = "\uf000folder:"


def is_risu_lorebook(data: Any) -> bool:
    """SillyTavern's test: ``type === "risu"``."""
    return isinstance(data, dict) and data.get("type") == "risu"


def split_keys(text: str) -> list[str]:
    """``text.split(',').map(x => x.trim())`` (an empty string gives one empty key)."""
    return [trim(part) for part in text.split(",")]


def risu_entry_to_wi(entry: Any, index: int, file: str | None = None) -> dict[str, Any]:
    """One Risu lorebook row → engine entry JSON."""
    if not isinstance(entry, dict):
        raise FormatError(f"must be an object, got {type_name(entry)}", file=file, field=f"data[{index}]")
    key = entry.get("key")
    if not isinstance(key, str):
        raise FormatError(f"must be a comma-separated string, got {type_name(key)}", file=file,
                          uid=index, field="key")
    second = entry.get("secondkey") if truthy(entry.get("secondkey")) else ""
    if not isinstance(second, str):         # SillyTavern splits any truthy value
        raise FormatError(f"must be a comma-separated string, got {type_name(second)}", file=file,
                          uid=index, field="secondkey")
    percent = get(entry, "activationPercent")
    fields = {
        "key": split_keys(key), "keysecondary": split_keys(second) if second else [],
        "comment": get(entry, "comment"), "content": get(entry, "content"),
        "constant": get(entry, "alwaysActive"), "selective": get(entry, "selective"),
        "vectorized": False, "selectiveLogic": 0, "order": get(entry, "insertorder"), "position": 0,
        "disable": False, "addMemo": True, "excludeRecursion": False, "delayUntilRecursion": False,
        "probability": nullish(percent, 100), "useProbability": nullish(percent, True),
    }
    return converted_entry(index, fields, display_index=index)


def folders(data: dict[str, Any]) -> dict[str, list[int]]:
    """Folder name (its ``comment``) → indexes of the rows inside it. A folder is named by its
    ``key`` string; a row's ``folder`` that is not a string names no folder."""
    found = data.get("data")
    rows: list[Any] = found if isinstance(found, list) else []
    names = {r["key"]: js_string(r.get("comment") or r["key"]) for r in rows
             if isinstance(r, dict) and r.get("mode") == "folder" and isinstance(r.get("key"), str)}
    out: dict[str, list[int]] = {n: [] for n in names.values()}
    for index, row in enumerate(rows):
        folder = row.get("folder") if isinstance(row, dict) else None
        if isinstance(folder, str) and folder in names:
            out[names[folder]].append(index)
    return out


def read_risu_lorebook(data: dict[str, Any], name: str, file: str | None) -> tuple[Lorebook, list[str]]:
    """A Risu export → :class:`Lorebook` and notes (folders, regex rows, SillyTavern's quirks)."""
    rows = data.get("data")
    if not isinstance(rows, list):
        raise FormatError(f"must be an array of Risu lorebook rows, got {type_name(rows)}", file=file,
                          field="data")
    converted = [risu_entry_to_wi(e, i, file) for i, e in enumerate(rows)]
    entries = [entry_from_json(wi, file, uid=wi["uid"], imported=True) for wi in converted]
    notes: list[str] = []
    groups = folders(data)
    if groups:
        notes.append(f"{len(groups)} Risu folders ({', '.join(groups)}); SillyTavern imports folder rows "
                     "as entries that never match")
    regex = sum(1 for r in rows if r.get("useRegex") is True)
    if regex:
        notes.append(f"{regex} Risu entries set useRegex, which SillyTavern's import ignores")
    return make(Lorebook, name=name, entries=entries, entry_keys=[str(i) for i in range(len(entries))]), notes


def wi_to_risu_entry(wi: dict[str, Any]) -> dict[str, Any]:
    """Engine entry JSON → Risu row (keys joined with ``", "``; probability as
    ``activationPercent`` when it applies)."""
    secondary = fill(wi, "keysecondary") or []
    out: dict[str, Any] = {
        "key": ", ".join(str(k) for k in fill(wi, "key") or []),
        "secondkey": ", ".join(str(k) for k in secondary),
        "insertorder": fill(wi, "order"), "comment": fill(wi, "comment"),
        "content": fill(wi, "content"), "mode": "normal", "alwaysActive": fill(wi, "constant"),
        "selective": fill(wi, "selective"),
        "extentions": {"risu_case_sensitive": fill(wi, "caseSensitive") is True},
    }
    probability = fill(wi, "probability")
    if fill(wi, "useProbability") and isinstance(probability, (int, float)) and probability != 100:
        out["activationPercent"] = probability
    return out


def risu_json(book: Lorebook, original: Any = None) -> dict[str, Any]:
    """The Risu export for ``book``; with the file it was read from, only edits change."""
    ordered = book.scan_order()
    merged = merged_export(original, "data", ordered, risu_entry_to_wi, wi_to_risu_entry)
    if merged is not None:
        return merged
    return {"type": "risu", "ver": 1, "data": [wi_to_risu_entry(e.to_json()) for e in ordered]}


FORMATS = (
    Format(FORMAT, "RisuAI lorebook export", "book", (Detector("object", 300, is_risu_lorebook),),
           book_reader(read_risu_lorebook), book_writer(risu_json),
           carries=SIMPLE_FIELDS - {"disable"} | {"keysecondary", "constant", "selective", "probability",
                                                   "useProbability"}, comma_keys=True),
)
