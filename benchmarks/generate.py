"""Deterministic synthetic SillyTavern lorebooks and chats for lorescan's benchmarks.

Everything is drawn from one seeded :class:`random.Random`, so ``make_book(n, seed)`` and
``make_chat(book, m, seed)`` give the same data on every machine and Python version (only
``random()``, ``randrange`` and ``choice``-style calls on sequences are used).

Shapes (per entry, see :func:`make_book`): 1–4 primary keys drawn from a vocabulary of made-up
words (~15 % two-word keys, ~2 % JavaScript regex keys such as ``/\\bdrag(?:on|oness)\\b/i``,
~1 % ``{{char}}'s <word>`` keys, ~2 % case-sensitive capitalised keys, ~3 % entries matching
substrings instead of whole words), ~30 % with 1–3 secondary keys under mixed ``selectiveLogic``
(a few with ``selective: false``, a few with a bare ``{{char}}`` secondary key), ~5 % in inclusion
groups (some ``groupOverride``, mixed ``groupWeight``), ~2 % constants (at most
``max_constants``), ~5 % ``preventRecursion``, ~5 % ``excludeRecursion``, ~1 %
``delayUntilRecursion``, ~1 % disabled, ~2 % with their own ``scanDepth``, probability 100 for ~92 %,
positions 0–6, order 0–1000, and 20–120 words of content of which a few are other entries' keys
(so recursion chains exist).

The vocabulary grows with the book (``max(3000, n // 2)`` words by default, so a key word belongs
to ~5 entries at every size): with only a few thousand words a 100k-entry book would give every
word to ~80 entries, any mention would overflow the budget on the first pass, and recursion would
never be exercised. ``delayUntilRecursion`` uses level 1 only by default (``delay_levels``): two
distinct levels force an extra pass in every activation, even with recursion off.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

BOOK_NAME = "Synth"
USER_NAME = "Alex"
CHAR_NAME = "Seraphina"

_ONSETS = ("b", "br", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "qu", "r",
           "s", "sh", "st", "t", "th", "v", "w", "z", "zh")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ai", "ou", "y", "ia")
_CODAS = ("", "", "", "n", "r", "l", "s", "th", "x", "k", "m")

#: Plain English filler: messages and contents are mostly made of these (never a key).
FILLER = tuple("""
the a an and or but so of in on at to from with without over under into onto across through
after before while when where why how what who which that this these those there here then now
soon later always never often again still just only also very quite rather almost nearly about
i you he she it we they me him her us them my your his its our their mine yours
is are was were be been being have has had do does did will would can could should may might must
go goes went gone come came see saw seen look looked take took give gave make made find found
know knew think thought tell told ask asked feel felt leave left keep kept hold held turn turned
walk walked run ran stand stood sit sat wait waited speak spoke listen listened open opened
old new good bad long short great small large little big high low dark light cold warm quiet loud
first last next other same different early late young whole strange certain clear
day night morning evening time year moment way hand eye face voice door room road house window
wall floor table fire water wind rain stone tree river hill field sky sun moon star light shadow
head heart mind word name story thing place side end part kind friend stranger people man woman
child yes no perhaps indeed maybe nothing something everything anything someone everyone
""".split())

_SUFFIXES = ("ess", "ling", "ar", "en", "ish", "ite")


def make_vocab(size: int, rng: random.Random) -> list[str]:
    """``size`` distinct made-up lowercase ASCII words of 2–3 syllables, none of them a filler word."""
    banned = set(FILLER)
    seen: set[str] = set()
    words: list[str] = []
    while len(words) < size:
        n = 2 if rng.random() < 0.7 else 3
        w = "".join(_ONSETS[rng.randrange(len(_ONSETS))] + _VOWELS[rng.randrange(len(_VOWELS))]
                    + _CODAS[rng.randrange(len(_CODAS))] for _ in range(n))
        if w in seen or w in banned or len(w) < 4:
            continue
        seen.add(w)
        words.append(w)
    return words


def _pick(rng: random.Random, weighted: tuple[tuple[Any, float], ...]) -> Any:
    r = rng.random() * sum(w for _, w in weighted)
    for value, w in weighted:
        r -= w
        if r < 0:
            return value
    return weighted[-1][0]


def _regex_key(word: str, rng: random.Random) -> tuple[str, list[str]]:
    """A ``/\\bstem(?:rest|alt)\\b/i`` key and the words that match it."""
    cut = max(2, len(word) - 2)
    stem, rest = word[:cut], word[cut:]
    alt = rest + _SUFFIXES[rng.randrange(len(_SUFFIXES))]
    return f"/\\b{stem}(?:{rest}|{alt})\\b/i", [stem + rest, (stem + alt).capitalize()]


class _KeyMaker:
    def __init__(self, vocab: list[str], rng: random.Random) -> None:
        self.vocab = vocab
        self.rng = rng

    def word(self) -> str:
        return self.vocab[self.rng.randrange(len(self.vocab))]

    def key(self, case_sensitive: bool) -> tuple[str, list[str]]:
        """(key, texts that mention it in a chat or a content)."""
        rng = self.rng
        r = rng.random()
        if r < 0.02:
            return _regex_key(self.word(), rng)
        if r < 0.03:
            w = self.word()
            return "{{char}}'s " + w, ["{{char}}'s " + w]
        if r < 0.18:
            k = f"{self.word()} {self.word()}"
        else:
            k = self.word()
        if case_sensitive:
            k = k.capitalize()
        return k, [k]


def make_entries(n: int, seed: int = 0, vocab_size: int | None = None, max_constants: int = 20,
                 delay_levels: tuple[Any, ...] = (True, 1)) -> list[dict[str, Any]]:
    """``n`` SillyTavern world-info entries (uids ``0..n-1``) with the shapes of the module doc.

    Constants are ~2 % of the entries but at most ``max_constants``: a real book has a handful, and
    more constants than the budget holds would turn every activation into a first-pass overflow.
    """
    rng = random.Random(f"lorescan-book-{seed}-{n}")
    vocab = make_vocab(vocab_size or max(3000, n // 2), rng)
    km = _KeyMaker(vocab, rng)
    n_groups = max(3, n // 60)
    constants_left = max_constants
    metas: list[tuple[dict[str, Any], list[str]]] = []
    for uid in range(n):
        cs = rng.random() < 0.02
        keys: list[str] = []
        mentions: list[str] = []
        for _ in range(_pick(rng, ((1, 40), (2, 30), (3, 20), (4, 10)))):
            k, m = km.key(cs)
            if k not in keys:
                keys.append(k)
                mentions.extend(m)
        entry: dict[str, Any] = {
            "uid": uid, "key": keys, "keysecondary": [], "comment": f"entry {uid}", "content": "",
            "constant": False, "vectorized": False, "selective": True, "selectiveLogic": 0,
            "addMemo": True, "order": rng.randrange(1001),
            "position": _pick(rng, ((0, 40), (1, 25), (2, 5), (3, 5), (4, 15), (5, 5), (6, 5))),
            "disable": rng.random() < 0.01, "excludeRecursion": rng.random() < 0.05,
            "preventRecursion": rng.random() < 0.05, "delayUntilRecursion": 0,
            "probability": 100, "useProbability": True, "depth": 4, "group": "",
            "groupOverride": False, "groupWeight": 100, "scanDepth": None,
            "caseSensitive": True if cs else None, "matchWholeWords": None, "useGroupScoring": None,
            "automationId": "", "role": 0, "sticky": 0, "cooldown": 0, "delay": 0,
            "displayIndex": uid,
        }
        if entry["position"] == 4:
            entry["depth"] = rng.randrange(0, 9)
            entry["role"] = rng.randrange(3)
        if rng.random() < 0.03:
            entry["matchWholeWords"] = False
        if rng.random() < 0.30:
            sec = [km.key(False)[0] for _ in range(_pick(rng, ((1, 60), (2, 30), (3, 10))))]
            if rng.random() < 0.1:
                sec[rng.randrange(len(sec))] = "{{char}}"
            entry["keysecondary"] = sec
            entry["selectiveLogic"] = _pick(rng, ((0, 55), (1, 10), (2, 25), (3, 10)))
            entry["selective"] = rng.random() >= 0.05
        if rng.random() < 0.05:
            entry["group"] = f"grp{rng.randrange(n_groups)}"
            entry["groupOverride"] = rng.random() < 0.2
            entry["groupWeight"] = _pick(rng, ((100, 70), (50, 15), (300, 15)))
        if constants_left > 0 and rng.random() < 0.02:
            entry["constant"] = True
            constants_left -= 1
        if rng.random() < 0.08:
            entry["probability"] = _pick(rng, ((10, 1), (25, 1), (50, 2), (75, 2), (90, 1)))
        if rng.random() < 0.01:
            entry["delayUntilRecursion"] = delay_levels[rng.randrange(len(delay_levels))]
        if rng.random() < 0.02:
            entry["scanDepth"] = rng.randrange(1, 11)
        metas.append((entry, mentions))
    for entry, _ in metas:
        words = [FILLER[rng.randrange(len(FILLER))] for _ in range(rng.randrange(20, 121))]
        for _ in range(_pick(rng, ((0, 30), (1, 40), (2, 20), (3, 10)))):
            other = metas[rng.randrange(n)][1]
            if other:
                words[rng.randrange(len(words))] = other[rng.randrange(len(other))]
        if rng.random() < 0.03:
            words[rng.randrange(len(words))] = "{{user}}"
        words[0] = words[0].capitalize()
        entry["content"] = " ".join(words) + "."
    return [e for e, _ in metas]


def make_book_json(n: int, seed: int = 0, **kwargs: Any) -> dict[str, Any]:
    """A SillyTavern world-info document ``{"entries": {"<uid>": entry}}`` of ``n`` entries."""
    return {"entries": {str(e["uid"]): e for e in make_entries(n, seed, **kwargs)}}


def make_book(n: int, seed: int = 0, name: str = BOOK_NAME, **kwargs: Any):  # -> lorescan.Lorebook
    """A :class:`lorescan.Lorebook` (global scope) of ``n`` generated entries."""
    from lorescan import Lorebook

    return Lorebook.from_entries(name, make_entries(n, seed, **kwargs))


def write_book(path: str | Path, n: int | None = None, seed: int = 0,
               entries: list[dict[str, Any]] | None = None) -> Path:
    """Write a SillyTavern world-info JSON file (``{"entries": {"<uid>": {...}}}``) and return its path."""
    if entries is None:
        if n is None:
            raise ValueError("give n or entries")
        entries = make_entries(n, seed)
    path = Path(path)
    with path.open("w", encoding="utf-8") as fh:
        json.dump({"entries": {str(e["uid"]): e for e in entries}}, fh, ensure_ascii=False)
    return path


def mentions_of(entries: list[dict[str, Any]]) -> list[list[str]]:
    """For every entry, texts that would trigger its primary keys (used to write chats)."""
    out: list[list[str]] = []
    for e in entries:
        m: list[str] = []
        for k in e["key"]:
            if k.startswith("/") and k.endswith("/i"):
                body = k[3:-4]                       # \bSTEM(?:REST|ALT)\b
                stem, alts = body.split("(?:", 1)
                m.append(stem + alts.split("|", 1)[0])
            else:
                m.append(k.replace("{{char}}", CHAR_NAME))
        out.append(m)
    return out


def make_chat(entries: list[dict[str, Any]], messages: int, seed: int = 0,
              mention_rate: float = 0.25, mentions: list[list[str]] | None = None) -> list[dict[str, Any]]:
    """``messages`` chat messages, oldest first, alternating character (greeting first) and user.

    Each message is 8–40 filler words; with probability ``mention_rate`` it mentions one entry's key
    (half the time an entry mentioned recently, as conversations stay on a topic). ``mentions``:
    ``mentions_of(entries)`` computed once, for callers writing many chats of one book.
    """
    rng = random.Random(f"lorescan-chat-{seed}-{messages}-{len(entries)}")
    ment = mentions if mentions is not None else mentions_of(entries)
    recent: list[int] = []
    out: list[dict[str, Any]] = []
    for i in range(messages):
        is_user = i % 2 == 1
        words = [FILLER[rng.randrange(len(FILLER))] for _ in range(rng.randrange(8, 41))]
        while rng.random() < mention_rate and ment:
            if recent and rng.random() < 0.5:
                j = recent[rng.randrange(len(recent))]
            else:
                j = rng.randrange(len(ment))
                recent = (recent + [j])[-12:]
            if ment[j]:
                text = ment[j][rng.randrange(len(ment[j]))]
                words.insert(rng.randrange(len(words) + 1), text)
            if rng.random() < 0.6:
                break
        if i == 0:
            words.append("{{user}}")
        words[0] = words[0].capitalize()
        out.append({"name": USER_NAME if is_user else CHAR_NAME, "is_user": is_user,
                    "is_system": False, "mes": " ".join(words) + rng.choice((".", "!", "?", "..."))})
    return out


def chat_messages(chat: list[dict[str, Any]]):  # -> list[lorescan.ChatMessage]
    """The chat as :class:`lorescan.ChatMessage` objects (validated once, as a replay would)."""
    from lorescan import ChatMessage

    return [ChatMessage.model_validate(m) for m in chat]


def bench_settings(recursive: bool = True, depth: int = 40, **extra: Any):  # -> lorescan.Settings
    """The settings every benchmark uses: a fresh install's whole-word matching, a 32k context
    (budget 25 % = 8192 tokens), ``depth`` messages scanned, recursion on or off."""
    from lorescan import Settings

    return Settings(world_info_depth=depth, world_info_recursive=recursive,
                    world_info_match_whole_words=True, max_context=32768, **extra)


__all__ = ["BOOK_NAME", "CHAR_NAME", "FILLER", "USER_NAME", "bench_settings", "chat_messages",
           "make_book", "make_book_json", "make_chat", "make_entries", "make_vocab", "mentions_of",
           "write_book"]
