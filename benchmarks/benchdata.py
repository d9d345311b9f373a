"""Shared data for the benchmarks: generated once per process (cached), handed out by module-scoped
fixtures in the test modules.

Quick mode (``pytest benchmarks --benchmark-disable``) runs every benchmark body once and skips the
100k-entry cases; ``LORESCAN_BENCH_FULL=1`` adds them. The expensive pieces (books, compiled lore,
chats, the baseline's answers) are cached here, so each is computed at most once per run.
"""

from __future__ import annotations

import functools
import os
import random
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for _p in (str(ROOT), str(BENCH)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import baseline as _baseline  # noqa: E402
import generate as gen  # noqa: E402

import lorescan  # noqa: E402

FULL = os.environ.get("LORESCAN_BENCH_FULL", "") not in ("", "0")
full_only = pytest.mark.skipif(not FULL, reason="100k-entry case: set LORESCAN_BENCH_FULL=1")

SEED = 0
CHAT_MESSAGES = 1000     # the replay chat; activations use its first ACTIVATE_AT messages
ACTIVATE_AT = 100        # chat length for the one-activation benchmarks (window: WINDOW messages)
WINDOW = 40


def sizes(*quick: int, full: tuple[int, ...] = (100_000,)) -> list[Any]:
    """Parameters for a benchmark over book sizes: the quick ones, then the 100k ones (full mode)."""
    return [*quick, *(pytest.param(n, marks=full_only, id=f"{n // 1000}k") for n in full)]


@functools.cache
def entries(n: int) -> list[dict[str, Any]]:
    return gen.make_entries(n, SEED)


@functools.cache
def book(n: int) -> lorescan.Lorebook:
    return lorescan.Lorebook.from_entries(gen.BOOK_NAME, entries(n))


@functools.cache
def lore(n: int, tokenizer: str = "cl100k") -> lorescan.Lore:
    return lorescan.compile([book(n)], settings=settings(True), tokenizer=tokenizer)


@functools.cache
def chat(n: int) -> list[lorescan.ChatMessage]:
    return gen.chat_messages(gen.make_chat(entries(n), CHAT_MESSAGES, SEED))


@functools.cache
def settings(recursive: bool) -> lorescan.Settings:
    return gen.bench_settings(recursive=recursive, depth=WINDOW)


@functools.cache
def base(n: int) -> _baseline.Baseline:
    return _baseline.Baseline([(gen.BOOK_NAME, entries(n))])


def rng(point: int) -> random.Random:
    return random.Random(1_000_003 * SEED + point)


def run_lorescan(n: int, recursive: bool, point: int = ACTIVATE_AT) -> lorescan.ActivationResult:
    """One activation of the ``n``-entry book on the first ``point`` chat messages."""
    return lore(n).activate(chat(n)[:point], settings=settings(recursive), user_name=gen.USER_NAME,
                            char_name=gen.CHAR_NAME, rng=rng(point))


def run_baseline(n: int, recursive: bool, point: int = ACTIVATE_AT) -> list[str]:
    return base(n).activate(chat(n)[:point], settings(recursive), gen.USER_NAME, gen.CHAR_NAME, rng(point))


@functools.cache
def expected(n: int, recursive: bool, point: int = ACTIVATE_AT) -> tuple[str, ...]:
    """The baseline's activated keys for that activation (computed once)."""
    return tuple(run_baseline(n, recursive, point))


# -- the unicode word rule ------------------------------------------------------------------------

#: ASCII letters to Cyrillic ones, case pairs to case pairs: a book and chat turned into Cyrillic
#: keep every word, every word boundary (under the unicode rule) and every token count (words)
_TO_CYRILLIC = str.maketrans("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
                             "абвгдежзийклмнопрстуфхцчшщАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩ")
_MACRO = re.compile(r"(\{\{[^}]*\}\}|<[A-Z]+>)")
UNICODE_TOKENIZER = "words"     # counts the same in both scripts (and costs the same: chars4 walks
                                # non-ASCII text code point by code point)


def cyrillic(text: str) -> str:
    """``text`` in Cyrillic letters, its macros (``{{char}}``, ``<USER>``) left as they are."""
    return "".join(part if _MACRO.fullmatch(part) else part.translate(_TO_CYRILLIC)
                   for part in _MACRO.split(text))


def _without_regex_keys(entry: dict[str, Any], script: Callable[[str], str]) -> dict[str, Any]:
    out = dict(entry)
    for field in ("key", "keysecondary"):
        out[field] = [script(k) for k in entry.get(field) or [] if not k.startswith("/")]
    out["content"] = script(entry.get("content") or "")
    return out


@functools.cache
def script_book(n: int, script: str) -> lorescan.Lorebook:
    """The ``n``-entry book without its regex keys (JavaScript's ``\\b`` is ASCII), in ``"latin"``
    or ``"cyrillic"`` letters."""
    to = cyrillic if script == "cyrillic" else str
    return lorescan.Lorebook.from_entries(gen.BOOK_NAME, [_without_regex_keys(e, to) for e in entries(n)])


@functools.cache
def script_chat(n: int, script: str) -> tuple[list[lorescan.ChatMessage], str, str]:
    """The chat, and the user's and character's names, in ``script``."""
    if script != "cyrillic":
        return chat(n), gen.USER_NAME, gen.CHAR_NAME
    msgs = [{**m, "name": cyrillic(m["name"]), "mes": cyrillic(m["mes"])}
            for m in gen.make_chat(entries(n), CHAT_MESSAGES, SEED)]
    return gen.chat_messages(msgs), cyrillic(gen.USER_NAME), cyrillic(gen.CHAR_NAME)


@functools.cache
def script_lore(n: int, script: str, word_boundaries: str) -> lorescan.Lore:
    return lorescan.compile([script_book(n, script)], settings=settings(True), tokenizer=UNICODE_TOKENIZER,
                            word_boundaries=word_boundaries)


def run_script(n: int, script: str, word_boundaries: str, recursive: bool,
               point: int = ACTIVATE_AT) -> lorescan.ActivationResult:
    """One activation of the script book under a word rule."""
    msgs, user, char = script_chat(n, script)
    return script_lore(n, script, word_boundaries).activate(
        msgs[:point], settings=settings(recursive), user_name=user, char_name=char, rng=rng(point))
