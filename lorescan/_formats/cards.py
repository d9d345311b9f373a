"""Character cards (V1, V2 ``chara_card_v2``, V3 ``chara_card_v3``) as JSON, their embedded
``character_book``, the standalone ``lorebook_v3`` and bare character books.

A card's book becomes engine entries exactly as SillyTavern's "Import Card Lore" does
(``convertCharacterBook``, 1.18 fields included); the book keeps the card's own book as
``originalData`` so that writing it back to a card changes only what was edited, the way
SillyTavern mirrors edits into ``originalData``. The reverse for books that never were a card
follows ``convertWorldInfoToCharacterBook``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._construct import build, make
from .._errors import FormatError
from .._js import trim, truthy
from .._model import DepthPrompt, Lorebook
from .common import (
    UNDEF,
    converted_entry,
    defined,
    entry_from_json,
    fill,
    get,
    js_not,
    js_or,
    json_writer,
    loose_eq_zero,
    merge_entries,
    nullish,
    object_entry,
    object_key,
    type_name,
)
from .decorators import apply_v3_decorators
from .registry import Detector, Format, ReadContext, Reading, Writer

if TYPE_CHECKING:
    from .._load import Loaded

V1_FIELDS = ("name", "description", "personality", "scenario", "first_mes", "mes_example")
#: Gradio (Pygmalion) JSON field → V1 field, as SillyTavern's importer maps them.
GRADIO_FIELDS = {"char_name": "name", "char_persona": "description", "char_greeting": "first_mes",
                 "world_scenario": "scenario", "example_dialogue": "mes_example"}

#: Card entry ``extensions`` key → (engine field, default when absent): ``convertCharacterBook``.
EXTENSION_FIELDS: tuple[tuple[str, str, Any], ...] = (
    ("exclude_recursion", "excludeRecursion", False),
    ("prevent_recursion", "preventRecursion", False),
    ("delay_until_recursion", "delayUntilRecursion", False),
    ("probability", "probability", 100),
    ("useProbability", "useProbability", True),
    ("depth", "depth", 4),
    ("selectiveLogic", "selectiveLogic", 0),
    ("outlet_name", "outletName", ""),
    ("group", "group", ""),
    ("group_override", "groupOverride", False),
    ("group_weight", "groupWeight", 100),
    ("scan_depth", "scanDepth", None),
    ("case_sensitive", "caseSensitive", None),
    ("match_whole_words", "matchWholeWords", None),
    ("use_group_scoring", "useGroupScoring", None),
    ("automation_id", "automationId", ""),
    ("role", "role", 0),
    ("vectorized", "vectorized", False),
    ("sticky", "sticky", None),
    ("cooldown", "cooldown", None),
    ("delay", "delay", None),
    ("match_persona_description", "matchPersonaDescription", False),
    ("match_character_description", "matchCharacterDescription", False),
    ("match_character_personality", "matchCharacterPersonality", False),
    ("match_character_depth_prompt", "matchCharacterDepthPrompt", False),
    ("match_scenario", "matchScenario", False),
    ("match_creator_notes", "matchCreatorNotes", False),
)

#: Engine field → (card ``extensions`` key, ``??`` default) for ``convertWorldInfoToCharacterBook``.
EXPORT_EXTENSIONS: tuple[tuple[str, str, Any], ...] = (
    ("position", "position", UNDEF),
    ("excludeRecursion", "exclude_recursion", UNDEF),
    ("displayIndex", "display_index", UNDEF),
    ("probability", "probability", None),
    ("useProbability", "useProbability", False),
    ("depth", "depth", 4),
    ("selectiveLogic", "selectiveLogic", 0),
    ("outletName", "outlet_name", ""),
    ("group", "group", ""),
    ("groupOverride", "group_override", False),
    ("groupWeight", "group_weight", None),
    ("preventRecursion", "prevent_recursion", False),
    ("delayUntilRecursion", "delay_until_recursion", False),
    ("scanDepth", "scan_depth", None),
    ("matchWholeWords", "match_whole_words", None),
    ("useGroupScoring", "use_group_scoring", None),
    ("caseSensitive", "case_sensitive", None),
    ("automationId", "automation_id", ""),
    ("role", "role", 0),
    ("vectorized", "vectorized", False),
    ("sticky", "sticky", None),
    ("cooldown", "cooldown", None),
    ("delay", "delay", None),
    ("matchPersonaDescription", "match_persona_description", False),
    ("matchCharacterDescription", "match_character_description", False),
    ("matchCharacterPersonality", "match_character_personality", False),
    ("matchCharacterDepthPrompt", "match_character_depth_prompt", False),
    ("matchScenario", "match_scenario", False),
    ("matchCreatorNotes", "match_creator_notes", False),
    ("triggers", "triggers", []),
    ("ignoreBudget", "ignore_budget", False),
)


class CardInfo(BaseModel):
    """What a character card says about its character (the fields scans and filters read)."""

    model_config = ConfigDict(defer_build=True)
    name: str
    format: str = Field(description="ccv1, ccv2 or ccv3")
    spec: str | None = None
    spec_version: str | None = None
    description: str = ""
    personality: str = ""
    scenario: str = ""
    first_mes: str = ""
    mes_example: str = ""
    creator_notes: str = ""
    system_prompt: str = ""
    post_history_instructions: str = ""
    alternate_greetings: list[str] = Field(default_factory=list)
    tags: list[Any] = Field(default_factory=list)
    creator: str = ""
    character_version: str = ""
    depth_prompt: DepthPrompt | None = None
    world: str | None = Field(default=None, description="data.extensions.world: the linked book's name")
    avatar: str | None = None
    book_name: str | None = None


# ---------------------------------------------------------------- card shape

def card_format(card: Any) -> str | None:
    """``ccv3``/``ccv2``/``ccv1`` for a card object, ``None`` when it is not one (SillyTavern's
    importer order: ``spec`` present ⇒ V2/V3, else ``name`` ⇒ V1, else ``char_name`` ⇒ gradio)."""
    if not isinstance(card, dict):
        return None
    spec = card.get("spec")
    if isinstance(spec, str) and spec.startswith("chara_card_v"):
        return "ccv3" if spec != "chara_card_v2" else "ccv2"
    if "spec" in card:
        return None
    if isinstance(card.get("name"), str) and any(k in card for k in V1_FIELDS[1:]):
        return "ccv1"
    if isinstance(card.get("char_name"), str):
        return "ccv1"
    return None


def card_data(card: dict[str, Any]) -> dict[str, Any]:
    """The object holding the card's fields: ``data`` for V2/V3, the card itself for V1."""
    data = card.get("data")
    if "spec" in card and isinstance(data, dict):
        return data
    if "char_name" in card and "name" not in card:
        return {v1: card.get(g) for g, v1 in GRADIO_FIELDS.items() if g in card}
    return card


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def v2_fields(card: dict[str, Any]) -> dict[str, Any]:
    """The object holding a card's V2-only fields (its book, prompts, creator notes, extensions):
    ``data``, or nothing for a card without a ``data`` object. SillyTavern's importers keep only
    the V1 fields of a V1 card, and its frontend reads the others from ``data`` alone."""
    data = card.get("data")
    return data if "spec" in card and isinstance(data, dict) else {}


