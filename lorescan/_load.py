"""Open any lorebook, character card or chat file, whatever its extension says, and write it back
in its own format (losslessly) or another one.

:func:`load` detects the format from the content (PNG/ZIP signatures, then JSON shape, JSONL,
YAML, transcript) the way SillyTavern's importers tell formats apart, and returns a
:class:`Loaded`: the books (as engine :class:`~lorescan._model.Lorebook` objects), the chat, the
character and warnings. :func:`save`/:func:`convert` write a :class:`Loaded` again; in its own
format an unchanged file is written byte for byte, an edited one changes only what was edited.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ._errors import FormatError, LorescanError
from ._formats import CARD_FORMATS, CHAT_FORMATS, FORMATS, agnai, cards, charx, chats, kobold, novelai, png, risu
from ._formats.cards import CardInfo
from ._formats.chats import Chat
from ._formats.common import decode_text, dump_json, parse_json, read_file, type_name
from ._formats.worldinfo import book_name, is_worldinfo, read_worldinfo, worldinfo_to_json
from ._formats.yamldoc import parse_yaml
from ._model import ENTRY_DEFAULTS, Lorebook

__all__ = ["Loaded", "Chat", "CardInfo", "load", "load_bytes", "save", "render", "convert",
           "describe", "document", "FORMATS", "TARGETS"]

#: ``--to`` names and aliases → format.
ALIASES = {"sillytavern": "st", "worldinfo": "st", "world": "st", "v3": "ccv3", "v2": "ccv2",
           "nai": "novelai", "lorebook": "novelai", "jsonl": "st-chat", "tavernai": "tavernai-chat",
           "txt": "transcript", "lite": "kobold-lite", "chatglm": "glm"}
TARGETS = tuple(f for f in FORMATS if f not in ("ccv1", "novelai-scenario", "novelai-png"))

_CARD_FIELDS = {"uid", "key", "keysecondary", "comment", "content", "constant", "selective", "order",
                "position", "disable", "addMemo", "displayIndex", "triggers", "ignoreBudget"} | {
    f for _, f, _ in cards.EXTENSION_FIELDS}
_SIMPLE = {"uid", "key", "content", "comment", "order", "disable", "addMemo", "displayIndex"}
#: Entry fields each lossy lorebook format can hold (the others are reported when set).
CARRIES: dict[str, set[str]] = {
    "lorebook_v3": _CARD_FIELDS, "charbook": _CARD_FIELDS, "ccv2": _CARD_FIELDS, "ccv3": _CARD_FIELDS,
    "png": _CARD_FIELDS, "charx": _CARD_FIELDS, "novelai": _SIMPLE, "agnai": _SIMPLE,
    "risu": _SIMPLE - {"disable"} | {"keysecondary", "constant", "selective", "probability", "useProbability"},
    "kobold": {"uid", "key", "keysecondary", "content", "comment", "constant", "selective"},
    "kobold-lite": _SIMPLE - {"order"} | {"keysecondary", "constant", "selective", "probability", "group"},
}
#: Fields only SillyTavern's editor uses; not reported as lost.
UI_ONLY = {"addMemo", "displayIndex"}
#: Values of an otherwise lost field that a target can still hold.
CARRIED_VALUES: dict[tuple[str, str], tuple[Any, ...]] = {("kobold-lite", "selectiveLogic"): (0, 2)}


class Loaded(BaseModel):
    """A file lorescan has read: its format, books, chat and character, and warnings."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

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
        if png.is_png(data):
            loaded = _load_png(data, opts)
        elif charx.zip_offset(data) == 0 or (charx.zip_offset(data) > 0 and charx.has_zip_end(data)):
            loaded = _load_zip(data, opts)
        elif data.startswith(b"\xff\xd8\xff") or b"\0" in data[:1024]:
            raise FormatError("binary file of an unsupported format (not a PNG card, CHARX or text)", file=file)
        else:
            loaded = _load_text(decode_text(data, file), opts)
    except LorescanError as exc:
        raise exc.with_file(file) from None
    except RecursionError:
        raise FormatError("nested too deeply", file=file) from None
    except Exception as exc:
        exc.add_note(f"while reading {file}")  # the CLI's report of a bug names the file
        raise
    loaded.source = data
    digest = hashlib.sha256(data).hexdigest()
    for i, book in enumerate(loaded.books):
        book._content_hash = f"{digest}:{i}:{int(v3_decorators)}"
    return loaded


