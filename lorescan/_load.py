"""Open any lorebook, character card or chat file, whatever its extension says, and write it back
in its own format (losslessly) or another one.

:func:`load` detects the format from the content (PNG/ZIP signatures, then JSON shape, JSONL,
transcript, YAML) the way SillyTavern's importers tell formats apart, and returns a
:class:`Loaded`: the books (as engine :class:`~lorescan._model.Lorebook` objects), the chat, the
character and warnings. :func:`save`/:func:`convert` write a :class:`Loaded` again; in its own
format an unchanged file is written byte for byte, an edited one changes only what was edited.

Every format is declared once, in the format registry (:mod:`lorescan._formats.registry`): this
module parses (bytes, JSON, JSON lines, text), asks the registry's detectors which format claims
the input, and calls that format's reader or writer. It names no format itself, except YAML
files, which are GLM chat histories.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._construct import BULK, BULK_BYTES, gc_paused, make
from ._errors import FormatError, LorescanError
from ._formats import chats, registry
from ._formats.cards import CardInfo
from ._formats.chats import Chat
from ._formats.common import decode_as_sillytavern, parse_json, read_file, type_name
from ._formats.registry import Format, ReadContext, Shape
from ._formats.worldinfo import book_name
from ._formats.yamldoc import parse_yaml
from ._model import ENTRY_DEFAULTS, Lorebook

__all__ = ["Loaded", "Chat", "CardInfo", "load", "load_bytes", "save", "render", "convert",
           "describe", "document"]

#: Fields only SillyTavern's editor uses; not reported as lost.
UI_ONLY = {"addMemo", "displayIndex"}
#: :attr:`Loaded.kind` → the kind of format that holds it.
_KINDS: dict[str, registry.Kind] = {"lorebook": "book", "card": "card", "chat": "chat"}


class Loaded(BaseModel):
    """A file lorescan has read: its format, books, chat and character, and warnings."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)

    format: str
    path: str
    books: list[Lorebook] = Field(default_factory=list)
    chat: Chat | None = None
    character: CardInfo | None = None
    warnings: list[str] = Field(default_factory=list)
    raw: Any = Field(default=None, exclude=True, repr=False, description="the parsed source document")
    source: bytes | None = Field(default=None, exclude=True, repr=False, description="the file's bytes")
    image: bytes | None = Field(default=None, exclude=True, repr=False, description="a card's image")
    yaml: bool = Field(default=False, exclude=True, repr=False)

    @property
    def kind(self) -> str:
        """``card``, ``chat`` or ``lorebook``."""
        return "card" if self.character is not None else "chat" if self.chat is not None else "lorebook"


# ---------------------------------------------------------------- loading

def load(path: str | Path, *, name: str | None = None, v3_decorators: bool = False) -> Loaded:
    """Read a file and detect its format from its content.

    ``name`` overrides the book name (default: SillyTavern's rule, the file name without its
    extension, or a card book's own name). ``v3_decorators`` maps V3 ``@@depth``/``@@position``/
    ``@@role``/``@@scan_depth``/``@@activate``/``@@dont_activate`` in card books to entry settings
    (SillyTavern itself only honours the last two, from the content, at scan time)."""
    return load_bytes(read_file(path), str(path), name=name, v3_decorators=v3_decorators)


def load_bytes(data: bytes, path: str, *, name: str | None = None, v3_decorators: bool = False) -> Loaded:
    """:func:`load` for bytes already read; ``path`` names the file in messages and books."""
    file = str(path)
    stem = name if name is not None else book_name(file)
    opts = {"file": file, "stem": stem, "name": name, "v3": v3_decorators}
    try:
        with gc_paused(len(data) >= BULK_BYTES):    # a big book's entries and parsed JSON are long-lived
            fmt = registry.detect("bytes", data)
            if fmt is not None:
                loaded = _read(fmt, data, opts, "bytes")
            elif data.startswith(b"\xff\xd8\xff") or b"\0" in data[:1024]:
                raise FormatError("binary file of an unsupported format (not a PNG card, CHARX or text)", file=file)
            else:
                text, bad = decode_as_sillytavern(data)
                loaded = _load_text(text, opts)
                if bad is not None:
                    loaded.warnings.insert(0, f"not all UTF-8 (byte {bad}): such bytes are read as U+FFFD, "
                                              "as SillyTavern reads the file")
    except LorescanError as exc:
        raise exc.with_file(file) from None
    except RecursionError:
        raise FormatError("nested too deeply", file=file) from None
    except Exception as exc:
        exc.add_note(f"while reading {file}")  # the CLI's report of a bug names the file
        raise
    loaded.source = data
    digest = hashlib.blake2b(data, digest_size=32).hexdigest()     # as good a key as SHA-256, at 1.6x its speed
    for i, book in enumerate(loaded.books):
        book._content_hash = f"{digest}:{i}:{int(v3_decorators)}"
    return loaded


