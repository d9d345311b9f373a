"""What every format module shares: bounded file reads, JSON with one-line errors, JavaScript
operators the importers use, SillyTavern's converted-entry template, and the write-back merge
that keeps an edited file identical to its source wherever nothing changed."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._construct import make
from .._construct import native as _native
from .._errors import FormatError, LorescanError
from .._js import js_string, truthy
from .._model import ENTRY_DEFAULTS, Entry, Lorebook, mark_imported
from .registry import ReadContext, Reader, Reading, Writer

if TYPE_CHECKING:
    from .._load import Loaded

#: Largest input file lorescan reads (the biggest real lorebooks are a few MB).
MAX_FILE_BYTES = 256 * 1024 * 1024
#: The entry fields the simplest lorebook formats (NovelAI, Agnai) hold; Risu and KoboldAI Lite
#: are described from it.
SIMPLE_FIELDS = frozenset({"uid", "key", "content", "comment", "order", "disable", "addMemo", "displayIndex"})


class _Undefined:
    """JavaScript ``undefined``: a value whose key ``JSON.stringify`` leaves out."""

    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "undefined"

    def __bool__(self) -> bool:
        return False


UNDEF: Any = _Undefined()


def get(obj: Any, key: str) -> Any:
    """``obj?.key``: ``UNDEF`` when ``obj`` is not an object or lacks the key."""
    if isinstance(obj, dict) and key in obj:
        return obj[key]
    return UNDEF


def nullish(value: Any, default: Any) -> Any:
    """``value ?? default``."""
    return default if value is None or value is UNDEF else value


def js_or(value: Any, default: Any) -> Any:
    """``value || default`` (JavaScript truthiness)."""
    return value if value is not UNDEF and truthy(value) else default


def js_not(value: Any) -> bool:
    """``!value``."""
    return value is UNDEF or not truthy(value)


def loose_eq_zero(value: Any) -> bool:
    """``value == 0`` with JavaScript's loose equality (``"0"``, ``false``, ``""`` are equal to 0)."""
    if value is None or value is UNDEF:
        return False
    if isinstance(value, (bool, int, float)):
        return value == 0
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return True
        try:
            return float(text) == 0
        except ValueError:
            return False
    if isinstance(value, list):
        return len(value) == 0 or (len(value) == 1 and loose_eq_zero(value[0]))
    return False


