"""NovelAI lorebooks (``.lorebook`` JSON, ``lorebookVersion`` 1–6) and the lorebook inside a
``.scenario``, converted to engine entries as SillyTavern's ``convertNovelLorebook`` does.

SillyTavern keeps only ``keys``, ``text``, ``displayName``, ``contextConfig.budgetPriority`` (as
``order``, default 0) and ``enabled`` (a missing ``enabled`` imports as *disabled*); everything
else (``forceActivation``, ``searchRange``, categories, bias groups…) is dropped, so lorescan
reports it but does not act on it. Writing a book back to NovelAI changes only edited fields.
"""

from __future__ import annotations

from typing import Any

from .._errors import FormatError
from .._model import Lorebook
from .common import UNDEF, converted_entry, entry_from_json, fill, get, js_not, js_or, merged_export, nullish, type_name

FORMAT = "novelai"
SCENARIO_FORMAT = "novelai-scenario"

#: contextConfig written for new entries (NovelAI's defaults).
CONTEXT_DEFAULTS: dict[str, Any] = {
    "prefix": "", "suffix": "\n", "tokenBudget": 2048, "reservedTokens": 0, "budgetPriority": 400,
    "trimDirection": "trimBottom", "insertionType": "newline", "maximumTrimType": "sentence",
    "insertionPosition": -1,
}


def is_lorebook(data: Any) -> bool:
    """SillyTavern's test: a JSON object with ``lorebookVersion``."""
    return isinstance(data, dict) and "lorebookVersion" in data


def is_scenario(data: Any) -> bool:
    return isinstance(data, dict) and "scenarioVersion" in data and isinstance(data.get("lorebook"), dict)


def novel_entry_to_wi(entry: Any, index: int, file: str | None = None) -> dict[str, Any]:
    """One NovelAI entry → engine entry JSON (``convertNovelLorebook``)."""
    if not isinstance(entry, dict):
        raise FormatError(f"must be an object, got {type_name(entry)}", file=file, field=f"entries[{index}]")
    name = get(entry, "displayName")
    context = get(entry, "contextConfig")
    fields = {
        "key": get(entry, "keys"), "keysecondary": [], "comment": js_or(name, ""),
        "content": get(entry, "text"), "constant": False, "selective": False, "vectorized": False,
        "selectiveLogic": 0, "order": nullish(get(context, "budgetPriority"), 0), "position": 0,
        "disable": js_not(get(entry, "enabled")),
        "addMemo": isinstance(name, str) and name.strip() != "",
        "excludeRecursion": False, "delayUntilRecursion": False, "probability": 100,
        "useProbability": True,
    }
    return converted_entry(index, fields, display_index=index)


def read_lorebook(data: dict[str, Any], name: str, file: str | None) -> tuple[Lorebook, list[str]]:
    """A NovelAI lorebook object → :class:`Lorebook` and notes about what SillyTavern drops."""
    raw = data.get("entries")
    if not isinstance(raw, list):
        raise FormatError(f"must be an array of NovelAI entries, got {type_name(raw)}",
                          file=file, field="entries")
    converted = [novel_entry_to_wi(e, i, file) for i, e in enumerate(raw)]
    entries = [entry_from_json(wi, file, uid=wi["uid"]) for wi in converted]
    book = Lorebook(name=name, entries=entries, entry_keys=[str(i) for i in range(len(entries))])
    notes: list[str] = []
    missing = sum(1 for e in raw if "enabled" not in e)
    if missing:
        notes.append(f"{missing} NovelAI entries have no 'enabled'; SillyTavern imports them disabled")
    forced = sum(1 for e in raw if e.get("forceActivation") is True)
    if forced:
        notes.append(f"{forced} NovelAI entries use forceActivation, which SillyTavern's import drops")
    if not isinstance(data.get("lorebookVersion"), int):
        notes.append(f"lorebookVersion is {data.get('lorebookVersion')!r}, not an integer")
    return book, notes


def wi_to_novel_entry(wi: dict[str, Any]) -> dict[str, Any]:
    """Engine entry JSON → NovelAI entry (what SillyTavern reads back, plus ``forceActivation``)."""
    context = dict(CONTEXT_DEFAULTS)
    context["budgetPriority"] = fill(wi, "order")
    return {
        "text": fill(wi, "content"), "contextConfig": context, "displayName": fill(wi, "comment"),
        "keys": fill(wi, "key"), "searchRange": 1000, "enabled": js_not(fill(wi, "disable")),
        "forceActivation": bool(fill(wi, "constant") is True), "keyRelative": False,
        "nonStoryActivatable": False, "category": "", "loreBiasGroups": [],
    }


def lorebook_json(book: Lorebook, original: Any = None) -> dict[str, Any]:
    """The NovelAI lorebook for ``book``; with the file it was read from, only edits change."""
    ordered = book.scan_order()
    merged = merged_export(original, "entries", ordered, novel_entry_to_wi, wi_to_novel_entry)
    if merged is not None:
        return merged
    return {"lorebookVersion": 6, "entries": [wi_to_novel_entry(e.to_json()) for e in ordered],
            "settings": {"orderByKeyLocations": False}, "categories": []}


def read_scenario(data: dict[str, Any], name: str, file: str | None) -> tuple[Lorebook, list[str]]:
    """The lorebook of a NovelAI scenario."""
    book = data.get("lorebook")
    if not isinstance(book, dict):
        raise FormatError(f"must be an object, got {type_name(book)}", file=file, field="lorebook")
    return read_lorebook(book, name, file)


def scenario_json(book: Lorebook, original: dict[str, Any]) -> dict[str, Any]:
    """The scenario with its lorebook replaced by ``book``."""
    out = dict(original)
    out["lorebook"] = lorebook_json(book, original.get("lorebook", UNDEF) or None)
    return out