#: SillyTavern's V1 importers remove the first of these from a V1 card's ``creator_notes``
_NOTES_PLACEHOLDER = "Creator's notes go here."


def _creator_notes(card: dict[str, Any]) -> str:
    """A card's creator notes as SillyTavern imports them: ``data.creator_notes`` for V2/V3; for
    V1, ``creatorcomment ?? creator_notes`` (its placeholder removed)."""
    if "spec" in card:
        return _text(v2_fields(card).get("creator_notes"))
    notes = card.get("creator_notes")
    if isinstance(notes, str):
        notes = notes.replace(_NOTES_PLACEHOLDER, "", 1)
    comment = card.get("creatorcomment")
    return _text(comment if comment is not None else notes)


def _v1_tags(value: Any) -> list[Any]:
    """A V1 card's tags as SillyTavern's ``convertToV2`` reads them: a string split at commas."""
    if isinstance(value, str):
        return [t for t in (trim(part) for part in value.split(",")) if t]
    return list(value) if isinstance(value, list) else []


def card_info(card: dict[str, Any], avatar: str | None = None) -> tuple[CardInfo, list[str]]:
    """The character fields of a card, as SillyTavern reads them (``data`` wins over top level)."""
    warnings: list[str] = []
    fmt = card_format(card) or "ccv1"
    data = card_data(card)
    v2 = v2_fields(card)
    ext = v2.get("extensions") if isinstance(v2.get("extensions"), dict) else {}
    depth_prompt = None
    raw_dp = ext.get("depth_prompt")  # type: ignore[union-attr]
    if isinstance(raw_dp, dict):
        try:
            depth_prompt = build(DepthPrompt, raw_dp)
        except ValidationError:
            warnings.append("data.extensions.depth_prompt has values of the wrong type; ignored")
    def v1(field: str) -> Any:      # readFromV2: data's value when it has one, else the top level's
        return data[field] if field in data else card.get(field)

    name = _text(v1("name"))
    spec_version = card.get("spec_version")
    if fmt == "ccv3":
        try:
            if float(str(spec_version)) >= 4.0:
                warnings.append(f"card spec_version {spec_version} is newer than 3.x; read as V3")
        except ValueError:
            warnings.append(f"card spec_version {spec_version!r} is not a number")
        if card.get("spec") != "chara_card_v3":
            warnings.append(f"unknown card spec {card.get('spec')!r}; read as V3")
    if "spec" in card and not isinstance(card.get("data"), dict):
        warnings.append("card has a spec but no 'data' object; read its top-level V1 fields (SillyTavern "
                        "reads no book, prompts or creator notes from it)")
    elif "spec" not in card and any(k in card for k in _V2_ONLY):
        warnings.append("a V1 card (no spec): SillyTavern's import keeps only its V1 fields, so its "
                        + ", ".join(k for k in _V2_ONLY if k in card) + " are not read")
    book = v2.get("character_book")
    book_name = None
    if isinstance(book, dict):
        book_name = _text(book.get("name")) or f"{name}'s Lorebook"
    info = make(CardInfo,
        name=name, format=fmt,
        spec=card.get("spec") if isinstance(card.get("spec"), str) else None,
        spec_version=str(spec_version) if spec_version is not None else None,
        description=_text(v1("description")), personality=_text(v1("personality")),
        scenario=_text(v1("scenario")), first_mes=_text(v1("first_mes")), mes_example=_text(v1("mes_example")),
        creator_notes=_creator_notes(card),
        system_prompt=_text(v2.get("system_prompt")),
        post_history_instructions=_text(v2.get("post_history_instructions")),
        alternate_greetings=[g for g in v2.get("alternate_greetings") or [] if isinstance(g, str)]
        if isinstance(v2.get("alternate_greetings"), list) else [],
        tags=(list(v1("tags")) if isinstance(v1("tags"), list) else []) if "spec" in card else _v1_tags(v1("tags")),
        creator=_text(data.get("creator")), character_version=_text(v2.get("character_version")),
        depth_prompt=depth_prompt,
        world=ext.get("world") if isinstance(ext.get("world"), str) and ext.get("world") else None,  # type: ignore[union-attr]
        avatar=avatar or (f"{name}.png" if name else None), book_name=book_name,
    )
    return info, warnings