def _read(fmt: Format, value: Any, o: dict[str, Any], shape: Shape) -> Loaded:
    """Read ``value`` as ``fmt``, whose detector of ``shape`` claimed it; ``--name`` names every book."""
    reading = fmt.read(value, ReadContext(o["file"], o["stem"], o["name"], o["v3"], shape))
    if o["name"] is not None:
        for book in reading.books:
            book.name = o["name"]
    return make(Loaded, format=fmt.name, path=o["file"], books=reading.books, chat=reading.chat,
                  character=reading.character, warnings=reading.warnings, raw=reading.raw, image=reading.image)


def _load_text(text: str, o: dict[str, Any]) -> Loaded:
    file = o["file"]
    suffix = Path(file).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _load_yaml(text, o)
    if not text or text.isspace():     # (no stripped copy: the text may be 100 MB)
        raise FormatError("file is empty", file=file)
    try:
        value = parse_json(text, file)
    except FormatError as error:
        lines = [(n, ln) for n, ln in enumerate(text.splitlines(), 1) if ln.strip()]
        if len(lines) > 1 and lines[0][1].lstrip().startswith("{"):
            try:
                first = parse_json(lines[0][1], file)
            except FormatError:
                raise error from None
            if isinstance(first, dict):
                return _load_jsonl(lines, o)
        if text.lstrip()[:1] in ("{", "["):
            raise error from None
        fmt = registry.detect("text", text)
        if fmt is not None:
            return _read(fmt, text, o, "text")
        return _load_yaml(text, o, guess=True)
    del text    # the caller keeps the bytes: the entries are built without a second copy alive
    return _load_json(value, o)


def _load_jsonl(lines: list[tuple[int, str]], o: dict[str, Any]) -> Loaded:
    file = o["file"]
    values = [parse_json(line, file, what=f"line {n}: ") for n, line in lines]
    fmt = registry.detect("lines", values)
    if fmt is None:
        raise FormatError("JSON lines that are neither a SillyTavern chat nor OpenAI messages", file=file)
    return _read(fmt, values, o, "lines")


def _load_yaml(text: str, o: dict[str, Any], guess: bool = False) -> Loaded:
    file = o["file"]
    try:
        value = parse_yaml(text, file)
    except FormatError:
        if guess:
            raise FormatError("not a lorebook, card or chat format lorescan knows", file=file) from None
        raise
    if chats.glm_items(value) is None or (guess and not isinstance(value, dict)):
        if guess:
            raise FormatError("not a lorebook, card or chat format lorescan knows", file=file)
        raise FormatError("YAML file is not a GLM chat history", file=file)
    chat, notes = chats.read_glm(value, file)
    return make(Loaded, format="glm", path=file, chat=chat, warnings=notes, raw=value, yaml=True)


def _detect_json(value: Any) -> tuple[Format, Shape]:
    """The format of a parsed JSON document, and the shape whose detector claimed it."""
    if isinstance(value, dict):
        fmt = registry.detect("object", value)
        if fmt is None:
            raise FormatError("JSON object of an unknown format (no entries, spec, kind, type or messages)")
        return fmt, "object"
    if isinstance(value, list):
        if not value:
            raise FormatError("empty JSON array: nothing to read")
        fmt = registry.detect("array", value)
        if fmt is None:
            raise FormatError("JSON array of an unknown format (not messages or KoboldAI Lite world info)")
        return fmt, "array"
    raise FormatError(f"JSON {type_name(value)} is not a lorebook, card or chat")


def _load_json(value: Any, o: dict[str, Any]) -> Loaded:
    fmt, shape = _detect_json(value)
    return _read(fmt, value, o, shape)


# ---------------------------------------------------------------- writing

def resolve_target(loaded: Loaded, to: str | None) -> str:
    """The format to write: ``to`` (aliases allowed; ``ccv3``/``ccv2`` of a lorebook mean
    ``lorebook_v3``/``charbook``, ``st`` of a chat means ``st-chat``), else the file's own."""
    if to is None:
        return loaded.format
    target = registry.resolve(to.lower(), _KINDS[loaded.kind])
    targets = registry.targets()
    if target not in targets and target != loaded.format:
        raise FormatError(f"unknown output format {to!r}; one of: {', '.join(targets)}")
    return target


def render(loaded: Loaded, to: str | None = None) -> tuple[bytes, list[str]]:
    """The bytes of ``loaded`` written as ``to`` (default: its own format), and notes about what
    the target cannot hold. Own format, nothing changed: the source bytes themselves."""
    target = resolve_target(loaded, to)
    with gc_paused(sum(len(b.entries) for b in loaded.books) >= BULK):    # a document per entry
        doc, write = _document(loaded, target)
        notes = [] if registry.get(target).kind == "chat" else _lossy(loaded, target)
        if target == loaded.format and loaded.source is not None and doc == loaded.raw:
            return loaded.source, notes
        return write(doc), notes


def document(loaded: Loaded, to: str | None = None) -> Any:
    """The document :func:`render` would serialise, rebuilt from the model (for a card PNG or
    CHARX: the card JSON; for JSONL: the list of lines)."""
    return _document(loaded, resolve_target(loaded, to))[0]


