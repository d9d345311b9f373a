"""Agnai memory books (``{"kind": "memory", "entries": [...]}``), converted to engine entries as
SillyTavern's ``convertAgnaiMemoryBook`` does: ``keywords`` → keys, ``entry`` → content, ``name``
→ comment, ``weight`` → order, ``enabled`` → not disabled. ``priority`` and the optional V2-style
fields (``secondaryKeys``, ``constant``, ``position``…) are dropped there, so here too.
"""

from __future__ import annotations

from typing import Any

from .._construct import make
from .._errors import FormatError
from .._model import Lorebook
from .common import (
    SIMPLE_FIELDS,
    book_reader,
    book_writer,
    converted_entry,
    entry_from_json,
    fill,
    get,
    js_not,
    merged_export,
    object_entry,
    type_name,
)
from .registry import Detector, Format

FORMAT = "agnai"
DROPPED = ("secondaryKeys", "constant", "position", "probability", "selective", "selectiveLogic")


def is_memory_book(data: Any) -> bool:
    """SillyTavern's test: ``kind === "memory"``."""
    return isinstance(data, dict) and data.get("kind") == "memory"


def agnai_entry_to_wi(entry: Any, index: int, file: str | None = None) -> dict[str, Any]:
    """One memory entry → engine entry JSON."""
    entry = object_entry(entry, file, f"entries[{index}]", primitives=True)
    name = get(entry, "name")
    fields = {
        "key": get(entry, "keywords"), "keysecondary": [], "comment": name,
        "content": get(entry, "entry"), "constant": False, "selective": False, "vectorized": False,
        "selectiveLogic": 0, "order": get(entry, "weight"), "position": 0,
        "disable": js_not(get(entry, "enabled")), "addMemo": not js_not(name),
        "excludeRecursion": False, "delayUntilRecursion": False, "probability": 100,
        "useProbability": True,
    }
    return converted_entry(index, fields, display_index=index)


def read_memory_book(data: dict[str, Any], name: str, file: str | None) -> tuple[Lorebook, list[str]]:
    """An Agnai memory book → :class:`Lorebook` (named after the file, as SillyTavern does)."""
    raw = data.get("entries")
    if not isinstance(raw, list):
        raise FormatError(f"must be an array of Agnai memory entries, got {type_name(raw)}",
                          file=file, field="entries")
    converted = [agnai_entry_to_wi(e, i, file) for i, e in enumerate(raw)]
    entries = [entry_from_json(wi, file, uid=wi["uid"], imported=True) for wi in converted]
    notes = []
    dropped = sorted({k for e in raw if isinstance(e, dict) for k in DROPPED if k in e})
    if dropped:
        notes.append(f"Agnai fields SillyTavern's import ignores: {', '.join(dropped)}")
    return make(Lorebook, name=name, entries=entries, entry_keys=[str(i) for i in range(len(entries))]), notes


def wi_to_agnai_entry(wi: dict[str, Any]) -> dict[str, Any]:
    """Engine entry JSON → memory entry (``priority`` and ``weight`` both from ``order``: higher
    order is both kept longer and placed later in SillyTavern, as in Agnai)."""
    order = fill(wi, "order")
    return {"name": fill(wi, "comment"), "entry": fill(wi, "content"), "keywords": fill(wi, "key"),
            "priority": order, "weight": order, "enabled": js_not(fill(wi, "disable"))}


def memory_book_json(book: Lorebook, original: Any = None) -> dict[str, Any]:
    """The memory book for ``book``; with the file it was read from, only edits change."""
    ordered = book.scan_order()
    merged = merged_export(original, "entries", ordered, agnai_entry_to_wi, wi_to_agnai_entry)
    if merged is not None:
        return merged
    return {"kind": "memory", "name": book.name, "description": "",
            "entries": [wi_to_agnai_entry(e.to_json()) for e in ordered]}


FORMATS = (
    Format(FORMAT, "Agnai memory book", "book", (Detector("object", 300, is_memory_book),),
           book_reader(read_memory_book), book_writer(memory_book_json), carries=SIMPLE_FIELDS),
)