def _load_png(data: bytes, o: dict[str, Any]) -> Loaded:
    if png.has_text(data, "naidata") and not (png.has_text(data, "chara") or png.has_text(data, "ccv3")):
        raw = png.read_naidata(data, o["file"])
        if not novelai.is_lorebook(raw):
            raise FormatError("tEXt 'naidata' does not hold a NovelAI lorebook", file=o["file"])
        book, notes = novelai.read_lorebook(raw, o["stem"], o["file"])
        return Loaded(format="novelai-png", path=o["file"], books=[book], warnings=notes, raw=raw)
    card, keyword, notes = png.read_card_png(data, o["file"])
    loaded = _card(card, "png", o, avatar=Path(o["file"]).name, raw=card)
    loaded.warnings = notes + loaded.warnings
    loaded.image = data
    return loaded


def _load_zip(data: bytes, o: dict[str, Any]) -> Loaded:
    names = charx.member_names(data, o["file"])
    if charx.CARD_MEMBER not in names:
        if "manifest.json" in names and any(n.startswith("characters/") for n in names):
            raise FormatError("Backyard AI archive (.byaf) is not supported; export the character as a "
                              "PNG or JSON card", file=o["file"])
        raise FormatError("ZIP archive without card.json: not a CHARX card", file=o["file"])
    card, icon, notes = charx.read_charx(data, o["file"])
    loaded = _card(card, "charx", o, avatar=None, raw=card)
    loaded.warnings = notes + loaded.warnings
    loaded.image = icon
    return loaded


def _card(card: Any, fmt: str, o: dict[str, Any], avatar: str | None, raw: Any) -> Loaded:
    info, books, notes = cards.read_card(card, o["file"], avatar=avatar, v3_decorators=o["v3"])
    if o["name"] is not None:
        for book in books:
            book.name = o["name"]
    return Loaded(format=fmt, path=o["file"], books=books, character=info, warnings=notes, raw=raw)


def _load_text(text: str, o: dict[str, Any]) -> Loaded:
    file = o["file"]
    suffix = Path(file).suffix.lower()
    if suffix in (".yaml", ".yml"):
        return _load_yaml(text, o)
    stripped = text.strip()
    if not stripped:
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
        if stripped[0] in "{[":
            raise error from None
        if chats.looks_like_transcript(text):
            chat, notes = chats.read_transcript(text, file)
            return Loaded(format="transcript", path=file, chat=chat, warnings=notes,
                          raw=[m.model_dump() for m in chat.messages])
        return _load_yaml(text, o, guess=True)
    return _load_json(value, o)


def _load_jsonl(lines: list[tuple[int, str]], o: dict[str, Any]) -> Loaded:
    file = o["file"]
    values = [parse_json(line, file, what=f"line {n}: ") for n, line in lines]
    if chats.is_st_header(values[0]) or chats.is_st_message(values[0]):
        chat, notes = chats.read_st_chat(values, file)
        return Loaded(format="st-chat", path=file, chat=chat, warnings=notes, raw=values)
    if all(isinstance(v, dict) and isinstance(v.get("messages"), list) for v in values):
        chat = chats.read_roles(values[0]["messages"], "openai-jsonl", file)
        notes = [f"{len(values)} conversations; the first is used"] if len(values) > 1 else []
        return Loaded(format="openai-jsonl", path=file, chat=chat, warnings=notes, raw=values)
    if chats.is_role_list(values):
        chat = chats.read_roles(values, "openai-jsonl", file)
        return Loaded(format="openai-jsonl", path=file, chat=chat, raw=values)
    raise FormatError("JSON lines that are neither a SillyTavern chat nor OpenAI messages", file=file)


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
    return Loaded(format="glm", path=file, chat=chat, warnings=notes, raw=value, yaml=True)


