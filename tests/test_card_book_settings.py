"""A character card book's own settings (``card_book_settings=True``): scan depth, token budget,
recursion switch, and the card's book read first. Small synthetic cards with exact results, then
the real cards of the shared corpora (skipped when absent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lorescan
from lorescan import Character, ChatMessage, Entry, Lorebook, Settings
from lorescan._card_book import card_book_settings

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
CHAR = Character(name="C", avatar="C.png")


def _card_book(entries: list[dict[str, Any]], **own: Any) -> Lorebook:
    """A character book as a card's loader makes it: its ``character_book`` kept as ``originalData``."""
    book = Lorebook.from_entries("C's Lorebook", entries, scope="character")
    book.extra["originalData"] = {"name": "C's Lorebook", "entries": [], **own}
    return book


def _chat(*texts: str) -> list[ChatMessage]:
    return [ChatMessage(name="U", is_user=True, mes=t) for t in texts]


def _run(books: list[Lorebook], chat: list[ChatMessage], settings: Settings | None = None,
         **options: Any) -> list[str]:
    lore = lorescan.compile(books, tokenizer="words", **options)
    result = lore.activate(chat, settings=settings or Settings(), user_name="U", char_name="C", character=CHAR)
    return sorted(result.activated_keys())


def test_the_card_scan_depth_applies_to_entries_without_their_own() -> None:
    book = _card_book([{"uid": 0, "key": ["dragon"], "content": "a"},
                       {"uid": 1, "key": ["dragon"], "content": "b", "scanDepth": 3}], scan_depth=1)
    chat = _chat("the dragon", "hello")          # the dragon is in the second newest message
    assert _run([book], chat) == ["C's Lorebook.0", "C's Lorebook.1"]       # global depth 2 for both
    assert _run([book], chat, card_book_settings=True) == ["C's Lorebook.1"]   # depth 1 for uid 0


def test_the_card_token_budget_caps_its_entries_inside_the_total() -> None:
    entries = [{"uid": i, "key": [], "constant": True, "content": "one two three", "order": 100 - i}
               for i in range(3)]
    book = _card_book(entries, token_budget=7)     # 3 words each: 3, 6, then 9 > 7
    assert _run([book], _chat("hi")) == [f"C's Lorebook.{i}" for i in range(3)]
    assert _run([book], _chat("hi"), card_book_settings=True) == ["C's Lorebook.0", "C's Lorebook.1"]


def test_an_ignore_budget_entry_is_not_capped_by_its_book() -> None:
    entries = [{"uid": i, "key": [], "constant": True, "content": "one two three", "order": 100 - i,
                "ignoreBudget": i == 2} for i in range(3)]
    book = _card_book(entries, token_budget=4)
    assert _run([book], _chat("hi"), card_book_settings=True) == ["C's Lorebook.0", "C's Lorebook.2"]


def test_the_card_book_goes_first_and_world_books_fill_what_is_left() -> None:
    world = Lorebook.from_entries("world", [{"uid": 0, "key": [], "constant": True, "content": "w w w w",
                                             "order": 1000}])
    card = _card_book([{"uid": 0, "key": [], "constant": True, "content": "c c c c", "order": 1}])
    for strategy in (0, 2):     # evenly (by order) and global first; 1 (character first) is the default
        # room for one entry of 4 words (+ its newline)
        tight = Settings(world_info_budget_cap=6, world_info_character_strategy=strategy)
        assert _run([world, card], _chat("hi"), tight) == ["world.0"]
        assert _run([world, card], _chat("hi"), tight, card_book_settings=True) == ["C's Lorebook.0"]


def test_recursive_scanning_false_keeps_the_card_book_out_of_recursion() -> None:
    world = Lorebook.from_entries("world", [
        {"uid": 0, "key": ["dragon"], "content": "w"},
        {"uid": 1, "key": [], "constant": True, "content": "a wyvern"},
    ])
    card = _card_book([{"uid": 0, "key": [], "constant": True, "content": "the dragon"},
                       {"uid": 1, "key": ["wyvern"], "content": "c"}], recursive_scanning=False)
    on = Settings(world_info_recursive=True)
    everything = ["C's Lorebook.0", "C's Lorebook.1", "world.0", "world.1"]
    assert _run([world, card], _chat("hi"), on) == everything
    # the card's content is not recursed (no world.0), and recursed text does not activate it (no uid 1)
    assert _run([world, card], _chat("hi"), on, card_book_settings=True) == ["C's Lorebook.0", "world.1"]