def defined(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without its ``undefined`` values, as ``JSON.stringify`` writes it."""
    return {k: v for k, v in obj.items() if v is not UNDEF}


def object_entry(entry: Any, file: str | None, field: str, primitives: bool = False) -> dict[str, Any]:
    """An importer's entry as an object. SillyTavern's importers read an array's fields as missing
    (the entry then has no keys and is disabled), and so a number's, string's or boolean's when
    they only read fields (``primitives``: NovelAI's and Agnai's; the card converter writes an
    ``id`` into a primitive entry and throws); null, and any other value, is an error, as there."""
    if isinstance(entry, dict):
        return entry
    if isinstance(entry, list) or (primitives and entry is not None):
        return {}
    raise FormatError(f"must be an object, got {type_name(entry)}", file=file, field=field)


def object_key(value: Any) -> str:
    """``String(value)`` as a JavaScript object key (``null`` gives ``"null"``)."""
    return "null" if value is None else js_string(value)


# ---------------------------------------------------------------- files and JSON

def read_file(path: str | Path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The file's bytes, or a one-line error when it is missing, a directory or too big."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if p.is_dir():
            raise FormatError("is a directory, not a file", file=str(path))
        if size > limit:
            raise FormatError(f"is {size} bytes; files over {limit} bytes are refused", file=str(path))
        return p.read_bytes()
    except FileNotFoundError:
        raise LorescanError("no such file", file=str(path)) from None
    except PermissionError:
        raise LorescanError("permission denied", file=str(path)) from None
    except OSError as exc:
        raise LorescanError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def decode_as_sillytavern(data: bytes) -> tuple[str, int | None]:
    """UTF-8 text without a leading byte-order mark, as SillyTavern reads a file it is given (the
    browser's ``file.text()``, the server's ``readFileSync(…, 'utf8')``): bytes that are not UTF-8
    become U+FFFD. Also the offset of the first such byte, or None."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return data.decode("utf-8", "replace"), exc.start


def decode_text(data: bytes, file: str | None, what: str = "") -> str:
    """UTF-8 text without a leading byte-order mark; a byte that is not UTF-8 is an error (for
    lorescan's own files: scenarios, cases, settings)."""
    text, bad = decode_as_sillytavern(data)
    if bad is not None:
        raise FormatError(f"{what}is not UTF-8 text (bad byte at offset {bad})", file=file)
    return text


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _js_int(text: str) -> int | float:
    """A JSON integer as ``JSON.parse`` reads it when Python will not convert it (over 4,300
    digits): a JavaScript number that large is ``±Infinity``."""
    try:
        return int(text)
    except ValueError:
        return -math.inf if text.startswith("-") else math.inf


def parse_json(text: str, file: str | None, what: str = "") -> Any:
    """``JSON.parse``: strict JSON (no NaN/Infinity), one-line error with line and column. A number
    too large for a double is ``±Infinity``, as in JavaScript."""
    try:
        try:
            return json.loads(text, parse_constant=_no_constant)
        except ValueError as exc:
            if isinstance(exc, json.JSONDecodeError) or "integer string conversion" not in str(exc):
                raise
            return json.loads(text, parse_constant=_no_constant, parse_int=_js_int)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{what}invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                          file=file) from None
    except ValueError as exc:
        raise FormatError(f"{what}invalid JSON: {exc}", file=file) from None
    except RecursionError:
        raise FormatError(f"{what}JSON nested too deeply", file=file) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _finite(value: Any) -> Any:
    """The value with every infinite or NaN number ``null``, as ``JSON.stringify`` writes them."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def dump_json(value: Any, indent: int | None = 4) -> str:
    """JSON text as SillyTavern saves it (``JSON.stringify(value, null, 4)``; compact with ``None``):
    infinite numbers are ``null`` and lone surrogates ``\\uXXXX`` escapes, so the text is valid
    JSON and encodes to UTF-8. With the C extension, the C encoder writes the text compact and
    ``json_layout`` indents it: the same text as ``json.dumps(indent=...)``, whose indenting runs
    Python's pure-Python encoder (most of the time of writing a big book back)."""
    layout = _native.json_layout if _native is not None and (indent is None or indent >= 0) else None
    options: dict[str, Any] = {"separators": (",", ":")} if indent is None or layout else {"indent": indent}
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, **options)
    except ValueError:
        text = json.dumps(_finite(value), ensure_ascii=False, allow_nan=False, **options)
    if layout is not None:
        return layout(text, -1 if indent is None else indent)
    if _SURROGATE.search(text):
        text = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def utf8(text: str) -> bytes:
    """``text`` as UTF-8, each lone surrogate written as U+FFFD (as Node.js writes a string)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text).encode("utf-8")


def json_writer(indent: int | None = 4) -> Callable[[Any], bytes]:
    """A serialiser writing a document as :func:`dump_json` does, in UTF-8."""
    return lambda doc: dump_json(doc, indent=indent).encode("utf-8")


def type_name(value: Any) -> str:
    """The JSON type of a value, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def entry_from_json(data: Any, file: str | None, uid: Any = None, imported: bool = False) -> Entry:
    """An :class:`Entry` from a JSON object; a bad value names the file, entry and field.
    ``imported``: one of SillyTavern's importers built ``data`` (see :func:`is_imported`)."""
    if not isinstance(data, dict):
        raise FormatError(f"entry must be an object, got {type_name(data)}", file=file, uid=uid)
    try:
        entry = Entry.from_json(data)
    except LorescanError as exc:
        if exc.uid is None:
            exc.uid = uid
        raise (exc.with_file(file) if file else exc) from None
    if imported:
        mark_imported(entry)
    return entry


def fill(wi: dict[str, Any], field: str) -> Any:
    """An entry field's value, or SillyTavern's template default when the entry lacks it."""
    if field in wi:
        return wi[field]
    return copy.deepcopy(ENTRY_DEFAULTS.get(field))


#: SillyTavern 1.18's ``newWorldInfoEntryTemplate`` key order. Importers spread it first, so a
#: converted entry's keys come in this order (then ``uid``, ``displayIndex``, ``extensions``), and
#: the timed-effect hash (a hash of the entry's JSON text) depends on that order.
ST_TEMPLATE_ORDER = (
    "key", "keysecondary", "comment", "content", "constant", "vectorized", "selective", "selectiveLogic",
    "addMemo", "order", "position", "disable", "ignoreBudget", "excludeRecursion", "preventRecursion",
    "matchPersonaDescription", "matchCharacterDescription", "matchCharacterPersonality",
    "matchCharacterDepthPrompt", "matchScenario", "matchCreatorNotes", "delayUntilRecursion", "probability",
    "useProbability", "depth", "outletName", "group", "groupOverride", "groupWeight", "scanDepth",
    "caseSensitive", "matchWholeWords", "useGroupScoring", "automationId", "role", "sticky", "cooldown",
    "delay", "triggers",
)


def converted_entry(uid: Any, fields: dict[str, Any], display_index: Any = UNDEF) -> dict[str, Any]:
    """An entry as SillyTavern's importers build it (``{...template, uid, …}``) and store it: the
    template's keys in its order, then ``uid`` and any new keys, the converted values in place,
    through ``JSON.stringify`` (:func:`stringified`)."""
    out: dict[str, Any] = {key: copy.deepcopy(ENTRY_DEFAULTS[key]) for key in ST_TEMPLATE_ORDER}
    out["uid"] = uid
    out.update(fields)
    if display_index is not UNDEF:
        out["displayIndex"] = display_index
    return stringified(out)