def _detect_json(value: Any) -> str:
    """The format of a parsed JSON document (see the module docstring for the order)."""
    if isinstance(value, dict):
        if cards.is_lorebook_v3(value):
            return "lorebook_v3"
        if "spec" in value:
            if cards.card_format(value):
                return cards.card_format(value) or ""
            raise FormatError(f"unknown spec {value.get('spec')!r}: not a character card or lorebook_v3")
        importers = [n for n, test in (("novelai", novelai.is_lorebook), ("agnai", agnai.is_memory_book),
                                       ("risu", risu.is_risu_lorebook)) if test(value)]
        if len(importers) > 1:
            raise FormatError(f"ambiguous: looks like {' and '.join(importers)} at once")
        if importers:
            return importers[0]
        if novelai.is_scenario(value):
            return "novelai-scenario"
        if kobold.is_united(value):
            return "kobold"
        if cards.is_character_book(value):
            return "charbook"
        if is_worldinfo(value):
            return "st"
        if chats.is_st_header(value) or chats.is_st_message(value):
            return "st-chat"
        if isinstance(value.get("messages"), list) and not chats.is_glm_roles(value["messages"]):
            return "openai"
        if chats.glm_items(value) is not None:
            return "glm"
        if kobold.is_lite(value):
            return "kobold-lite"
        if cards.card_format(value):
            return cards.card_format(value) or ""
        if isinstance(value.get("role"), str) and "content" in value:
            return "openai-jsonl"
        raise FormatError("JSON object of an unknown format (no entries, spec, kind, type or messages)")
    if isinstance(value, list):
        if not value:
            raise FormatError("empty JSON array: nothing to read")
        if chats.is_tavernai(value):
            return "tavernai-chat"
        if chats.is_role_list(value):
            return "glm" if chats.is_glm_roles(value) else "openai"
        if chats.is_pairs(value):
            return "glm"
        if kobold.is_lite(value):
            return "kobold-lite"
        raise FormatError("JSON array of an unknown format (not messages or KoboldAI Lite world info)")
    raise FormatError(f"JSON {type_name(value)} is not a lorebook, card or chat")


def _load_json(value: Any, o: dict[str, Any]) -> Loaded:
    file, stem = o["file"], o["stem"]
    fmt = _detect_json(value)
    readers: dict[str, Callable[[], tuple[Lorebook, list[str]]]] = {
        "lorebook_v3": lambda: cards.read_lorebook_v3(value, stem, file, o["v3"]),
        "charbook": lambda: cards.read_character_book(
            value, o["name"] or (value.get("name") if isinstance(value.get("name"), str) else "") or stem,
            file, scope="global", v3_decorators=o["v3"]),
        "novelai": lambda: novelai.read_lorebook(value, stem, file),
        "novelai-scenario": lambda: novelai.read_scenario(value, stem, file),
        "agnai": lambda: agnai.read_memory_book(value, stem, file),
        "risu": lambda: risu.read_risu_lorebook(value, stem, file),
        "kobold": lambda: kobold.read_united(value, stem, file),
        "kobold-lite": lambda: kobold.read_lite(value, stem, file),
        "st": lambda: (read_worldinfo(value, stem, file), []),
    }
    if fmt in readers:
        book, notes = readers[fmt]()
        if o["name"] is not None:
            book.name = o["name"]
        if fmt == "lorebook_v3" or fmt == "charbook":
            notes = notes + [f"SillyTavern's world-info import cannot read {fmt}; converted as a card book"]
        if fmt == "st" and book.entries_was_list:
            notes.append("'entries' is an array; SillyTavern reads it as-is (entries without 'key' never match)")
        return Loaded(format=fmt, path=file, books=[book], warnings=notes, raw=value)
    if fmt in CARD_FORMATS:
        return _card(value, fmt, o, avatar=None, raw=value)
    if fmt == "st-chat":
        chat, notes = chats.read_st_chat([value], file)
        return Loaded(format=fmt, path=file, chat=chat, warnings=notes, raw=[value])
    if fmt == "openai-jsonl":
        return Loaded(format=fmt, path=file, chat=chats.read_roles([value], fmt, file), raw=[value])
    if fmt == "tavernai-chat":
        chat, notes = chats.read_tavernai(value, file)
    elif fmt == "openai":
        chat, notes = chats.read_roles(value["messages"] if isinstance(value, dict) else value, fmt, file), []
    else:
        chat, notes = chats.read_glm(value, file)
    return Loaded(format=fmt, path=file, chat=chat, warnings=notes, raw=value)