#: fields only ``data`` holds: a V1 card's top-level ones are dropped by SillyTavern's import
_V2_ONLY = ("character_book", "system_prompt", "post_history_instructions", "alternate_greetings", "extensions")


def _book_problem(raw: Any) -> str | None:
    """Why SillyTavern's ``convertCharacterBook`` would throw on a card's truthy ``character_book``
    (then the card is imported without a book), or None."""
    if not isinstance(raw, dict):
        return f"is {type_name(raw)}, not an object"
    entries = raw.get("entries")
    if not isinstance(entries, list):
        return f"its entries are {'missing' if 'entries' not in raw else type_name(entries)}, not an array"
    for i, entry in enumerate(entries):
        if not isinstance(entry, (dict, list)):
            return f"its entry {i} is {type_name(entry)}, not an object"
    return None


def read_card(card: Any, file: str | None, avatar: str | None = None,
              v3_decorators: bool = False) -> tuple[CardInfo, list[Lorebook], list[str]]:
    """A card object → its character info, its embedded book (scope ``character``) and warnings.
    A book SillyTavern's importer cannot convert leaves the card without one, as there."""
    if card_format(card) is None:
        raise FormatError("not a character card (no spec, name or char_name)", file=file)
    info, warnings = card_info(card, avatar)
    books: list[Lorebook] = []
    raw = v2_fields(card).get("character_book")
    if truthy(raw):
        problem = _book_problem(raw)
        if problem is not None or not isinstance(raw, dict):
            warnings.append(f"data.character_book {problem}: SillyTavern imports the card without its book")
        else:
            book, notes = read_character_book(raw, info.book_name or f"{info.name}'s Lorebook", file,
                                              scope="character", v3_decorators=v3_decorators)
            books.append(book)
            warnings.extend(notes)
    return info, books, warnings


