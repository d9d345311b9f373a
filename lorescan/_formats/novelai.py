"""NovelAI lorebooks (``.lorebook`` JSON, ``lorebookVersion`` 1–6) and the lorebook inside a
``.scenario``, converted to engine entries as SillyTavern's ``convertNovelLorebook`` does.

SillyTavern keeps only ``keys``, ``text``, ``displayName``, ``contextConfig.budgetPriority`` (as
``order``, default 0) and ``enabled`` (a missing ``enabled`` imports as *disabled*); everything
else (``forceActivation``, ``searchRange``, categories, bias groups…) is dropped, so lorescan
reports it but does not act on it. Writing a book back to NovelAI changes only edited fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._construct import make
from .._errors import FormatError
from .._js import trim
from .._model import Lorebook
from . import png
from .common import (
    SIMPLE_FIELDS,
    UNDEF,
    book_reader,
    book_writer,
    converted_entry,
    entry_from_json,
    fill,
    get,
    js_not,
    js_or,
    json_writer,
    merged_export,
    nullish,
    object_entry,
    type_name,
)
from .registry import Detector, Format, ReadContext, Reading

if TYPE_CHECKING:
    from .._load import Loaded

FORMAT = "novelai"
SCENARIO_FORMAT = "novelai-scenario"
PNG_FORMAT = "novelai-png"

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
    entry = object_entry(entry, file, f"entries[{index}]", primitives=True)
    name = get(entry, "displayName")
    if name is not UNDEF and not isinstance(name, str):     # SillyTavern calls its trim()
        raise FormatError(f"must be a string, got {type_name(name)}", file=file, uid=index, field="displayName")
    context = get(entry, "contextConfig")
    fields = {
        "key": get(entry, "keys"), "keysecondary": [], "comment": js_or(name, ""),
        "content": get(entry, "text"), "constant": False, "selective": False, "vectorized": False,
        "selectiveLogic": 0, "order": nullish(get(context, "budgetPriority"), 0), "position": 0,
        "disable": js_not(get(entry, "enabled")),
        "addMemo": name is not UNDEF and trim(name) != "",
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
    entries = [entry_from_json(wi, file, uid=wi["uid"], imported=True) for wi in converted]
    book = make(Lorebook, name=name, entries=entries, entry_keys=[str(i) for i in range(len(entries))])
    notes: list[str] = []
    missing = sum(1 for e in raw if not isinstance(e, dict) or "enabled" not in e)
    if missing:
        notes.append(f"{missing} NovelAI entries have no 'enabled'; SillyTavern imports them disabled")
    forced = sum(1 for e in raw if isinstance(e, dict) and e.get("forceActivation") is True)
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


# ---------------------------------------------------------------- registration

def is_naidata_png(data: bytes) -> bool:
    """A NovelAI lorebook image: a PNG with a ``naidata`` text chunk and no character card."""
    return png.is_png(data) and png.has_text(data, "naidata") and not (
        png.has_text(data, "chara") or png.has_text(data, "ccv3"))


def _read_png(data: bytes, ctx: ReadContext) -> Reading:
    raw = png.read_naidata(data, ctx.file)
    if not is_lorebook(raw):
        raise FormatError("tEXt 'naidata' does not hold a NovelAI lorebook", file=ctx.file)
    book, notes = read_lorebook(raw, ctx.stem, ctx.file)
    return Reading(books=[book], warnings=notes, raw=raw)


def _same_only(target: str, loaded: Loaded, same: bool) -> None:
    if not same:
        raise FormatError(f"can only write {target} back to a {target} file", file=loaded.path)


def _write_scenario(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    _same_only(SCENARIO_FORMAT, loaded, same)
    return scenario_json(loaded.books[0], loaded.raw), json_writer()


def _write_png(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    _same_only(PNG_FORMAT, loaded, same)
    image = loaded.source
    return lorebook_json(loaded.books[0], loaded.raw), lambda doc: png.write_naidata_png(image, doc)


FORMATS = (
    Format(FORMAT, "NovelAI .lorebook JSON", "book", (Detector("object", 300, is_lorebook),),
           book_reader(read_lorebook), book_writer(lorebook_json), aliases=("nai", "lorebook"), carries=SIMPLE_FIELDS),
    Format(SCENARIO_FORMAT, "NovelAI .scenario (its lorebook)", "book", (Detector("object", 400, is_scenario),),
           book_reader(read_scenario), _write_scenario, target=False),
    Format(PNG_FORMAT, "NovelAI lorebook image (PNG tEXt naidata)", "book",
           (Detector("bytes", 100, is_naidata_png),), _read_png, _write_png, target=False),
)