# ---------------------------------------------------------------- writing

def resolve_target(loaded: Loaded, to: str | None) -> str:
    """The format to write: ``to`` (aliases allowed; ``ccv3``/``ccv2`` of a lorebook mean
    ``lorebook_v3``/``charbook``, ``st`` of a chat means ``st-chat``), else the file's own."""
    if to is None:
        return loaded.format
    target = ALIASES.get(to.lower(), to.lower())
    if loaded.kind == "chat" and target == "st":
        target = "st-chat"
    if loaded.kind == "lorebook":
        target = {"ccv3": "lorebook_v3", "ccv2": "charbook"}.get(target, target)
    if target not in TARGETS and target != loaded.format:
        raise FormatError(f"unknown output format {to!r}; one of: {', '.join(TARGETS)}")
    return target


def render(loaded: Loaded, to: str | None = None) -> tuple[bytes, list[str]]:
    """The bytes of ``loaded`` written as ``to`` (default: its own format), and notes about what
    the target cannot hold. Own format, nothing changed: the source bytes themselves."""
    target = resolve_target(loaded, to)
    doc, write = _document(loaded, target)
    notes = [] if target in CHAT_FORMATS else _lossy(loaded, target)
    if target == loaded.format and loaded.source is not None and doc == loaded.raw:
        return loaded.source, notes
    return write(doc), notes


def document(loaded: Loaded, to: str | None = None) -> Any:
    """The document :func:`render` would serialise, rebuilt from the model (for a card PNG or
    CHARX: the card JSON; for JSONL: the list of lines)."""
    return _document(loaded, resolve_target(loaded, to))[0]


def _document(loaded: Loaded, target: str) -> tuple[Any, Callable[[Any], bytes]]:
    same = target == loaded.format
    if target in CHAT_FORMATS:
        return _chat_doc(loaded, target, same)
    if target in CARD_FORMATS:
        return _card_doc(loaded, target, same)
    return _book_doc(loaded, target, same)


def _json_writer(indent: int | None = 4) -> Callable[[Any], bytes]:
    return lambda doc: dump_json(doc, indent=indent).encode("utf-8")


def _one_book(loaded: Loaded, target: str) -> Lorebook:
    if not loaded.books:
        raise FormatError(f"holds no lorebook to write as {target}", file=loaded.path)
    if len(loaded.books) > 1:
        raise FormatError(f"holds {len(loaded.books)} lorebooks; {target} holds one", file=loaded.path)
    return loaded.books[0]