# ---------------------------------------------------------------- book conversion

def card_entry_to_wi(entry: dict[str, Any], index: int) -> dict[str, Any]:
    """One ``character_book`` entry → engine entry JSON (``convertCharacterBook``, SillyTavern 1.18).

    As in SillyTavern: a missing ``enabled`` means disabled, a missing ``position`` means after the
    character, ``selective`` defaults to false, the entry-level ``case_sensitive`` and ``priority``
    are ignored, and ``extensions`` is carried along."""
    ext_raw = entry.get("extensions", UNDEF)
    ext = ext_raw if isinstance(ext_raw, dict) else {}
    uid = entry["id"] if "id" in entry else index
    position = get(ext, "position")
    comment = get(entry, "comment")
    fields: dict[str, Any] = {
        "key": get(entry, "keys"),
        "keysecondary": js_or(get(entry, "secondary_keys"), []),
        "comment": js_or(comment, ""),
        "content": get(entry, "content"),
        "constant": js_or(get(entry, "constant"), False),
        "selective": js_or(get(entry, "selective"), False),
        "order": get(entry, "insertion_order"),
        "position": nullish(position, 0 if entry.get("position") == "before_char" else 1),
        "disable": js_not(get(entry, "enabled")),
        "addMemo": not js_not(comment),
        "displayIndex": nullish(get(ext, "display_index"), index),
    }
    for ext_key, field, default in EXTENSION_FIELDS:
        fields[field] = nullish(get(ext, ext_key), default)
    fields["extensions"] = nullish(ext_raw, {})
    fields["triggers"] = js_or(get(ext, "triggers"), [])
    fields["ignoreBudget"] = nullish(get(ext, "ignore_budget"), False)
    return converted_entry(uid, fields)


def character_book_entries(book: dict[str, Any], file: str | None) -> dict[str, dict[str, Any]]:
    """``convertCharacterBook``: the engine entries keyed like SillyTavern's ``entries`` object
    (``String(id)``; a later entry with the same id replaces the earlier one in its slot)."""
    raw = book.get("entries")
    if not isinstance(raw, list):
        raise FormatError(f"must be an array, got {type_name(raw)}", file=file,
                          field="character_book.entries")
    out: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(raw):
        entry = object_entry(entry, file, f"character_book.entries[{index}]")
        # keyed by the id as given: a uid of ±Infinity is stored as null, its key stays "Infinity"
        out[object_key(entry["id"] if "id" in entry else index)] = card_entry_to_wi(entry, index)
    return out


