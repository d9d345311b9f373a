"""Compile lorebooks once: entries read into fast slots objects, decorators parsed, books ordered.

Everything here depends only on the books, so a :class:`Lore` is built once and reused for every
evaluation; what depends on names or settings (macro-substituted keys, automata, scan order) is
built on first use and cached inside it.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from . import _js
from .model import Entry, Lorebook

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
        "char_tags", "char_exclude", "triggers", "ignore_budget", "outlet_name", "match_fields",
        "_hash", "_st_hash_source",
    )

    def __init__(self, gid: int, book: Lorebook, entry: Entry) -> None:
        g = entry.get
        self.gid = gid
        self.book = book.name
        world = g("world")
        self.world = world if isinstance(world, str) else book.name
        self.uid = entry.uid
        self.key = f"{self.world}.{_js.js_string(entry.uid)}"
        self.entry = entry
        raw = entry.content if isinstance(entry.content, str) else ""
        self.raw_content = raw
        self.decorators, self.content = parse_decorators(raw)
        self.order = entry.order
        self.order_num = _js.sort_key_number(entry.order)
        self.position = entry.position
        self.depth = entry.depth
        self.role = entry.role
        self.disable = _js.loose_eq_true(entry.disable)
        self.constant = _js.truthy(entry.constant)
        self.selective = _js.truthy(entry.selective)
        self.selective_logic = entry.selectiveLogic
        self.keys = entry.key
        self.keys_secondary = entry.keysecondary
        self.exclude_recursion = _js.truthy(entry.excludeRecursion)
        self.prevent_recursion = _js.truthy(entry.preventRecursion)
        dur = entry.delayUntilRecursion
        self.delay_until_recursion = _js.truthy(dur)
        self.dur_level = (1.0 if dur is True else _js.to_number(dur)) if self.delay_until_recursion else 0.0
        self.probability = entry.probability
        self.use_probability = _js.truthy(entry.useProbability)
        grp = entry.group
        self.group = grp
        self.group_names = _split_groups(grp) if _js.truthy(grp) and isinstance(grp, str) else []
        self.group_override = _js.truthy(entry.groupOverride)
        self.group_weight = _js.nullish(entry.groupWeight, 100)
        self.scan_depth = entry.scanDepth
        self.case_sensitive = entry.caseSensitive
        self.match_whole_words = entry.matchWholeWords
        self.use_group_scoring = entry.useGroupScoring
        self.sticky = entry.sticky
        self.cooldown = entry.cooldown
        self.delay = entry.delay
        cf = entry.characterFilter
        self.char_names = list(cf.names) if cf is not None and cf.names else []
        self.char_tags = list(cf.tags) if cf is not None and cf.tags else []
        self.char_exclude = _js.truthy(cf.isExclude) if cf is not None else False
        self.triggers = list(entry.triggers) if isinstance(entry.triggers, list) else []
        self.ignore_budget = _js.truthy(entry.ignoreBudget)
        self.outlet_name = entry.outletName if isinstance(entry.outletName, str) else ""
        self.match_fields = tuple(name for flag, name in MATCH_FIELDS if _js.truthy(getattr(entry, flag)))
        self._hash: int | None = None
        self._st_hash_source = book.name

    @property
    def st_hash(self) -> int:
        """SillyTavern's timed-effect hash of this entry (cyrb53 of its loaded JSON), computed lazily."""
        if self._hash is None:
            self._hash = cyrb53(_st_entry_json(self))
        return self._hash

    def __repr__(self) -> str:
        return f"<CompiledEntry {self.key}>"


def _split_groups(group: str) -> list[str]:
    """``group.split(/,\\s*/).filter(x => x)``: whitespace after a comma is dropped, nowhere else."""
    import re

    return [g for g in re.split(r",[" + _js.JS_WHITESPACE + r"]*", group) if g]


def _js_json(value: Any) -> Any:
    if isinstance(value, float) and value == value and value == int(value) and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_json(v) for v in value]
    return value


def _st_entry_json(ce: CompiledEntry) -> str:
    """``JSON.stringify`` of the entry as SillyTavern loads it: ``{uid, world, ...rest, decorators}``."""
    data = ce.entry.to_json()
    obj: dict[str, Any] = {}
    if "uid" in data:
        obj["uid"] = data["uid"]
    obj["world"] = ce._st_hash_source
    for k, v in data.items():
        if k != "uid":
            obj[k] = v
    obj["decorators"] = ce.decorators
    obj["content"] = ce.content
    return json.dumps(_js_json(obj), ensure_ascii=False, separators=(",", ":"))


def cyrb53(text: str, seed: int = 0) -> int:
    """SillyTavern's ``getStringHash`` (cyrb53 over UTF-16 code units)."""
    m32 = 0xFFFFFFFF
    h1 = (0xDEADBEEF ^ seed) & m32
    h2 = (0x41C6CE57 ^ seed) & m32
    data = text.encode("utf-16-le")
    for i in range(0, len(data), 2):
        ch = data[i] | (data[i + 1] << 8)
        h1 = ((h1 ^ ch) * 2654435761) & m32
        h2 = ((h2 ^ ch) * 1597334677) & m32
    h1 = (((h1 ^ (h1 >> 16)) * 2246822507) & m32) ^ (((h2 ^ (h2 >> 13)) * 3266489909) & m32)
    h2 = (((h2 ^ (h2 >> 16)) * 2246822507) & m32) ^ (((h1 ^ (h1 >> 13)) * 3266489909) & m32)
    return 4294967296 * (2097151 & h2) + (h1 & m32)


def compile_books(books: Iterable[Lorebook]) -> list[tuple[Lorebook, list[CompiledEntry]]]:
    """Each book with its entries compiled in reading order (gids numbered across all books)."""
    out: list[tuple[Lorebook, list[CompiledEntry]]] = []
    gid = 0
    for book in books:
        compiled = []
        for entry in book.scan_order():
            compiled.append(CompiledEntry(gid, book, entry))
            gid += 1
        out.append((book, compiled))
    return out
