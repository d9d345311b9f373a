"""Compile lorebooks once: entries read into fast slots objects, decorators parsed, books ordered.

Everything here depends only on the books, so a :class:`Lore` is built once and reused for every
evaluation; what depends on names or settings (macro-substituted keys, automata, scan order) is
built on first use and cached inside it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from itertools import repeat
from operator import itemgetter
from os import PathLike
from typing import Any

from . import _construct, _js
from ._macros import may_change
from ._model import Entry, Lorebook, is_imported

KNOWN_DECORATORS = ("@@activate", "@@dont_activate")

MATCH_FIELDS = (
    ("matchPersonaDescription", "persona_description"),
    ("matchCharacterDescription", "character_description"),
    ("matchCharacterPersonality", "character_personality"),
    ("matchCharacterDepthPrompt", "character_depth_prompt"),
    ("matchScenario", "scenario"),
    ("matchCreatorNotes", "creator_notes"),
)


def parse_decorators(content: str) -> tuple[list[str], str]:
    """SillyTavern's ``parseDecorators``: leading ``@@`` lines become decorators.

    When every line is a decorator line the content is left as it was.
    """
    if not content.startswith("@@"):
        return [], content
    lines = content.split("\n")
    decorators: list[str] = []
    fallbacked = False
    new_content = content
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            if line.startswith("@@@") and not fallbacked:
                continue
            probe = line[1:] if line.startswith("@@@") else line
            if probe.startswith(KNOWN_DECORATORS):
                decorators.append(probe)
                fallbacked = False
            else:
                fallbacked = True
        else:
            new_content = "\n".join(lines[i:])
            break
    return decorators, new_content


class CompiledEntry:
    """One entry as the engine reads it: effective values with SillyTavern's JavaScript rules."""

    __slots__ = (
        "gid", "book", "world", "uid", "key", "entry", "content", "raw_content", "decorators",
        "order", "order_num", "position", "depth", "role", "disable", "constant", "selective",
        "selective_logic", "keys", "keys_secondary", "exclude_recursion", "prevent_recursion",
        "delay_until_recursion", "dur_level", "probability", "use_probability", "group",
        "group_names", "group_override", "group_weight", "scan_depth", "case_sensitive",
        "match_whole_words", "use_group_scoring", "sticky", "cooldown", "delay", "char_names",
        "char_tags", "char_exclude", "triggers", "ignore_budget", "outlet_name", "match_fields", "bucket",
        "timed_kinds", "rolls", "macros",
        "_hash",
    )

    def __init__(self, gid: int, book: str, entry: Entry) -> None:
        # Only what ordering and key indexing need is read now; the rest on first use (see
        # _UnfilledEntry), so compiling a huge book costs little more than reading it.
        self.gid = gid
        self.book = book
        self.entry = entry
        # pydantic keeps field values in __dict__; one C-level read of them all is the fast path
        (raw, order, constant, self.keys, self.keys_secondary, self.case_sensitive, self.match_whole_words,
         self.scan_depth, self.delay, dur) = _COMPILE_FIELDS(entry.__dict__)
        if type(raw) is not str:
            raw = ""
        self.raw_content = raw
        if raw.startswith("@@"):
            self.decorators, self.content = parse_decorators(raw)
        else:
            self.decorators, self.content = _NO_DECORATORS, raw
        self.order = order
        # the number JavaScript sorts by; an exact int as it is (no float object per entry)
        self.order_num = order if type(order) is int and -_EXACT <= order <= _EXACT else _js.sort_key_number(order)
        self.constant = _truthy(constant)
        if dur is False or dur is None or (dur == 0 and type(dur) is int):   # the usual values, fast
            self.delay_until_recursion = False
            self.dur_level: float | str = 0.0
        else:
            self.delay_until_recursion = _truthy(dur)
            #: the level as SillyTavern compares it: a number, or a string (strings compare as strings)
            self.dur_level = (1.0 if dur is True else dur if isinstance(dur, str) else _js.to_number(dur)) \
                if self.delay_until_recursion else 0.0

    def _identify(self) -> None:
        entry = self.entry
        extra = entry.model_extra
        world = extra.get("world") if extra else None
        self.world = world if isinstance(world, str) else self.book
        uid = entry.__dict__["uid"]
        self.uid = uid
        if type(uid) is int and -_EXACT <= uid <= _EXACT:
            self.key = f"{self.world}.{uid}"
        else:       # a uid given as null is "null"; None stands for a missing one ("undefined")
            given_null = uid is None and "uid" in entry.model_fields_set
            self.key = f"{self.world}.{'null' if given_null else _js.js_string(uid)}"
        self._hash: int | None = None

    def _fill(self) -> None:
        """Read the remaining fields (and the identity ones) and become a plain CompiledEntry."""
        try:
            _KEY_SLOT.__get__(self)  # type: ignore[attr-defined]
        except AttributeError:
            self._identify()
        entry = self.entry
        d = entry.__dict__
        t = _truthy
        self.position = d["position"]
        self.bucket = _bucket(self.position)
        self.depth = d["depth"]
        self.role = d["role"]
        disable = d["disable"]
        self.disable = disable is True or (disable is not False and _js.loose_eq_true(disable))
        self.selective = t(d["selective"])
        self.selective_logic = d["selectiveLogic"]
        self.exclude_recursion = t(d["excludeRecursion"])
        self.prevent_recursion = t(d["preventRecursion"])
        p = self.probability = d["probability"]
        self.use_probability = t(d["useProbability"])
        #: whether activating it draws a probability roll (not at exactly 100, nor when sticky)
        self.rolls = self.use_probability and not (isinstance(p, (int, float)) and not isinstance(p, bool)
                                                   and p == 100)
        #: whether its content may hold a macro (else substitution leaves it as it is)
        self.macros = may_change(self.content)
        grp = d["group"]
        self.group = grp
        self.group_names = _split_groups(grp) if grp and isinstance(grp, str) else _NO_GROUPS
        self.group_override = t(d["groupOverride"])
        gw = d["groupWeight"]
        self.group_weight = 100 if gw is None else gw
        self.use_group_scoring = d["useGroupScoring"]
        self.sticky = d["sticky"]
        self.cooldown = d["cooldown"]
        self.timed_kinds = tuple(k for k, v in (("sticky", self.sticky), ("cooldown", self.cooldown)) if t(v))
        cf = d["characterFilter"]
        if cf is None:
            self.char_names, self.char_tags, self.char_exclude = _NO_GROUPS, _NO_GROUPS, False
        else:
            self.char_names = list(cf.names) if cf.names else _NO_GROUPS
            self.char_tags = list(cf.tags) if cf.tags else _NO_GROUPS
            self.char_exclude = t(cf.isExclude)
        trig = d["triggers"]
        self.triggers = list(trig) if trig and isinstance(trig, list) else _NO_GROUPS
        self.ignore_budget = t(d["ignoreBudget"])
        ol = d["outletName"]
        # an outlet's name is a property key: String(outletName), when it is truthy
        self.outlet_name = _js.js_string(ol) if t(ol) else ""
        self.match_fields = tuple(name for flag, name in MATCH_FIELDS if t(d[flag])) \
            if entry.model_fields_set.intersection(_MATCH_FLAGS) else ()
        self.__class__ = CompiledEntry

    @property
    def st_hash(self) -> int:
        """SillyTavern's timed-effect hash of this entry (cyrb53 of its loaded JSON), computed lazily
        (``LEGACY_IMPORT``: an imported entry, hashed as SillyTavern 1.12.6 stored it)."""
        h = self._hash
        if h is None or h == LEGACY_IMPORT:
            h = self._hash = cyrb53(_st_entry_json(self, legacy_import=h == LEGACY_IMPORT))
        return h

    def __repr__(self) -> str:
        return f"<CompiledEntry {self.key}>"