def read_character_book(book: dict[str, Any], name: str, file: str | None, scope: Any = "character",
                        v3_decorators: bool = False) -> tuple[Lorebook, list[str]]:
    """A ``character_book`` object → :class:`Lorebook` with ``originalData`` = the book."""
    entries = character_book_entries(book, file)
    notes: list[str] = []
    raw = book.get("entries") or []
    if len(entries) < len(raw):
        notes.append(f"{len(raw) - len(entries)} character_book entries share an id with a later "
                     "entry; SillyTavern keeps only the last of each")
    if v3_decorators:
        for wi in entries.values():
            notes.extend(apply_v3_decorators(wi))
    parsed = [entry_from_json(wi, file, uid=wi.get("uid"), imported=True) for wi in entries.values()]
    lorebook = make(Lorebook, name=name, scope=scope, entries=parsed, entry_keys=list(entries),
                        extra={"originalData": book})
    return lorebook, notes


def wi_to_card_entry(wi: dict[str, Any]) -> dict[str, Any]:
    """Engine entry JSON → ``character_book`` entry (``convertWorldInfoToCharacterBook``, with the
    1.18 fields). Fields the entry lacks take the template default, and a null
    ``useGroupScoring`` stays null (SillyTavern writes ``false``), so the result reads back to
    the same effective entry."""
    position = fill(wi, "position")
    ext_own = wi.get("extensions")
    extensions: dict[str, Any] = dict(ext_own) if isinstance(ext_own, dict) else {}
    for field, key, default in EXPORT_EXTENSIONS:
        value = wi[field] if field in wi else (fill(wi, field) if field != "displayIndex" else UNDEF)
        extensions[key] = nullish(value, default) if default is not UNDEF else value
    return defined({
        "id": wi.get("uid", UNDEF),
        "keys": fill(wi, "key"),
        "secondary_keys": fill(wi, "keysecondary"),
        "comment": fill(wi, "comment"),
        "content": fill(wi, "content"),
        "constant": fill(wi, "constant"),
        "selective": fill(wi, "selective"),
        "insertion_order": fill(wi, "order"),
        "enabled": js_not(fill(wi, "disable")),
        "position": "before_char" if loose_eq_zero(position) else "after_char",
        "use_regex": True,
        "extensions": defined(extensions),
    })


def character_book_json(book: Lorebook) -> dict[str, Any]:
    """The ``character_book`` for a book: its ``originalData`` with the book's edits applied when
    it came from a card, else a fresh ``{entries, name}`` as SillyTavern exports one."""
    original = book.extra.get("originalData")
    ordered = book.scan_order()
    if isinstance(original, dict) and isinstance(original.get("entries"), list):
        raw = original["entries"]
        pairs = [(e, card_entry_to_wi(e if isinstance(e, dict) else {}, i)) for i, e in enumerate(raw)
                 if isinstance(e, (dict, list))]
        merged = merge_entries(pairs, ordered, wi_to_card_entry)
        if len(pairs) == len(raw) and merged == raw:
            return original
        out = dict(original)
        out["entries"] = merged
        return out
    return {"entries": [wi_to_card_entry(e.to_json()) for e in ordered], "name": book.name}


def worldinfo_original_data(book: Lorebook) -> Any:
    """``originalData`` to write with a book's world-info file, kept in step with its entries."""
    if isinstance(book.extra.get("originalData"), dict):
        return character_book_json(book)
    return None


# ---------------------------------------------------------------- whole cards

def card_with_book(card: dict[str, Any], book: Lorebook | None) -> dict[str, Any]:
    """The card with its ``character_book`` replaced by ``book`` (removed when ``None``)."""
    if card_format(card) == "ccv1" and book is not None:
        card = card_as(card, 2)
    out = copy.copy(card)
    if "spec" in out and isinstance(out.get("data"), dict):
        data = dict(out["data"])
        out["data"] = data
    else:
        data = out
    if book is None:     # a book removed; one never read (malformed, or a V1 card's) stays as it was
        raw = data.get("character_book")
        if data is not out and truthy(raw) and _book_problem(raw) is None:
            del data["character_book"]
    else:
        data["character_book"] = character_book_json(book)
    return out