def stringified(value: Any) -> Any:
    """``JSON.parse(JSON.stringify(value))``, as SillyTavern stores what its importers build: a
    number too large for a double (±Infinity) becomes ``null``, an ``undefined`` member of an
    object is dropped and one of an array becomes ``null``. A new copy of every object and array."""
    t = type(value)
    if t is float:
        return value if math.isfinite(value) else None
    if t is dict:
        return {k: stringified(v) for k, v in value.items() if v is not UNDEF}
    if t is list:
        return [None if v is UNDEF else stringified(v) for v in value]
    return value


# ---------------------------------------------------------------- lossless write-back

def deep_patch(raw: Any, old: Any, new: Any) -> Any:
    """``raw`` with only what changed between two exports of it applied (recursing into objects),
    so fields a converter does not know survive and unchanged values keep their spelling."""
    if not (isinstance(raw, dict) and isinstance(old, dict) and isinstance(new, dict)):
        return copy.deepcopy(new)
    out = dict(raw)
    for key, value in new.items():
        if key in old and old[key] == value:
            continue
        if key in out and key in old:
            out[key] = deep_patch(out[key], old[key], value)
        else:
            out[key] = copy.deepcopy(value)
    for key in old:
        if key not in new:
            out.pop(key, None)
    return out


def merge_entries(originals: list[tuple[Any, dict[str, Any]]], entries: Iterable[Entry],
                  export: Callable[[dict[str, Any]], Any]) -> list[Any]:
    """The format's entry list for ``entries``, reusing each original raw entry.

    ``originals`` pairs each raw entry of the source file with the engine entry it was read as.
    Unchanged entries are written back verbatim, changed ones as the raw entry patched with what
    changed, deleted ones are left out and new ones are appended in their export form. A raw
    entry whose uid a later raw entry reused never reached the engine; it is kept verbatim.
    """
    last: dict[str, int] = {}
    for index, (_, wi) in enumerate(originals):
        last[object_key(wi.get("uid"))] = index
    current: dict[str, Entry] = {}
    added: list[Entry] = []
    for entry in entries:
        uid = object_key(entry.uid)
        if uid in last and uid not in current:
            current[uid] = entry
        else:
            added.append(entry)
    out: list[Any] = []
    for index, (raw, wi) in enumerate(originals):
        uid = object_key(wi.get("uid"))
        if last[uid] != index:
            out.append(raw)
            continue
        entry = current.get(uid)  # type: ignore[assignment]
        if entry is None:
            continue
        now = entry.to_json()
        out.append(raw if now == wi else deep_patch(raw, export(wi), export(now)))
    out.extend(export(entry.to_json()) for entry in added)
    return out


def book_from_entries(name: str, entries: dict[str, dict[str, Any]], file: str | None,
                      scope: Any = "global", extra: dict[str, Any] | None = None) -> Lorebook:
    """A :class:`Lorebook` from an ``entries`` object (key → engine entry JSON)."""
    parsed = [entry_from_json(value, file, uid=value.get("uid", key) if isinstance(value, dict) else key)
              for key, value in entries.items()]
    return make(Lorebook, name=name, scope=scope, entries=parsed, entry_keys=list(entries.keys()),
                    extra=extra or {})


def merged_export(original: Any, list_key: str, entries: Iterable[Entry],
                  read: Callable[[Any, int], dict[str, Any]],
                  export: Callable[[dict[str, Any]], Any]) -> dict[str, Any] | None:
    """``original`` with its entry list at ``list_key`` rebuilt by :func:`merge_entries`, or
    ``None`` when there is no such original (the caller then writes a fresh file)."""
    if not (isinstance(original, dict) and isinstance(original.get(list_key), list)):
        return None
    pairs = [(raw, read(raw, i)) for i, raw in enumerate(original[list_key])]
    out = dict(original)
    out[list_key] = merge_entries(pairs, entries, export)
    return out


# ---------------------------------------------------------------- one-book JSON formats

def book_reader(read: Callable[[Any, str, str | None], tuple[Lorebook, list[str]]]) -> Reader:
    """The reader of a one-book JSON format, from ``read(document, name, file) -> (book, notes)``."""
    def reader(data: Any, ctx: ReadContext) -> Reading:
        book, notes = read(data, ctx.stem, ctx.file)
        return Reading(books=[book], warnings=notes, raw=data)
    return reader


def book_writer(to_json: Callable[[Lorebook, Any], Any]) -> Writer:
    """The writer of a one-book JSON format, from ``to_json(book, original)``; ``original`` is the
    document read when the file is written in its own format, else None."""
    def writer(loaded: Loaded, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
        return to_json(loaded.books[0], loaded.raw if same else None), json_writer()
    return writer
