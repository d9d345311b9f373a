"""The format registry: every lorebook, card and chat format lorescan reads or writes, declared once.

A format is one :class:`Format`: its name and description, its kind (``book``, ``card`` or
``chat``), how it is recognised (:class:`Detector`\\ s: a shape of input and a priority), how it
is read and written, its ``--to`` aliases and the entry fields it can hold. Each family module
(``worldinfo.py``, ``cards.py``, ``novelai.py`` …) declares its formats in a module-level
``FORMATS`` tuple, next to their readers and writers. :mod:`lorescan._load`, ``convert``, ``info``
and the command line only iterate the registry; none of them names a format.

**Where a new format goes.** Into its family's module: a ``Format`` in that module's ``FORMATS``,
with its detectors, reader and writer, plus a test that loads a sample and writes it back (and
its place in the detection order pinned by ``tests/test_formats_registry.py``). A new family is
a new module here, named in :data:`FAMILIES`. A format outside lorescan is a ``Format``, or a
sequence of them, named by an entry point in the ``lorescan.formats`` group; the group is read
once, the first time a format is looked up.

**Detection.** :func:`lorescan.load` looks at a file in stages and, at each, asks the detectors
of one shape, lowest priority first; the first that claims the input decides its format:

- ``bytes``: the raw file (PNG and ZIP signatures); other binary files are refused;
- ``object`` / ``array``: a JSON document that is an object / a non-empty array;
- ``lines``: JSON lines (the file is not one JSON document, but its first line is an object);
- ``text``: text that is none of those (and does not start with ``{`` or ``[``).

Detectors with equal priorities are tested together, and an input that more than one of them
claims is ambiguous (an error); a detector may also raise :class:`~lorescan.FormatError` to
refuse an input outright. Text that no detector claims, and ``.yaml``/``.yml`` files, are read
as YAML by :mod:`lorescan._load` (GLM chat histories are the only YAML format).

**Listing.** :func:`formats` lists books, then cards, then chats, each in declaration order
(:data:`FAMILIES`, then each module's ``FORMATS``, then plugins): the order of ``--to`` targets in
``lorescan convert --help`` and its error messages.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .._errors import FormatError, LorescanError

if TYPE_CHECKING:
    from .._load import Loaded
    from .._model import Lorebook
    from .cards import CardInfo
    from .chats import Chat

Kind = Literal["book", "card", "chat"]
Shape = Literal["bytes", "object", "array", "lines", "text"]
KINDS: tuple[Kind, ...] = ("book", "card", "chat")
SHAPES: tuple[Shape, ...] = ("bytes", "object", "array", "lines", "text")
#: The built-in family modules (``lorescan/_formats/<name>.py``), in declaration order.
FAMILIES = ("worldinfo", "cards", "novelai", "agnai", "risu", "kobold", "png", "charx", "chats")
ENTRY_POINT_GROUP = "lorescan.formats"


@dataclass(frozen=True)
class Detector:
    """One test that recognises a format: ``test(input) -> bool`` on inputs of one ``shape``
    (bytes, a parsed JSON object or array, the list of parsed JSON lines, or text); lower
    ``priority`` runs first."""

    shape: Shape
    priority: int
    test: Callable[[Any], bool]


@dataclass(slots=True)
class ReadContext:
    """What a reader gets besides the input: the file's name for messages, the book name to use
    (``stem``: ``--name``, else the file name without its extension), ``--name`` as given, the
    V3-decorator switch, and the shape its detector matched."""

    file: str
    stem: str
    name: str | None
    v3_decorators: bool
    shape: Shape


@dataclass(slots=True)
class Reading:
    """What a reader found: books, chat, character card and warnings; ``raw`` is the parsed
    document a writer in the same format starts from (``image``: a card's picture)."""

    books: list[Lorebook] = field(default_factory=list)
    chat: Chat | None = None
    character: CardInfo | None = None
    warnings: list[str] = field(default_factory=list)
    raw: Any = None
    image: bytes | None = None


#: ``read(input, context)``: the input is what the matched detector tested.
Reader = Callable[[Any, ReadContext], Reading]
#: ``write(loaded, same_format) -> (document, serialise)``. The loader has checked the kind first:
#: a book format gets a file holding exactly one book, a card format a card, a chat format a chat.
Writer = Callable[["Loaded", bool], "tuple[Any, Callable[[Any], bytes]]"]


@dataclass(frozen=True)
class Format:
    """One file format.

    ``detect``: the detectors that recognise it. ``read(input, context) -> Reading``: the input is
    what the matched detector tested (bytes, a JSON object or array, a list of JSON lines, text).
    ``write(loaded, same_format) -> (document, serialise)``: ``loaded`` is what :func:`lorescan.load`
    returned (``books``, ``chat``, ``character``, ``raw``, ``source``, ``image``), already checked to
    hold one book, a card or a chat as the kind needs; ``serialise(document)`` gives the bytes.
    ``target``: a ``--to`` target when it has a writer (else it is only ever written back to a
    file of its own format). ``aliases``: other ``--to`` names for it; ``kind_aliases``: names of other
    formats that mean this one when the file being written is of this format's kind (``ccv3``
    for a lorebook means ``lorebook_v3``). ``carries``: the entry fields it can hold (``None``:
    every field, or not a lorebook format); ``carried_values``: values of other fields it still
    holds; ``comma_keys``: keys are one comma-separated string (keys with commas or outer spaces
    read back split)."""

    name: str
    description: str
    kind: Kind
    detect: tuple[Detector, ...]
    read: Reader
    write: Writer | None = None
    target: bool = True
    aliases: tuple[str, ...] = ()
    kind_aliases: tuple[str, ...] = ()
    carries: frozenset[str] | None = None
    carried_values: Mapping[str, tuple[Any, ...]] = field(default_factory=dict, hash=False)
    comma_keys: bool = False

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.lower():
            raise ValueError(f"format name {self.name!r} must be lower-case and not empty")
        if self.kind not in KINDS:
            raise ValueError(f"format {self.name!r}: kind {self.kind!r} is not one of {', '.join(KINDS)}")
        for detector in self.detect:
            if detector.shape not in SHAPES:
                raise ValueError(f"format {self.name!r}: detector shape {detector.shape!r} is not one of "
                                 f"{', '.join(SHAPES)}")


class Registry:
    """The formats in listing order, with their names, aliases and detectors indexed."""

    def __init__(self, declared: Iterable[Format]) -> None:
        declared = list(declared)
        self.formats = tuple(sorted(declared, key=lambda f: KINDS.index(f.kind)))
        self.by_name: dict[str, Format] = {}
        self.aliases: dict[str, str] = {}
        self.kind_aliases: dict[tuple[Kind, str], str] = {}
        for fmt in declared:
            self._add_names(fmt)
        self.targets = tuple(f.name for f in self.formats if f.target and f.write is not None)
        #: Per shape: groups of equal priority, in order; each group's (format, test) pairs.
        self.groups: dict[Shape, list[list[tuple[Format, Callable[[Any], bool]]]]] = {}
        detectors = sorted(((d, f) for f in declared for d in f.detect), key=lambda df: df[0].priority)
        for shape in SHAPES:
            groups: list[list[tuple[Format, Callable[[Any], bool]]]] = []
            last: int | None = None
            for detector, fmt in detectors:
                if detector.shape != shape:
                    continue
                if detector.priority != last:
                    groups.append([])
                    last = detector.priority
                groups[-1].append((fmt, detector.test))
            self.groups[shape] = groups

    def _add_names(self, fmt: Format) -> None:
        if fmt.name in self.by_name or fmt.name in self.aliases:
            raise ValueError(f"format name {fmt.name!r} is declared twice")
        self.by_name[fmt.name] = fmt
        for alias in fmt.aliases:
            if alias in self.by_name or alias in self.aliases:
                raise ValueError(f"format {fmt.name!r}: alias {alias!r} is taken")
            self.aliases[alias] = fmt.name
        for alias in fmt.kind_aliases:
            self.kind_aliases[(fmt.kind, alias)] = fmt.name

    def detect(self, shape: Shape, value: Any) -> Format | None:
        for group in self.groups[shape]:
            if len(group) == 1:
                fmt, test = group[0]
                if test(value):
                    return fmt
                continue
            hits = [fmt for fmt, test in group if test(value)]
            if len(hits) > 1:
                raise FormatError(f"ambiguous: looks like {' and '.join(f.name for f in hits)} at once")
            if hits:
                return hits[0]
        return None


def builtin_formats() -> list[Format]:
    """The formats the family modules declare, in :data:`FAMILIES` order."""
    out: list[Format] = []
    for family in FAMILIES:
        out += importlib.import_module(f"lorescan._formats.{family}").FORMATS
    return out


def plugin_formats() -> list[Format]:
    """The formats named by entry points in the ``lorescan.formats`` group."""
    if declares_group(ENTRY_POINT_GROUP) is False:
        return []
    import importlib.metadata

    out: list[Format] = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        where = f"format plugin {ep.name!r} ({ep.value})"
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin is named, in one line
            raise LorescanError(f"{where} failed to load: {type(exc).__name__}: {exc}") from None
        found = [obj] if isinstance(obj, Format) else list(obj) if isinstance(obj, (list, tuple)) else None
        if found is None or not all(isinstance(f, Format) for f in found):
            raise LorescanError(f"{where} is not a lorescan Format or a list of them")
        out += found
    return out


def declares_group(group: str) -> bool | None:
    """Whether an installed distribution may declare entry points in ``group``: a look at the
    ``entry_points.txt`` files ``importlib.metadata`` would read, without importing it (about
    20 ms of a short command). None when it cannot tell (a zip on ``sys.path``, a finder of
    distributions other than the standard one); then the full lookup runs."""
    if not all(_reads_sys_path(f) for f in sys.meta_path if getattr(f, "find_distributions", None) is not None):
        return None
    header = f"[{group}]"
    for root in sys.path:
        try:
            names = os.listdir(root or ".")
        except NotADirectoryError:
            return None
        except OSError:
            if os.path.isfile(root):
                return None
            continue
        for name in names:
            if name.endswith((".dist-info", ".egg-info")):
                where = os.path.join(root or ".", name, "entry_points.txt")
            elif name.endswith(".egg"):
                where = os.path.join(root or ".", name, "EGG-INFO", "entry_points.txt")
            else:
                continue
            try:
                with open(where, encoding="utf-8", errors="replace") as f:
                    if any(line.strip() == header for line in f):
                        return True
            except NotADirectoryError:
                if name.endswith(".egg"):     # a zipped egg: only the full lookup reads it
                    return None
            except OSError:
                continue
    return False


def _reads_sys_path(finder: object) -> bool:
    """Whether a finder of distributions finds them where :func:`declares_group` looks: the
    standard one, or the ``importlib_metadata`` backport's (which some libraries install)."""
    import importlib.machinery

    kind = finder if isinstance(finder, type) else type(finder)
    return finder is importlib.machinery.PathFinder or \
        (kind.__module__, kind.__name__) == ("importlib_metadata", "MetadataPathFinder")


@functools.cache
def registry() -> Registry:
    """The registry: built-in formats and plugins, read once (:func:`reset` forgets it)."""
    builtin = builtin_formats()
    plugins = plugin_formats()
    try:
        return Registry(builtin + plugins)
    except ValueError as exc:
        raise LorescanError(f"format plugins: {exc}") from None


def reset() -> None:
    """Forget the registry; the next lookup reads the family modules and plugins again."""
    registry.cache_clear()


def formats() -> tuple[Format, ...]:
    """Every format, in listing order (books, cards, chats)."""
    return registry().formats


def get(name: str) -> Format:
    """The format named ``name`` (a registered name, not an alias)."""
    return registry().by_name[name]


def describe(name: str) -> str:
    """A format's description ("" for an unknown name)."""
    fmt = registry().by_name.get(name)
    return fmt.description if fmt is not None else ""


def targets() -> tuple[str, ...]:
    """The ``--to`` targets, in listing order."""
    return registry().targets


def resolve(name: str, kind: Kind) -> str:
    """The format a ``--to`` name means for a file of ``kind`` (aliases, then kind aliases)."""
    reg = registry()
    name = reg.aliases.get(name, name)
    return reg.kind_aliases.get((kind, name), name)


def detect(shape: Shape, value: Any) -> Format | None:
    """The format whose detector of ``shape`` claims ``value`` first, or None."""
    return registry().detect(shape, value)


def detection_order(shape: Shape) -> list[tuple[str, ...]]:
    """The format names ``shape``'s detectors test, in order; a tuple holds names tested together."""
    return [tuple(fmt.name for fmt, _ in group) for group in registry().groups[shape]]
