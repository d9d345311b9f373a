"""SillyTavern world info JSON (``data/<user>/worlds/<name>.json``): read and write, lossless.

The file is ``{"entries": {"<uid>": entry, …}, …}``; SillyTavern only checks that ``entries``
exists, names the book after the file, and reads the entries in ``Object.keys`` order. Every other
top-level field (``originalData``, third-party ``name``/``description``…) is kept verbatim.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._construct import make
from .._errors import FormatError
from .._model import Entry, Lorebook
from . import cards
from .common import (
    book_from_entries,
    decode_text,
    dump_json,
    entry_from_json,
    json_writer,
    object_key,
    parse_json,
    read_file,
    type_name,
)
from .registry import Detector, Format, ReadContext, Reading

if TYPE_CHECKING:
    from .._load import Loaded

FORMAT = "st"


def is_worldinfo(data: Any) -> bool:
    """Whether SillyTavern's world-info import would store ``data`` as a book (it has ``entries``)."""
    return isinstance(data, dict) and "entries" in data


def read_worldinfo(data: dict[str, Any], name: str, file: str | None = None,
                   scope: Any = "global") -> Lorebook:
    """A :class:`Lorebook` from a parsed world-info file, keeping every field and key order."""
    if not isinstance(data, dict):
        raise FormatError(f"world info must be a JSON object, got {type_name(data)}", file=file)
    if "entries" not in data:
        raise FormatError("world info has no 'entries'", file=file)
    raw = data["entries"]
    extra = {k: v for k, v in data.items() if k != "entries"}
    if isinstance(raw, list):
        entries = [entry_from_json(value, file, uid=index) for index, value in enumerate(raw)]
        return make(Lorebook, name=name, scope=scope, entries=entries,
                        entry_keys=[str(i) for i in range(len(entries))], extra=extra,
                        entries_was_list=True)
    if not isinstance(raw, dict):
        raise FormatError(f"must be an object keyed by uid, got {type_name(raw)}", file=file,
                          field="entries")
    return book_from_entries(name, raw, file, scope=scope, extra=extra)


def load_worldinfo(path: str | Path, name: str | None = None) -> Lorebook:
    """Read a world-info file; the book is named after the file (without extension) by default."""
    file = str(path)
    data = parse_json(decode_text(read_file(path), file), file)
    return read_worldinfo(data, name if name is not None else book_name(file), file)


def book_name(path: str) -> str:
    """SillyTavern's book name for an imported file: the file name up to its last dot."""
    base = Path(path).name
    return base[: base.rfind(".")] if "." in base else base


def entry_keys(book: Lorebook) -> list[str]:
    """The ``entries`` keys to write: the ones read when the entry list still matches them,
    else each entry's uid (a new entry without one gets the smallest free integer)."""
    if book.entry_keys is not None and len(book.entry_keys) == len(book.entries):
        return list(book.entry_keys)
    keys: list[str] = []
    taken = {object_key(e.uid) for e in book.entries if e.uid is not None}
    free = 0
    for entry in book.entries:
        if entry.uid is None:
            while str(free) in taken:
                free += 1
            taken.add(str(free))
            keys.append(str(free))
        else:
            keys.append(object_key(entry.uid))
    return keys


def worldinfo_to_json(book: Lorebook, original_data: Any = None) -> dict[str, Any]:
    """The world-info JSON of a book: ``entries`` (an object, or an array when it was read as one),
    then the book's other top-level fields. ``original_data`` replaces ``originalData`` (a card
    book with the book's edits mirrored into it, as SillyTavern's editor keeps it)."""
    if book.entries_was_list:
        entries: Any = [entry.to_json() for entry in book.entries]
    else:
        entries = {}
        for key, entry in zip(entry_keys(book), book.entries):
            if key in entries:
                raise FormatError(f"two entries share the key {key!r}", uid=entry.uid, field="uid")
            entries[key] = entry.to_json()
    out: dict[str, Any] = {"entries": entries}
    for key, value in book.extra.items():
        out[key] = value
    if original_data is not None:
        out["originalData"] = original_data
    return out


def write_worldinfo(book: Lorebook, original_data: Any = None) -> bytes:
    """The file's bytes, indented the way SillyTavern saves world info."""
    return dump_json(worldinfo_to_json(book, original_data)).encode("utf-8")


def new_entry(book: Lorebook, **fields: Any) -> Entry:
    """A new entry with the smallest free uid (SillyTavern's rule), added to ``book``."""
    taken = {object_key(e.uid) for e in book.entries}
    uid = 0
    while str(uid) in taken:
        uid += 1
    entry = Entry.from_json({"uid": uid, **fields})
    keys = entry_keys(book)
    book.entries.append(entry)
    book.entry_keys = keys + [str(uid)]
    return entry


# ---------------------------------------------------------------- registration

def _read(data: dict[str, Any], ctx: ReadContext) -> Reading:
    book = read_worldinfo(data, ctx.stem, ctx.file)
    notes: list[str] = []
    if book.entries_was_list:
        notes.append("'entries' is an array; SillyTavern reads it as-is (entries without 'key' never match)")
    return Reading(books=[book], warnings=notes, raw=data)


def _write(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    book = loaded.books[0]
    return worldinfo_to_json(book, cards.worldinfo_original_data(book)), json_writer()


FORMATS = (
    Format("st", "SillyTavern world info JSON", "book", (Detector("object", 700, is_worldinfo),),
           _read, _write, aliases=("sillytavern", "worldinfo", "world")),
)