def card_as(card: dict[str, Any], version: int) -> dict[str, Any]:
    """The card as ``chara_card_v2`` or ``chara_card_v3``: V1 cards are filled in the way
    SillyTavern's ``convertToV2`` does; V2 ⇄ V3 only swaps ``spec``/``spec_version`` (as
    SillyTavern's PNG writer does) and V3 gets ``group_only_greetings`` when it lacks it."""
    if version not in (2, 3):
        raise FormatError(f"no card version {version}")
    out = copy.deepcopy(card)
    if card_format(card) == "ccv1":
        out = _v1_to_v2(out)
    out["spec"] = "chara_card_v3" if version == 3 else "chara_card_v2"
    out["spec_version"] = "3.0" if version == 3 else "2.0"
    if version == 3 and isinstance(out.get("data"), dict):
        out["data"].setdefault("group_only_greetings", [])
    return out


def _v1_to_v2(card: dict[str, Any]) -> dict[str, Any]:
    fields = card_data(card)
    out = dict(card)
    values = {k: fields.get(k) if isinstance(fields.get(k), str) else "" for k in V1_FIELDS}
    out.update(values)
    tags = card.get("tags")
    tags = [t.strip() for t in tags.split(",") if t.strip()] if isinstance(tags, str) else (tags or [])
    notes = card.get("creatorcomment", card.get("creator_notes", ""))
    out.setdefault("creatorcomment", notes)
    out.setdefault("talkativeness", 0.5)
    out.setdefault("fav", False)
    out["tags"] = tags
    out["spec"], out["spec_version"] = "chara_card_v2", "2.0"
    out["data"] = {
        **values,
        "creator_notes": notes if isinstance(notes, str) else "",
        "system_prompt": "", "post_history_instructions": "",
        "tags": tags, "creator": card.get("creator") or "", "character_version": "",
        "alternate_greetings": [],
        "extensions": {"talkativeness": out["talkativeness"], "fav": bool(out["fav"]), "world": "",
                       "depth_prompt": {"prompt": "", "depth": 4, "role": "system"}},
        "group_only_greetings": [],
    }
    return out


# ---------------------------------------------------------------- standalone books

def is_lorebook_v3(data: Any) -> bool:
    return isinstance(data, dict) and data.get("spec") == "lorebook_v3"


def read_lorebook_v3(data: dict[str, Any], name: str, file: str | None,
                     v3_decorators: bool = False) -> tuple[Lorebook, list[str]]:
    """``{"spec": "lorebook_v3", "data": book}`` (SillyTavern cannot import it; lorescan can)."""
    book = data.get("data")
    if not isinstance(book, dict):
        raise FormatError(f"must be an object, got {type_name(book)}", file=file, field="data")
    return read_character_book(book, _text(book.get("name")) or name, file, scope="global",
                               v3_decorators=v3_decorators)


def lorebook_v3_json(book: Lorebook, original: Any = None) -> dict[str, Any]:
    """A ``lorebook_v3`` file for the book (top-level fields of ``original`` kept)."""
    out = dict(original) if isinstance(original, dict) else {}
    out["spec"] = "lorebook_v3"
    out["data"] = character_book_json(book)
    return out


def is_character_book(data: Any) -> bool:
    """A bare ``character_book`` (``entries`` an array of card entries with ``keys``)."""
    if not isinstance(data, dict) or not isinstance(data.get("entries"), list) or "spec" in data:
        return False
    items = data["entries"]
    return bool(items) and all(isinstance(e, dict) and "key" not in e for e in items) and any(
        "keys" in e or "insertion_order" in e for e in items)


# ---------------------------------------------------------------- registration

#: The entry fields a card's book (and a ``lorebook_v3`` or bare ``character_book``) can hold.
CARD_FIELDS = frozenset({"uid", "key", "keysecondary", "comment", "content", "constant", "selective", "order",
                         "position", "disable", "addMemo", "displayIndex", "triggers", "ignoreBudget"}
                        | {field for _, field, _ in EXTENSION_FIELDS})
