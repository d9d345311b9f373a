"""A compiled book kept for many generations gives what a fresh compile gives each time.

A ``Lore`` keeps memos between evaluations (the needle hits of messages and contents, formatted
messages, activation records, gate records made on first use, substituted contents, token
counts), and the C extension takes some steps. Here one kept ``Lore`` runs a growing chat
generation after generation, and each generation is run again on a freshly compiled ``Lore``
with the other steps (C for one, Python for the other, by turns from seed to seed): the whole
results must be equal, timed state included.

The books are small and built to collide (``random_books``) and use every feature: timed
effects, groups and scoring, minimum activations, filters, decorators, match fields, triggers,
outlets, books of every scope, both SillyTavern versions, both word rules, quirks off, card books'
own settings, swipes, dry runs and changing names.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import lorescan
from lorescan import Lorebook, _index
from lorescan._model import Character
from lorescan._results import result_json

from . import random_books as rb

SEEDS = range(rb.count(60))
NATIVE = _index.native


@contextmanager
def _steps(c: bool) -> Iterator[None]:
    """The engine's C steps on (where the extension is built) or off, for what runs inside."""
    saved = _index.native
    _index.native = NATIVE if c else None
    try:
        yield
    finally:
        _index.native = saved


def _generations(seed: int) -> tuple[int, int]:
    r = random.Random(seed)
    books = [Lorebook.from_entries(f"b{i}", [rb.entry(r, uid, full=True) for uid in range(r.randint(1, 12))],
                                   scope=r.choice(["global", "global", "character", "chat", "persona"]))
             for i in range(r.randint(1, 3))]
    persona_book = next((b.name for b in books if b.scope == "persona"), None)
    s = rb.settings(r, full=True)
    options = dict(compat=r.choice(["1.18", "1.18", "1.12"]), tokenizer=r.choice(["chars4", "words", "cl100k"]),
                   word_boundaries=r.choice(["sillytavern", "sillytavern", "unicode"]), quirks=r.random() < 0.8,
                   card_book_settings=r.random() < 0.2)
    c_steps_kept = seed % 2 == 0 and NATIVE is not None     # the kept Lore's steps: C or Python, by turns
    with _steps(c_steps_kept):
        kept = lorescan.compile(books, settings=s, **options)
    character = Character(name="Bo", avatar="Bo.png", tags=r.choice([["t1"], [], None]),
                          description=rb.words(r, 0, 4), scenario=rb.words(r, 0, 3))
    chat: list[lorescan.ChatMessage] = []
    timed_kept = timed_fresh = None
    activated = 0
    turns = r.randint(3, 10)
    for turn in range(turns):
        chat.append(rb.message(r, chat))
        user, char = r.choice(rb.NAMES)
        fields = dict(settings=s, user_name=user, char_name=char,
                      generation_type=r.choice(["normal", "normal", "swipe", "continue", "regenerate"]),
                      character=character if r.random() < 0.8 else None, persona_description=rb.words(r, 0, 3),
                      persona_book=persona_book, authors_note=rb.words(r, 0, 2),
                      authors_note_scan=r.random() < 0.3, dry_run=r.random() < 0.1)
        draws = r.randrange(1 << 30)
        with _steps(c_steps_kept):
            a = kept.activate(chat, timed=timed_kept, rng=random.Random(draws), **fields)
        with _steps(not c_steps_kept):
            fresh = lorescan.compile(books, settings=s, **options)
            b = fresh.activate(chat, timed=timed_fresh, rng=random.Random(draws), **fields)
        assert result_json(a) == result_json(b), f"seed {seed}, generation {turn}"
        assert [x.model_dump() for x in a.activated] == [x.model_dump() for x in b.activated]  # the records too
        timed_kept, timed_fresh = a.timed, b.timed
        activated += len(a.activated)
    return turns, activated


@pytest.mark.parametrize("seed", SEEDS)
def test_a_kept_lore_gives_what_a_fresh_one_gives(seed: int) -> None:
    _generations(seed)


def test_the_random_books_activate_entries() -> None:
    """The comparison is not vacuous: the generations activate entries, about two each."""
    counts = [_generations(seed) for seed in range(20)]
    generations, activated = sum(c[0] for c in counts), sum(c[1] for c in counts)
    assert generations > 60 and activated > generations
