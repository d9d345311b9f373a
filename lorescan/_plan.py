"""The plan of an evaluation: which books take part, and the order their entries are scanned in.

SillyTavern sorts the chat book first, then the persona book, then the global and character books
by the character strategy (``world_info_character_strategy``), each by descending ``order``. A
:class:`Plan` holds that order and every per-entry fact the passes need from it; :func:`plan_books`
builds one for a book selection. Plans are built once per selection and shared by evaluations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from operator import attrgetter

from . import _construct, _js
from ._card_book import card_book_names
from ._compile import CompiledEntry
from ._mode import Mode
from ._model import Lorebook

#: a compiled book: the book and its entries in file order
CompiledBook = tuple[Lorebook, list[CompiledEntry]]


class Plan:
    """Scan order for one book selection: chat, persona, then strategy-ordered global/character.

    Read-only once built; :meth:`by_key` is built on first use and published with one assignment,
    so threads sharing a plan never see it half-built.
    """

    def __init__(self, entries: list[CompiledEntry], total: int) -> None:
        self.entries = entries
        # gid → place in scan order (-1: not read); a list, as the engine maps many gids each pass
        self.pos = pos = [-1] * total
        self.constants: list[int] = []
        levels: dict[float | str, None] = {}    # SillyTavern's Set: first-seen order
        self.delayed: list[CompiledEntry] = []
        native = _construct.native
        if native is not None and type(entries) is list:    # the same loop in C
            depth, nan = native.plan_facts(CompiledEntry, entries, pos, self.constants, levels, self.delayed,
                                           _js.truthy, _js.to_number)
        else:
            depth, nan = _facts(entries, pos, self.constants, levels, self.delayed)
        self.levels = _js.ascending_set(levels)
        self._by_key: dict[str, CompiledEntry] | None = None
        self._unique_keys: bool | None = None
        self.max_scan_depth = depth if depth else 0
        #: whether an order is NaN (not a number): its sorts are V8's (:func:`_js.sort_descending`)
        self.nan_orders = nan

    def unique_keys(self) -> bool:
        """Whether no two entries share a ``"<book>.<uid>"`` key (worked out on first use): then an
        entry's key is activated exactly when the entry itself is."""
        got = self._unique_keys
        if got is None:
            got = self._unique_keys = len(self.by_key()) == len(self.entries)
        return got

    def by_key(self) -> dict[str, CompiledEntry]:
        """Entries by ``"<book>.<uid>"`` (the first one in scan order wins), built on first use."""
        got = self._by_key
        if got is None:
            got = {}
            for ce in self.entries:
                got.setdefault(ce.key, ce)
            self._by_key = got
        return got


def _facts(entries: list[CompiledEntry], pos: list[int], constants: list[int], levels: dict[float | str, None],
           delayed: list[CompiledEntry]) -> tuple[float, bool]:
    """Every per-entry fact a plan holds, in one pass (100k entries): each entry's place, the
    constant ones, the delay-until-recursion levels, the delayed ones; the greatest scan depth, and
    whether an order is NaN. ``plan_facts`` in ``_csrc/compile.c`` does the same."""
    depth = 0.0
    for i, ce in enumerate(entries):
        pos[ce.gid] = i
        if ce.constant or (ce.decorators and "@@activate" in ce.decorators):
            constants.append(ce.gid)
        if ce.delay_until_recursion:
            levels[ce.dur_level] = None
        if ce.delay is not None and _js.truthy(ce.delay):
            delayed.append(ce)
        if ce.scan_depth is not None:
            d = _js.to_number(ce.scan_depth)
            if d == d and d > depth:
                depth = d
    return depth, any(map(math.isnan, map(_ORDER, entries)))


def card_books_first(plan: Plan, books: Sequence[Lorebook]) -> Plan:
    """``plan`` with the entries of the character books loaded from a card moved first, in their
    order (card_book_settings: the card's book is used first, world books fill the budget it
    leaves); the plan itself when no card book takes part."""
    names = card_book_names(books)
    first = [ce for ce in plan.entries if ce.book in names]
    if not first or len(first) == len(plan.entries):
        return plan
    return Plan(first + [ce for ce in plan.entries if ce.book not in names], len(plan.pos))


def descending(entries: list[CompiledEntry]) -> list[CompiledEntry]:
    """``entries.sort(sortFn)``: descending ``order``, stable (see :func:`_js.sort_descending`)."""
    return _js.sort_descending(entries, _ORDER)


_ORDER = attrgetter("order_num")


def plan_books(compiled: Sequence[CompiledBook], total: int, mode: Mode, strategy: int,
               has_character: bool, persona_book: str | None,
               extra_books: tuple[str, ...] | None) -> Plan:
    """The plan for one book selection (SillyTavern's ``getSortedEntries``).

    ``has_character``: a character is selected (its books take part); ``extra_books``: the names
    of the character's extra books (``None``: every character book); ``persona_book``: the persona
    book's name (``None``: the book loaded with the persona scope). A book that is also global is
    read once, as a global book.
    """
    by_scope: dict[str, list[CompiledBook]] = {}
    for book, entries in compiled:
        by_scope.setdefault(book.scope, []).append((book, entries))
    globals_ = by_scope.get("global", [])
    global_names = {b.name for b, _ in globals_}
    chat = by_scope.get("chat", [])[:1]
    chat_name = chat[0][0].name if chat else None
    if chat and chat_name in global_names:
        chat = []
    chars = by_scope.get("character", []) if has_character else []
    if chars and extra_books is not None:
        named = {b.name: (b, e) for b, e in chars[1:]}
        chars = chars[:1] + [named[n] for n in extra_books if n in named]
    persona: list[CompiledBook] = []
    if mode.persona_book:
        if persona_book is not None:
            persona = [(b, e) for b, e in compiled if b.name == persona_book][:1]
        else:
            persona = by_scope.get("persona", [])[:1]
        if persona and (persona[0][0].name == chat_name or persona[0][0].name in global_names):
            persona = []
    persona_name = persona[0][0].name if persona else None
    seen: set[str] = set()
    char_entries: list[CompiledEntry] = []
    for book, entries in chars:
        if book.name in seen or book.name in global_names or book.name == chat_name \
                or book.name == persona_name:
            continue
        seen.add(book.name)
        char_entries.extend(entries)
    glob = [ce for _, entries in globals_ for ce in entries]
    if strategy == 1:
        ordered = descending(char_entries) + descending(glob)
    elif strategy == 2:
        ordered = descending(glob) + descending(char_entries)
    else:
        ordered = descending(glob + char_entries)
    chat_entries = [ce for _, entries in chat for ce in entries]
    persona_entries = [ce for _, entries in persona for ce in entries]
    return Plan(descending(chat_entries) + descending(persona_entries) + ordered, total)