_IMPORT_NOTE = "SillyTavern's world-info import cannot read {}; converted as a card book"


def spec_card(data: Any) -> str | None:
    """``ccv3``/``ccv2`` for an object whose ``spec`` names a card, None for one without ``spec``
    or with ``entries`` beside another ``spec`` (SillyTavern stores that as world info); any other
    ``spec`` (``lorebook_v3`` is detected before) is an error."""
    if not isinstance(data, dict) or "spec" not in data:
        return None
    fmt = card_format(data)
    if fmt is None:
        if "entries" in data:
            return None
        raise FormatError(f"unknown spec {data.get('spec')!r}: not a character card or lorebook_v3")
    return fmt


def card_reading(card: Any, ctx: ReadContext, avatar: str | None = None, notes: list[str] | None = None) -> Reading:
    """A card read into its character info and book; ``notes`` (its container's) come first."""
    info, books, warnings = read_card(card, ctx.file, avatar=avatar, v3_decorators=ctx.v3_decorators)
    return Reading(books=books, character=info, warnings=(notes or []) + warnings, raw=card)


def card_of(loaded: Loaded) -> dict[str, Any]:
    """The loaded card with its book as it is now: what a card format writes."""
    return card_with_book(loaded.raw, loaded.books[0] if loaded.books else None)


def _read_lorebook_v3(data: dict[str, Any], ctx: ReadContext) -> Reading:
    book, notes = read_lorebook_v3(data, ctx.stem, ctx.file, ctx.v3_decorators)
    return Reading(books=[book], warnings=notes + [_IMPORT_NOTE.format("lorebook_v3")], raw=data)


def _read_charbook(data: dict[str, Any], ctx: ReadContext) -> Reading:
    name = ctx.name or (data.get("name") if isinstance(data.get("name"), str) else "") or ctx.stem
    book, notes = read_character_book(data, name, ctx.file, scope="global", v3_decorators=ctx.v3_decorators)
    return Reading(books=[book], warnings=notes + [_IMPORT_NOTE.format("charbook")], raw=data)


def _write_lorebook_v3(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    return lorebook_v3_json(loaded.books[0], loaded.raw if same else None), json_writer()


def _write_charbook(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    return character_book_json(loaded.books[0]), json_writer()


def _write_v1(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    card = card_of(loaded)
    if not same:
        raise FormatError("cannot write V1 cards; use ccv2 or ccv3", file=loaded.path)
    return card, json_writer()


def _card_writer(version: int) -> Writer:
    def write(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
        card = card_of(loaded)
        return (card if same else card_as(card, version)), json_writer()
    return write


FORMATS = (
    Format("lorebook_v3", "standalone V3 lorebook {spec: lorebook_v3, data}", "book",
           (Detector("object", 100, is_lorebook_v3),), _read_lorebook_v3, _write_lorebook_v3,
           kind_aliases=("ccv3",), carries=CARD_FIELDS),
    Format("charbook", "bare V2/V3 character_book JSON {name, entries: [...]}", "book",
           (Detector("object", 600, is_character_book),), _read_charbook, _write_charbook,
           kind_aliases=("ccv2",), carries=CARD_FIELDS),
    Format("ccv1", "character card V1 JSON (incl. Pygmalion/gradio)", "card",
           (Detector("object", 1200, lambda data: card_format(data) == "ccv1"),), card_reading, _write_v1,
           target=False),
    Format("ccv2", "character card V2 JSON (chara_card_v2)", "card",
           (Detector("object", 210, lambda data: spec_card(data) == "ccv2"),), card_reading, _card_writer(2),
           aliases=("v2",), carries=CARD_FIELDS),
    Format("ccv3", "character card V3 JSON (chara_card_v3)", "card",
           (Detector("object", 200, lambda data: spec_card(data) == "ccv3"),), card_reading, _card_writer(3),
           aliases=("v3",), carries=CARD_FIELDS),
)
