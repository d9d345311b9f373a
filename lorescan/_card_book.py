"""A character card book's own settings (``card_book_settings=True``), beyond SillyTavern.

A Character Card V2/V3 ``character_book`` may carry ``scan_depth``, ``token_budget`` and
``recursive_scanning``: the card specification calls them that book's own settings. SillyTavern
ignores them (its global settings apply), and so does lorescan unless asked. With the option:

- ``scan_depth`` is the scan depth of the book's entries that have none of their own;
- ``token_budget`` caps what the book's entries add to the prompt, inside the total budget;
- ``recursive_scanning: false`` keeps the book's entries out of recursion both ways (recursed text
  does not activate them, and their content is not recursed); ``true`` leaves them to the global
  recursion setting;
- card books are read first, so world books fill the budget the card leaves (see
  :func:`lorescan._plan.plan_books`).

The settings are read from the ``character_book`` object a card book was loaded from (its
``originalData``); a book built in code can carry one there too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._compile import CompiledEntry
from ._model import Lorebook
from ._tokens import TokenCounter


@dataclass(frozen=True)
class CardBookSettings:
    """The settings one card book carries (``None``: not given, or not a usable value)."""

    scan_depth: int | None = None
    token_budget: int | None = None
    recursive_scanning: bool | None = None


def _count(value: Any, minimum: int) -> int | None:
    """A whole number of at least ``minimum``, or ``None`` for anything else (a card's field)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value) if value == int(value) and value >= minimum else None


def card_book_data(book: Lorebook) -> dict[str, Any] | None:
    """The ``character_book`` object a book was loaded from, or ``None`` (not a card book)."""
    data = book.extra.get("originalData") if isinstance(book.extra, dict) else None
    return data if isinstance(data, dict) else None


def card_book_settings(book: Lorebook) -> CardBookSettings | None:
    """The book's own settings, or ``None`` when it is not a card book or sets none of them."""
    data = card_book_data(book)
    if data is None:
        return None
    rec = data.get("recursive_scanning")
    got = CardBookSettings(_count(data.get("scan_depth"), 0), _count(data.get("token_budget"), 1),
                           rec if isinstance(rec, bool) else None)
    return got if got != CardBookSettings() else None


def apply_card_book_settings(compiled: Sequence[tuple[Lorebook, list[CompiledEntry]]]) -> None:
    """Give each card book's entries its scan depth (where they have none) and its recursion
    switch. The entries are the compiled copies of one :class:`~lorescan.Lore`: the books
    themselves are not changed."""
    for book, entries in compiled:
        own = card_book_settings(book)
        if own is None:
            continue
        for ce in entries:
            if own.scan_depth is not None and ce.scan_depth is None:
                ce.scan_depth = own.scan_depth
            if own.recursive_scanning is False:
                if not ce.prevent_recursion:    # (this first read fills a lazily read entry)
                    ce.prevent_recursion = True
                ce.exclude_recursion = True


def card_book_names(books: Sequence[Lorebook]) -> frozenset[str]:
    """The names of the character-scoped books loaded from a card (read first in this mode)."""
    return frozenset(b.name for b in books if b.scope == "character" and card_book_data(b) is not None)


class BookBudgets:
    """The token budgets of card books in one evaluation: what each book's activated entries have
    used (``content + "\\n"`` counted entry by entry), and whether the next one fits."""

    __slots__ = ("counter", "caps", "used")

    def __init__(self, counter: TokenCounter, caps: dict[str, int]) -> None:
        self.counter = counter
        self.caps = caps            # book name -> its token budget
        self.used: dict[str, int] = dict.fromkeys(caps, 0)

    @classmethod
    def of(cls, books: Sequence[Lorebook], counter: TokenCounter) -> BookBudgets | None:
        """The budgets of the card books among ``books``, or ``None`` when none has one."""
        caps = {}
        for book in books:
            own = card_book_settings(book)
            if own is not None and own.token_budget is not None:
                caps[book.name] = own.token_budget
        return cls(counter, caps) if caps else None

    def fits(self, ce: CompiledEntry, content: str, ignore_budget: bool) -> bool:
        """Whether the entry's content fits its book's budget (always, for a book without one or
        an ``ignoreBudget`` entry); if so it is counted as used."""
        cap = self.caps.get(ce.book)
        if cap is None:
            return True
        total = self.used[ce.book] + self.counter.count(content + "\n")
        if total > cap and not ignore_budget:
            return False
        self.used[ce.book] = total
        return True