def _document(loaded: Loaded, target: str) -> tuple[Any, Callable[[Any], bytes]]:
    fmt = registry.get(target)
    if fmt.kind == "chat" and loaded.chat is None:
        raise FormatError(f"{target} is a chat format; this is a {loaded.format} {loaded.kind}",
                          file=loaded.path)
    if fmt.kind == "card" and (loaded.kind != "card" or not isinstance(loaded.raw, dict)):
        raise FormatError(f"{target} needs a character card; this is a {loaded.format} {loaded.kind}",
                          file=loaded.path)
    if fmt.kind == "book":
        _one_book(loaded, target)
    if fmt.write is None:
        raise FormatError(f"cannot write {target} files", file=loaded.path)
    return fmt.write(loaded, target == loaded.format)


def _one_book(loaded: Loaded, target: str) -> Lorebook:
    if not loaded.books:
        raise FormatError(f"holds no lorebook to write as {target}", file=loaded.path)
    if len(loaded.books) > 1:
        raise FormatError(f"holds {len(loaded.books)} lorebooks; {target} holds one", file=loaded.path)
    return loaded.books[0]


def _lossy(loaded: Loaded, target: str) -> list[str]:
    """Notes naming the entry fields a lossy target cannot hold, when some entry sets them."""
    fmt = registry.get(target)
    carries = fmt.carries
    if carries is None or target == loaded.format:
        return []
    lost: dict[str, int] = {}
    split = 0
    for book in loaded.books:
        for entry in book.entries:
            if fmt.comma_keys and any(
                    "," in k or k != k.strip() for k in (entry.key or []) + (entry.keysecondary or [])):
                split += 1
            for field in entry.model_fields_set:
                if field in carries or field in UI_ONLY or field not in ENTRY_DEFAULTS and field != "characterFilter":
                    continue
                value = getattr(entry, field)
                if value in fmt.carried_values.get(field, ()):
                    continue
                if field == "characterFilter" or value != ENTRY_DEFAULTS[field]:
                    lost[field] = lost.get(field, 0) + 1
    notes = []
    if lost:
        fields = ", ".join(f"{k} ({v})" for k, v in sorted(lost.items()))
        notes.append(f"{target} cannot hold these entry fields, so they are dropped: {fields}")
    if split:
        notes.append(f"{split} entries have keys with commas or outer spaces; {target} keys are one "
                     "comma-separated string, so they will read back split and trimmed")
    return notes


def save(loaded: Loaded, path: str | Path, to: str | None = None) -> list[str]:
    """Write ``loaded`` to ``path`` as ``to`` (default: its own format); returns notes.
    Refuses to write over the file it was read from."""
    out = Path(path)
    _refuse_same(loaded.path, out)
    data, notes = render(loaded, to)
    try:
        out.write_bytes(data)
    except OSError as exc:
        raise LorescanError(f"cannot write: {exc.strerror or exc}", file=str(path)) from None
    return notes


def convert(src: str | Path, dst: str | Path, to: str | None = None, **options: Any) -> tuple[Loaded, list[str]]:
    """Read ``src`` and write it to ``dst`` as ``to``; returns what was read and the notes."""
    _refuse_same(str(src), Path(dst))
    loaded = load(src, **options)
    return loaded, loaded.warnings + save(loaded, dst, to)


def _refuse_same(src: str, out: Path) -> None:
    source = Path(src)
    same = out.resolve() == source.resolve()
    if not same and out.exists() and source.exists():
        try:
            same = out.samefile(source)
        except OSError:
            same = False
    if same:
        raise LorescanError("refusing to write over the input file", file=str(out))


def describe(loaded: Loaded) -> dict[str, Any]:
    """A JSON-ready summary: format, books and entry counts, messages, character, warnings."""
    out: dict[str, Any] = {
        "format": loaded.format, "kind": loaded.kind, "description": registry.describe(loaded.format),
        "books": [{"name": b.name, "scope": b.scope, "entries": len(b.entries)} for b in loaded.books],
    }
    if loaded.chat is not None:
        chat = loaded.chat
        out["messages"] = len(chat.messages)
        out["user_name"], out["character_name"] = chat.user_name, chat.character_name
        out["hidden_messages"] = sum(1 for m in chat.messages if m.is_system)
        if chat.world_info:
            out["chat_book"] = chat.world_info
        if chat.timed is not None:
            out["timed_effects"] = {"sticky": len(chat.timed.sticky), "cooldown": len(chat.timed.cooldown)}
    if loaded.character is not None:
        info = loaded.character
        out["character"] = {"name": info.name, "spec": info.spec, "spec_version": info.spec_version,
                            "card_format": info.format, "tags": info.tags, "linked_book": info.world,
                            "depth_prompt": bool(info.depth_prompt and info.depth_prompt.prompt)}
    out["warnings"] = list(loaded.warnings)
    return out