def _book_doc(loaded: Loaded, target: str, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    book = _one_book(loaded, target)
    original = loaded.raw if same else None
    if target in ("novelai-scenario", "novelai-png") and not same:
        raise FormatError(f"can only write {target} back to a {target} file", file=loaded.path)
    if target == "st":
        return worldinfo_to_json(book, cards.worldinfo_original_data(book)), _json_writer()
    if target == "lorebook_v3":
        return cards.lorebook_v3_json(book, original), _json_writer()
    if target == "charbook":
        return cards.character_book_json(book), _json_writer()
    if target == "novelai":
        return novelai.lorebook_json(book, original), _json_writer()
    if target == "novelai-scenario":
        return novelai.scenario_json(book, loaded.raw), _json_writer()
    if target == "novelai-png":
        image = loaded.source
        return novelai.lorebook_json(book, original), lambda doc: png.write_naidata_png(image, doc)
    if target == "agnai":
        return agnai.memory_book_json(book, original), _json_writer()
    if target == "risu":
        return risu.risu_json(book, original), _json_writer()
    if target == "kobold":
        return kobold.united_json(book, same), _json_writer()
    if target == "kobold-lite":
        return kobold.lite_json(book, original), _json_writer()
    raise FormatError(f"cannot write a lorebook as {target}", file=loaded.path)


def _card_doc(loaded: Loaded, target: str, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    if loaded.kind != "card" or not isinstance(loaded.raw, dict):
        raise FormatError(f"{target} needs a character card; this is a {loaded.format} {loaded.kind}",
                          file=loaded.path)
    card = cards.card_with_book(loaded.raw, loaded.books[0] if loaded.books else None)
    if target == "ccv1" and not same:
        raise FormatError("cannot write V1 cards; use ccv2 or ccv3", file=loaded.path)
    if target in ("ccv2", "ccv3") and not same:
        card = cards.card_as(card, int(target[-1]))
    if target == "png":
        image = loaded.image if loaded.format == "png" else None
        if loaded.format == "charx" and loaded.image and png.is_png(loaded.image):
            image = loaded.image
        return card, lambda doc: png.write_card_png(image, doc)
    if target == "charx":
        if same:
            source = loaded.source
            return card, lambda doc: charx.write_charx(doc, original=source)
        v3 = cards.card_as(card, 3)
        icon = None
        if loaded.format == "png" and loaded.image is not None:
            icon = png.replace_text(loaded.image, png.CARD_KEYWORDS, [])
            v3 = charx.with_icon_asset(v3)
        return v3, lambda doc: charx.write_charx(doc, icon=icon)
    return card, _json_writer()


def _chat_doc(loaded: Loaded, target: str, same: bool) -> tuple[Any, Callable[[Any], bytes]]:
    chat = loaded.chat
    if chat is None:
        raise FormatError(f"{target} is a chat format; this is a {loaded.format} {loaded.kind}",
                          file=loaded.path)
    original = loaded.raw if same else None
    if target == "st-chat":
        lines = _st_lines(chat, original)
        return lines, lambda doc: "\n".join(dump_json(x, indent=None) for x in doc).encode("utf-8")
    if target == "tavernai-chat":
        return [f"{m.name}: {m.mes}" for m in chat.messages], _json_writer()
    if target == "openai":
        return chats.openai_json(chat, original), _json_writer()
    if target == "openai-jsonl":
        body = chats.write_openai_jsonl(chat, original or [])
        lines = [parse_json(line, None) for line in body.decode("utf-8").split("\n") if line]
        return lines, lambda _doc: body
    if target == "glm":
        doc = chats.glm_json(chat, original)
        if same and loaded.yaml:
            return doc, _yaml_writer
        return doc, _json_writer()
    return [m.model_dump() for m in chat.messages], lambda _doc: chats.write_transcript(chat)


def _st_lines(chat: Chat, original: Any) -> list[Any]:
    body = chats.write_st_chat(chat, original)
    return [parse_json(line, None) for line in body.decode("utf-8").split("\n") if line]


def _yaml_writer(doc: Any) -> bytes:
    import yaml

    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False).encode("utf-8")


def _lossy(loaded: Loaded, target: str) -> list[str]:
    """Notes naming the entry fields a lossy target cannot hold, when some entry sets them."""
    carries = CARRIES.get(target)
    if carries is None or target == loaded.format:
        return []
    lost: dict[str, int] = {}
    split = 0
    for book in loaded.books:
        for entry in book.entries:
            if target in ("risu", "kobold-lite") and any(
                    "," in k or k != k.strip() for k in (entry.key or []) + (entry.keysecondary or [])):
                split += 1
            for field in entry.model_fields_set:
                if field in carries or field in UI_ONLY or field not in ENTRY_DEFAULTS and field != "characterFilter":
                    continue
                value = getattr(entry, field)
                if value in CARRIED_VALUES.get((target, field), ()):
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
        "format": loaded.format, "kind": loaded.kind, "description": FORMATS.get(loaded.format, ""),
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