def test_a_book_not_from_a_card_and_the_books_themselves_are_unchanged() -> None:
    world = Lorebook.from_entries("world", [{"uid": 0, "key": ["dragon"], "content": "w"}])
    world.extra["scan_depth"] = 0                 # a world file's own field: not a card book's setting
    card = _card_book([{"uid": 0, "key": ["dragon"], "content": "a"}], scan_depth=0)
    chat = _chat("the dragon")
    assert _run([world, card], chat, card_book_settings=True) == ["world.0"]
    assert _run([world, card], chat) == ["C's Lorebook.0", "world.0"]     # compiled copies were changed
    assert card.entries[0].scanDepth is None


def test_settings_are_read_only_when_usable() -> None:
    assert card_book_settings(_card_book([], scan_depth=None, token_budget=None)) is None
    got = card_book_settings(_card_book([], scan_depth="4", token_budget=2.5, recursive_scanning="no"))
    assert got is None                            # text, a fraction and a non-boolean are not settings
    got = card_book_settings(_card_book([], scan_depth=4, token_budget=2048.0, recursive_scanning=True))
    assert got is not None and (got.scan_depth, got.token_budget, got.recursive_scanning) == (4, 2048, True)


# -- the real cards of the shared corpora ------------------------------------------------------

def _real_cards() -> list[Path]:
    if not CORPORA.is_dir():
        return []
    return sorted(p for d in ("card-json", "card-png") if (CORPORA / d).is_dir()
                  for p in (CORPORA / d).iterdir() if p.suffix in (".json", ".png"))


def _card_book_of(path: Path) -> Lorebook | None:
    try:
        loaded = lorescan.load(path)
    except lorescan.LorescanError:
        return None
    books = [b for b in loaded.books if b.scope == "character" and b.extra.get("originalData")]
    return books[0] if books and books[0].entries else None


def _keys_chat(book: Lorebook) -> list[ChatMessage]:
    """A chat that names every entry's first key, one message per entry."""
    keys = [e.key[0] for e in book.entries if e.key and isinstance(e.key[0], str) and e.key[0].strip()]
    return _chat(*keys)


REAL = [p for p in _real_cards() if _card_book_of(p) is not None]


@pytest.mark.skipif(not REAL, reason="the shared corpora's cards are not present")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_a_real_card_with_its_own_scan_depth_reads_as_its_entries_with_that_depth(path: Path) -> None:
    book = _card_book_of(path)
    assert book is not None
    chat = _keys_chat(book)
    wide = Settings(world_info_depth=len(chat), world_info_budget=100, max_context=1_000_000)
    carded = book.model_copy(deep=True)
    carded.extra["originalData"] = {**carded.extra["originalData"], "scan_depth": 1}
    # the same book with scanDepth 1 written on every entry that has none, read as SillyTavern does
    edited = book.model_copy(deep=True)
    edited.entries = [e if e.scanDepth is not None else Entry.model_validate({**e.model_dump(), "scanDepth": 1})
                      for e in edited.entries]
    expected = _run([edited], chat, wide)
    assert _run([carded], chat, wide, card_book_settings=True) == expected
    assert len(expected) < len(_run([book], chat, wide)) or len(chat) <= 1


@pytest.mark.skipif(not REAL, reason="the shared corpora's cards are not present")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_a_real_card_with_its_own_token_budget_stays_inside_it(path: Path) -> None:
    book = _card_book_of(path)
    assert book is not None
    chat = _keys_chat(book)
    wide = Settings(world_info_depth=len(chat), world_info_budget=100, max_context=1_000_000)
    plain = _run([book], chat, wide)
    assert plain == _run([book], chat, wide, card_book_settings=True)   # real cards set none of the three
    counter = lorescan.get_counter("words")
    by_key = {f"{book.name}.{e.uid}": e for e in book.entries}
    words = {k: counter.count(by_key[k].content + "\n") for k in plain}
    cap = max(1, sum(words.values()) // 2)
    carded = book.model_copy(deep=True)
    carded.extra["originalData"] = {**carded.extra["originalData"], "token_budget": cap}
    capped = _run([carded], chat, wide, card_book_settings=True)
    assert set(capped) <= set(plain)
    assert sum(words[k] for k in capped if not by_key[k].ignoreBudget) <= cap
    assert len(capped) < len(plain) or all(by_key[k].ignoreBudget for k in plain)