class ForcedEntry(CompiledEntry):
    """An entry as a forced activation supplied it: the stored entry with the caller's fields.

    It keeps the stored entry's ``gid``, identity and timed-effect hash; its ``content`` is taken
    as given (SillyTavern parses decorators only when it loads entries, not from this object).
    """

    __slots__ = ()


def overridden(ce: CompiledEntry, fields: dict[str, Any]) -> ForcedEntry:
    """``ce`` with the entry ``fields`` a forced activation replaced, for one evaluation."""
    merged = Entry.model_validate({**ce.entry.model_dump(), **fields})
    out = _UnfilledEntry(ce.gid, ce.book, merged)
    if "content" in fields:
        out.raw_content = out.content = fields["content"] if isinstance(fields["content"], str) else ""
        out.decorators = _NO_DECORATORS
    out._fill()
    out._hash = ce.st_hash
    out.__class__ = ForcedEntry  # type: ignore[assignment]
    return out  # type: ignore[return-value]


#: what :meth:`CompiledEntry.__init__` reads, by JSON name
_COMPILE_FIELDS = itemgetter("content", "order", "constant", "key", "keysecondary", "caseSensitive",
                             "matchWholeWords", "scanDepth", "delay", "delayUntilRecursion")


class _UnfilledEntry(CompiledEntry):
    """A compiled entry whose other fields are not read yet. The first use of one of them fills
    them all and makes the object a plain :class:`CompiledEntry`: a class with ``__getattr__`` makes
    every attribute read slower (the interpreter's fast path is off for it), and the engine reads
    the entries it reaches often. The identity fields are read on their own: a lookup by
    ``"<book>.<uid>"`` reads every entry's key, and nothing else."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in _IDENTITY:
            self._identify()
            return object.__getattribute__(self, name)
        if name.startswith("__"):
            raise AttributeError(name)
        self._fill()
        return object.__getattribute__(self, name)


_KEY_SLOT = CompiledEntry.key   # type: ignore[misc]  # the slot's descriptor: reads it without __getattr__
_EXACT = 2**53   # ints up to this size are exact as JavaScript numbers
_GROUP_SPLIT = re.compile(r",[" + re.escape(_js.JS_WHITESPACE) + r"]*")
_NO_DECORATORS: list[str] = []
_IDENTITY = frozenset(("world", "uid", "key", "_hash"))
_NO_GROUPS: list[Any] = []
_MATCH_FLAGS = frozenset(flag for flag, _ in MATCH_FIELDS)


def _bucket(value: Any) -> int | None:
    """The position number when ``position`` is strictly a number (``"0"`` is never emitted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (math.inf, -math.inf):   # NaN or infinite: matches no position
        return None
    return int(value) if value == int(value) else None


def _truthy(v: Any) -> bool:
    """JavaScript truthiness (inlined form of :func:`lorescan._js.truthy` for the compile loop)."""
    if v is True:
        return True
    if v is None or v is False:
        return False
    return _js.truthy(v)


def _split_groups(group: str) -> list[str]:
    """``group.split(/,\\s*/).filter(x => x)``: whitespace after a comma is dropped, nowhere else."""
    return [g for g in _GROUP_SPLIT.split(group) if g]


#: ``CompiledEntry._hash`` of an imported entry under 1.12.6, before its hash is first read
LEGACY_IMPORT = -1
#: the fields SillyTavern 1.18's importers write and 1.12.6's did not (its template lacked them);
#: without them an imported entry's JSON is, key for key, what 1.12.6 stored
_NEWER_IMPORT_FIELDS = frozenset((
    "ignoreBudget", "matchPersonaDescription", "matchCharacterDescription", "matchCharacterPersonality",
    "matchCharacterDepthPrompt", "matchScenario", "matchCreatorNotes", "outletName", "triggers", "extensions"))


def hash_imports_as_1_12(entries: Iterable[CompiledEntry]) -> None:
    """Make the imported entries among ``entries`` (see :func:`~lorescan._model.is_imported`)
    hash as SillyTavern 1.12.6's importers stored them, for a 1.12.6 evaluation."""
    for ce in entries:
        if is_imported(ce.entry):
            try:
                _KEY_SLOT.__get__(ce)  # type: ignore[attr-defined]
            except AttributeError:      # identified first: that sets the hash slot too
                ce._identify()
            ce._hash = LEGACY_IMPORT


def _st_entry_json(ce: CompiledEntry, legacy_import: bool = False) -> str:
    """``JSON.stringify`` of the entry as SillyTavern loads it: ``{uid, world, ...rest, decorators}``
    (``legacy_import``: an imported entry as SillyTavern 1.12.6's importers stored it)."""
    data = ce.entry.to_json(mode="python")
    obj: dict[str, Any] = {}
    if "uid" in data:
        obj["uid"] = data["uid"]
    obj["world"] = ce.book          # the book it was loaded from (not a "world" field)
    for k, v in data.items():
        if k != "uid" and not (legacy_import and k in _NEWER_IMPORT_FIELDS):
            obj[k] = v
    obj["decorators"] = ce.decorators
    obj["content"] = ce.content
    return _js.json_stringify(obj)


def cyrb53(text: str, seed: int = 0) -> int:
    """SillyTavern's ``getStringHash`` (cyrb53 over UTF-16 code units; a lone surrogate is one)."""
    m32 = 0xFFFFFFFF
    h1 = (0xDEADBEEF ^ seed) & m32
    h2 = (0x41C6CE57 ^ seed) & m32
    data = text.encode("utf-16-le", "surrogatepass")
    for i in range(0, len(data), 2):
        ch = data[i] | (data[i + 1] << 8)
        h1 = ((h1 ^ ch) * 2654435761) & m32
        h2 = ((h2 ^ ch) * 1597334677) & m32
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & m32) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & m32)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & m32) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & m32)
    return 4294967296 * (2097151 & h2) + (h1 & m32)


def lorebooks(books: Any) -> list[Lorebook]:
    """``books`` as a list, each checked to be a :class:`Lorebook`: a TypeError saying what to pass
    for a lone book, a path, a loaded file or a dict (the engine would fail deep inside on them)."""
    if isinstance(books, Lorebook):
        raise TypeError("compile() takes a list of lorebooks: compile([book])")
    if isinstance(books, (str, bytes, PathLike)):
        raise TypeError("compile() takes lorebooks, not a path: compile(lorescan.load(path).books)")
    books = list(books)
    for book in books:
        if not isinstance(book, Lorebook):
            hint = ": a loaded file holds its books in .books" if hasattr(book, "books") else \
                ": make one with Lorebook.model_validate(data)" if isinstance(book, dict) else ""
            raise TypeError(f"compile() takes Lorebook objects, not {type(book).__name__}{hint}")
    return books


def compile_books(books: Iterable[Lorebook]) -> list[tuple[Lorebook, list[CompiledEntry]]]:
    """Each book with its entries compiled in reading order (gids numbered across all books)."""
    out: list[tuple[Lorebook, list[CompiledEntry]]] = []
    gid = 0
    for book in books:
        entries = book.scan_order()
        native = _construct.native
        if native is not None and type(entries) is list:    # the usual entries in C, the others here
            compiled = native.compiled_entries(_UnfilledEntry, gid, book.name, entries, _NO_DECORATORS,
                                               _UnfilledEntry)
        else:
            compiled = list(map(_UnfilledEntry, range(gid, gid + len(entries)), repeat(book.name), entries))
        gid += len(compiled)
        out.append((book, compiled))
    return out
