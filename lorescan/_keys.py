"""Keys prepared for scanning: needle ids, the automata that find them, and the slow kinds.

Plain keys become needle ids in two Aho-Corasick automata (case-folded and exact); regex keys,
blank keys, keys holding ``"\\x01"`` and keys longer than :data:`MAX_NEEDLE` stay :class:`Key`
objects, a regex key (and a long key) with prefilter needles so it is only tried where one
occurs. Such a regex key that can only match within one piece of scan text also gets a regex
needle id, added to a text's hits when the regex matches it, so it is looked up like a plain key.
A new multi-word key (a phrase) is not put in the automata (it would make most of the trie): it is
found through its longest word, then looked for in the piece.
:mod:`lorescan.index` builds the index of a book's entries from these.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Sequence
from functools import partial
from itertools import chain, compress, repeat
from typing import Any

import ahocorasick

from . import _js
from ._jsregex import JsRegex, parse_regex_key, translate_regex_key
from ._macros import MacroEnv, may_change, substitute
from ._match import (
    SILLYTAVERN,
    UNICODE,
    MatchMode,
    find_word,
    is_word_char,
    key_form,
    regex_key_source,
    unicode_find_word,
)
from ._prefilter import required_literals

MARKER = "\x01"
TIMED_OUT = "timed out"   # a piece memo's note: searching this piece timed out

SKIP, PLAIN, EMPTY, REGEX, SLOW = range(5)  # PLAIN keys are bare needle ids

#: The longest text put in an automaton. pyahocorasick (2.3.1) frees a trie recursively, about 16
#: bytes of C stack per character of its longest word: a key of ~550,000 characters overflows the
#: main thread's 8 MiB stack when the automaton is freed (a segfault), and one of ~16,000 a
#: thread's 256 KiB stack. 1,000 characters use 16 KiB, safe on any thread stack a Python service
#: runs on (musl's default is 128 KiB), and far beyond any real key (the longest in the corpora has
#: 274 characters). A longer key is searched in the scan text itself (``SLOW``), as SillyTavern
#: searches every key, and found through its first MAX_NEEDLE characters.
MAX_NEEDLE = 1000


class Key:
    """A key that needs more than an automaton lookup (regex, blank, ``\\x01``, too long for the
    automata, or not matchable).

    Plain keys are stored as bare needle ids (ints) instead; both kinds keep their position in the
    entry's key list so traces can name the raw key.
    """

    __slots__ = ("kind", "text", "_regex", "raw", "cs", "ww", "nids", "rid", "rule")

    def __init__(self, kind: int, raw: str, text: str = "", regex: JsRegex | None = None,
                 cs: bool = False, ww: bool = False, nids: tuple[int, ...] = (),
                 rule: str = SILLYTAVERN) -> None:
        self.kind = kind
        self.raw = raw
        self.text = text
        self._regex = regex
        self.cs = cs
        self.ww = ww
        self.nids = nids        # needles one of which every match contains (a prefilter), or ()
        self.rid = -1           # a regex key's regex needle (see Needles.add_regex), or -1
        self.rule = rule        # the word rule its plain text matches with

    @property
    def regex(self) -> JsRegex | None:
        """The compiled regex, built on first use; ``None`` if JavaScript would reject it (plain text)."""
        rx = self.translated
        return rx if rx is not None and rx.compiles() else None

    @property
    def translated(self) -> JsRegex | None:
        """The regex as :attr:`regex` has it, translated on first use but perhaps not compiled yet
        (``None`` if JavaScript rejects the pattern): enough to know whether it is ``local``."""
        if self._regex is None and self.kind == REGEX:
            self._regex = translate_regex_key(self.text) or False  # type: ignore[assignment]
        return self._regex or None


def match_key_text(haystack: str, needle: str, case_sensitive: bool, whole_words: bool,
                   rule: str = SILLYTAVERN) -> bool:
    """SillyTavern's ``matchKeys`` on a full scan text (the slow reference path); ``rule`` is the
    word rule (:data:`~lorescan._match.WORD_RULES`) plain keys match with."""
    rx = parse_regex_key(needle)
    if rx is not None:
        return rx.test(haystack)
    if rule == UNICODE:
        return match_key_unicode(haystack, needle, case_sensitive, whole_words)
    if not case_sensitive:
        haystack = _js.lower(haystack)
        needle = _js.lower(needle)
    if whole_words:
        if len(_js.split_ws(needle)) > 1:
            return needle in haystack
        return find_word(haystack, needle)
    return needle in haystack


def match_key_unicode(haystack: str, needle: str, case_sensitive: bool, whole_words: bool) -> bool:
    """A plain key under the unicode word rule: both texts in comparison form (NFC, and full case
    folding unless case-sensitive); whole words at the edges :func:`~lorescan._match.edge_checks`
    picks, keys with spaces included."""
    haystack, needle = key_form(haystack, case_sensitive), key_form(needle, case_sensitive)
    return unicode_find_word(haystack, needle) if whole_words else needle in haystack


KeyItem = int | Key
_WHITESPACE = re.compile("[" + re.escape(_js.JS_WHITESPACE) + "]")


_LONGEST = partial(max, key=len)
#: words (``str.isalnum``: ``\w`` without ``_``) joined by spaces, none at either end
_PHRASE = re.compile(r"[^\W_]+(?: +[^\W_]+)*").fullmatch


class Needles:
    """Needle ids and the two automata (case-folded and exact) that find them.

    An automaton maps each needle text to its id, or to a tuple of ids when the same text is
    needed both as a whole word and as a substring; ``word`` and ``length`` are per id.
    The word rule's hooks (``rule``, :meth:`key_text`, ``whole_phrases``) are SillyTavern's here;
    :class:`lorescan._keys_unicode.UnicodeNeedles` has the unicode rule's.
    """

    rule = SILLYTAVERN
    whole_phrases = False       # whether a key with spaces is matched as whole words too

    def __init__(self, base: int = 0) -> None:
        self.base = base
        self.ids: dict[tuple[bool, bool], dict[str, int]] = {}   # (case, word) -> needle -> id
        self.newline = False        # whether some needle holds "\n"
        self.word: list[bool] = []
        self.length: list[int] = []
        self.entries: list[list[int]] = []
        # needle text -> its id, or the ids of the same text as a whole word and as a substring
        self._values: tuple[dict[str, int | tuple[int, ...]], ...] = ({}, {})   # case-folded, exact
        self._ci: ahocorasick.Automaton | None = None
        self._cs: ahocorasick.Automaton | None = None
        # Regex needles: a regex key with prefilter needles also gets a needle id, found in a piece
        # of text when a prefilter needle occurs there and the regex matches the piece. Only for
        # regexes whose matches never reach beyond a piece (``JsRegex.local``, decided on first use).
        self._regex_ids: dict[str, int] = {}             # regex key text -> its needle id
        self.regex_on: dict[int, tuple[int, ...]] = {}   # prefilter needle -> regex needles
        self.regex_keys: dict[int, Key] = {}             # regex needle -> a key with that text
        self.regex_live: dict[int, bool] = {}            # regex needle -> whether hits find it
        #: a needle found wherever a regex key's own text is, when the text holds none of its
        #: literals -> those regex needles (see regex_ready)
        self.regex_text_on: dict[int, tuple[int, ...]] = {}
        self.triggers: frozenset[int] = frozenset()      # the prefilter needles of regex needles
        self.text_triggers: frozenset[int] = frozenset()  # the needles of regex keys' own texts
        #: regex needles with such a needle not asked yet whether the regex module takes them (an
        #: answer holds for good: a regex compiles once, and a dead one stays dead)
        self.text_unasked: set[int] = set()
        # Phrase needles (see _add_phrases): a trigger needle -> the phrase needle(s) it leads to,
        # each phrase's text, and the case-sensitive ones (ints and strings: no tuples by the
        # 10,000 for the collector to walk)
        self.phrase_on: dict[int, int | tuple[int, ...]] = {}
        self.phrase_text: dict[int, str] = {}
        self.phrase_cs: set[int] = set()
        self.phrase_triggers: frozenset[int] = frozenset()
        self.deaths = 0                                  # regex needles given up (a search timed out)
        #: the optional C extension (set by the key index that owns these needles), whose
        #: ``collect_hits`` stands in for :meth:`_collect`'s loop; ``None``: the Python loop
        self.native: Any = None

    def add(self, needle: str, cs: bool, word: bool) -> int:
        if len(needle) > MAX_NEEDLE:    # never reached: callers keep longer texts out of the automata
            raise ValueError(f"a needle of {len(needle)} characters is too long for the automata")
        ids = self.ids.get((cs, word))
        if ids is None:
            ids = self.ids[(cs, word)] = {}
        nid = ids.get(needle)
        if nid is None:
            nid = self.base + len(self.word)
            ids[needle] = nid
            self.newline = self.newline or "\n" in needle
            self.word.append(word)
            self.length.append(len(needle))
            self.entries.append([])
            values = self._values[cs]
            old = values.get(needle)
            values[needle] = nid if old is None else (old + (nid,) if type(old) is tuple else (old, nid))  # type: ignore[assignment]
        return nid

    def add_keys(self, raws: Iterable[object], mode: MatchMode) -> dict[object, KeyItem]:
        """Each raw key prepared (:func:`_prepare_raw`): keys that are one word, or words and single
        spaces, become needles in bulk; the rest one by one."""
        cs, ww = mode.case_sensitive, mode.whole_words
        pool = raws if isinstance(raws, set) else set(raws)
        try:
            words = list(filter(str.isalnum, pool))
        except TypeError:   # a key that is not a string
            words = [r for r in pool if type(r) is str and r.isalnum()]
        rest = pool.difference(words)
        # words and single spaces: nothing to trim, and never a whole word (they hold a space)
        try:
            phrases = list(filter(_PHRASE, rest))
        except TypeError:   # a key that is not a string
            phrases = [r for r in rest if type(r) is str and _PHRASE(r)]
        cache: dict[object, KeyItem] = {raw: _prepare_raw(raw, mode, self) for raw in rest.difference(phrases)}
        too_long = self._add_bulk(words, cs, ww, cache)
        too_long += self._add_phrase_keys(phrases, cs, ww, cache)
        for raw in too_long:
            cache[raw] = _prepare_raw(raw, mode, self)
        return cache

    def add_literal(self, text: str) -> int:
        """A regex key's prefilter needle (case-folded, a substring)."""
        return self.add(text, False, False)

    def key_text(self, text: str, cs: bool) -> str:
        """A key's needle text: as it is when case-sensitive, else lowercase."""
        return text if cs else _js.lower(text)

    def _key_texts(self, raws: list[str], cs: bool) -> list[str]:
        """:meth:`key_text` of many keys."""
        return raws if cs else list(map(str.lower, raws))

    def _add_phrase_keys(self, phrases: list[str], cs: bool, ww: bool, cache: dict[object, KeyItem]) -> list[str]:
        """Keys of words and single spaces: substrings found through their longest word (SillyTavern
        never matches a key with a space as a whole word)."""
        return self._add_bulk(phrases, cs, False, cache, phrases=True)

    def _add_bulk(self, raws: list[str], cs: bool, word: bool, cache: dict[object, KeyItem],
                  phrases: bool = False) -> list[str]:
        """``add`` for many needles that hold no newline, with C-level maps. New ``phrases`` (words
        and single spaces) are not put in the automata but found through their longest word (see
        :meth:`find_phrases`): their own trie nodes would be most of the trie. Returns the raw keys
        left out, longer than :data:`MAX_NEEDLE`."""
        texts = self._key_texts(raws, cs)
        too_long: list[str] = []
        if max(map(len, texts), default=0) > MAX_NEEDLE:
            keep = [len(t) <= MAX_NEEDLE for t in texts]
            too_long = [r for r, k in zip(raws, keep) if not k]
            raws, texts = list(compress(raws, keep)), list(compress(texts, keep))
        ids = self.ids.setdefault((cs, word), {})
        new = [t for t in dict.fromkeys(texts) if t not in ids]
        start = self.base + len(self.word)
        fresh = dict(zip(new, range(start, start + len(new))))
        ids.update(fresh)
        self.word.extend(repeat(word, len(new)))
        self.length.extend(map(len, new))
        self.entries.extend([] for _ in range(len(new)))
        if phrases and fresh:
            self._add_phrases(fresh, cs)
            fresh = {}
        values = self._values[cs]
        for text in values.keys() & fresh.keys():   # the same text needed in another mode too
            old, nid = values[text], fresh.pop(text)
            values[text] = old + (nid,) if type(old) is tuple else (old, nid)  # type: ignore[assignment]
        values.update(fresh)
        cache.update(zip(raws, map(ids.__getitem__, texts)))
        return too_long

    def _add_phrases(self, fresh: dict[str, int], cs: bool) -> None:
        """Phrase needles (text -> id), each found through a substring needle for its longest word."""
        texts = list(fresh)
        longest = list(map(_LONGEST, map(str.split, texts, repeat(" "))))
        triggers: dict[object, KeyItem] = {}
        self._add_bulk(longest, cs, False, triggers)
        on = self.phrase_on
        pids = list(fresh.values())
        for pid, tid in zip(pids, map(triggers.__getitem__, longest)):
            got = on.get(tid)  # type: ignore[arg-type]
            on[tid] = pid if got is None else (got, pid) if type(got) is int else got + (pid,)  # type: ignore[index, operator]
        self.phrase_text.update(zip(pids, texts))
        if cs:
            self.phrase_cs.update(pids)

    def find_phrases(self, text: str, lowered: str, found: set[int]) -> None:
        """Add to ``found`` the phrase needles whose longest word was found and that occur in the
        piece (``lowered``: the piece case-folded, where case-insensitive phrases are looked for)."""
        on, phrase, cs = self.phrase_on, self.phrase_text, self.phrase_cs
        for tid in found & self.phrase_triggers:
            pids = on[tid]
            for pid in ((pids,) if type(pids) is int else pids):  # type: ignore[union-attr]
                if phrase[pid] in (text if pid in cs else lowered):
                    found.add(pid)

    def add_regex(self, key: Key, on: tuple[int, ...]) -> int:
        """The regex needle of a regex key with prefilter needles (one per regex text), searched
        for in a piece where one of the needles ``on`` (its literals) occurs."""
        rid = self._regex_ids.get(key.text)
        if rid is None:
            rid = self._regex_ids[key.text] = self.base + len(self.word)
            self.word.append(False)
            self.length.append(0)
            self.entries.append([])
            self.regex_keys[rid] = key
            for nid in on:
                self.regex_on[nid] = self.regex_on.get(nid, ()) + (rid,)
            for nid in key.nids[len(on):]:     # the needle of the key's own text
                self.regex_text_on[nid] = self.regex_text_on.get(nid, ()) + (rid,)
        return rid

    def regex_ready(self, rid: int) -> bool:
        """Whether hits find regex needle ``rid``: its key is a valid JavaScript regex whose matches
        stay within one piece of scan text (``JsRegex.local``), and no search of it timed out.

        Known from the pattern's translation (compiling is the dearer half, and most regex keys
        an entry record asks about are never searched): the regex is compiled when a piece first
        holds one of its literals, or the key's own text (:meth:`find_regexes`), and one the
        ``regex`` module refuses then dies as a timed-out one does, its key plain text from then
        on. Until then the two agree: such a key matches nowhere, and as plain text it would match
        only where its own text is."""
        live = self.regex_live.get(rid)
        if live is None:
            rx = self.regex_keys[rid].translated
            live = self.regex_live[rid] = rx is not None and rx.local
        return live

    def _give_up(self, rid: int) -> None:
        """Regex needle ``rid`` is found no more: its keys go back to the search of the whole text
        (the bound indexes see ``deaths`` move and make their entry records again)."""
        self.regex_live[rid] = False
        self.deaths += 1

    def find_regexes(self, text: str, found: set[int], memo: dict[tuple[str, str, int], object]) -> None:
        """Add to ``found`` (the piece's needles so far) the regex needles that match ``text``.

        A search that times out gives the regex up as a needle (its keys go back to the search of
        the whole text) and leaves a note in ``memo`` so the piece is not searched again."""
        for nid in found & self.text_triggers:   # a key's own text: is it a regex the regex module takes?
            for rid in self.regex_text_on[nid]:     # (asked now, once: a piece's hits are remembered)
                if rid in self.text_unasked:
                    self.text_unasked.discard(rid)
                    if self.regex_ready(rid) and self.regex_keys[rid].regex is None:
                        self._give_up(rid)
        rids: set[int] = set()
        for nid in found & self.triggers:
            rids.update(self.regex_on[nid])
        for rid in rids:
            if not self.regex_ready(rid):
                continue
            key = self.regex_keys[rid]
            rx = key.regex
            if rx is None:      # refused by the regex module when first compiled: plain text
                self._give_up(rid)
                continue
            got = rx.test_or_timeout(text)
            if got:
                found.add(rid)
            elif got is None:   # timed out
                self._give_up(rid)
                for how in range(3):
                    memo[(key.text, text, how)] = TIMED_OUT

    def build(self) -> None:
        self._ci = self._automaton(self._values[False])
        self._cs = self._automaton(self._values[True])
        self._values = ({}, {})
        self.ids = {}                   # only needed while adding
        self._regex_ids = {}
        self.triggers = frozenset(self.regex_on)
        self.text_triggers = frozenset(self.regex_text_on)
        self.text_unasked = set(chain.from_iterable(self.regex_text_on.values()))
        self.phrase_triggers = frozenset(self.phrase_on)

    @staticmethod
    def _automaton(values: dict[str, int | tuple[int, ...]]) -> ahocorasick.Automaton | None:
        if not values:
            return None
        auto = ahocorasick.Automaton()
        deque(map(auto.add_word, values.keys(), values.values()), maxlen=0)   # every needle, in C
        auto.make_automaton()
        return auto

    def collect(self, text: str, lowered: str | None, found: set[int]) -> None:
        if self._cs is not None:
            self._collect(self._cs, text, found)
        if self._ci is not None:
            self._collect(self._ci, lowered if lowered is not None else _js.lower(text), found)

    def _collect(self, auto: ahocorasick.Automaton, text: str, found: set[int]) -> None:
        if self.native is not None:     # the same loop in C
            self.native.collect_hits(auto.iter(text), text, found, self.word, self.length, self.base)
            return
        n = len(text)
        base, word, length = self.base, self.word, self.length
        for end, value in auto.iter(text):
            for nid in ((value,) if type(value) is int else value):
                if nid in found:
                    continue
                if word[nid - base]:
                    start = end - length[nid - base] + 1
                    if start > 0 and is_word_char(text[start - 1]):
                        continue
                    if end + 1 < n and is_word_char(text[end + 1]):
                        continue
                found.add(nid)


def _prepare(raw: object, sub: str, cs: bool, ww: bool, needles: Needles) -> KeyItem:
    """One key after macro substitution: a needle id, or a :class:`Key` for the slow kinds."""
    if not sub:
        return Key(SKIP, raw if isinstance(raw, str) else "")
    text = sub.strip(_js.JS_WHITESPACE)
    if text.startswith("/"):
        m = regex_key_source(text)
        if m is not None:
            # compiled on first use; a literal that every match (and the key as plain text) contains
            # makes the entry a candidate only where that literal occurs
            lits = required_literals(*m)
            nids: tuple[int, ...] = ()
            if lits is not None:
                # Case-folded substring needles: one is present whenever the regex matches (with or
                # without the i flag); the key itself, as plain text, is what matches if JavaScript
                # rejects the pattern, so a piece of it is a needle too unless a literal is one.
                low = _js.lower(text)
                nids = tuple(needles.add_literal(lit[:MAX_NEEDLE]) for lit in lits)   # a start of
                # a literal is found wherever the literal is
                on = nids       # only a literal can lead to a match of the regex: its search needs one
                if not any(lit in low for lit in lits):
                    nids = (*nids, needles.add_literal(_text_needle(low, lits)[:MAX_NEEDLE]))
            key = Key(REGEX, sub, text, cs=cs, ww=ww, nids=nids, rule=needles.rule)
            if nids:
                key.rid = needles.add_regex(key, on)
            return key
    needle = needles.key_text(text, cs)
    if not needle:
        return Key(EMPTY, sub, text)
    if MARKER in needle:
        return Key(SLOW, sub, text, cs=cs, ww=ww, rule=needles.rule)
    if len(needle) > MAX_NEEDLE:    # searched in the scan text, where its start is found
        return Key(SLOW, sub, text, cs=cs, ww=ww, nids=(needles.add(needle[:MAX_NEEDLE], cs, False),),
                   rule=needles.rule)
    # A trimmed needle splits on /\s+/ into more than one piece exactly when it holds whitespace.
    return needles.add(needle, cs, ww and (needles.whole_phrases or _WHITESPACE.search(needle) is None))


def _text_needle(low: str, lits: tuple[str, ...]) -> str:
    """A needle found wherever the regex key's own text ``low`` is: the longest start of one of
    its literals (three characters or more) that occurs in it (its trie nodes are there already),
    else the whole text."""
    best = ""
    for lit in lits:
        for end in range(len(lit) - 1, max(len(best), 2), -1):
            if lit[:end] in low:
                best = lit[:end]
                break
    return best or low[:MAX_NEEDLE]


MACRO = -1   # the prepared form of a raw key with a macro (such keys are prepared per names)


def _prepare_raw(raw: object, mode: MatchMode, needles: Needles) -> KeyItem:
    """A raw key prepared for the name-independent index, or :data:`MACRO` (plain words and
    phrases go through :meth:`Needles.add_keys` in bulk instead)."""
    if type(raw) is not str:
        return _prepare(raw, "", mode.case_sensitive, mode.whole_words, needles)
    if may_change(raw):
        return MACRO
    return _prepare(raw, raw, mode.case_sensitive, mode.whole_words, needles)


def prepare_items(keys: object, cache: dict[object, KeyItem], mode: MatchMode,
                  needles: Needles) -> tuple[KeyItem, ...]:
    """A raw key list prepared: by lookup in ``cache`` (each distinct raw key prepared once), or one
    key at a time for lists with unhashable or non-string keys."""
    if not keys:
        return ()
    try:
        return tuple(map(cache.__getitem__, keys))  # type: ignore[call-overload]
    except (KeyError, TypeError):
        pass
    return tuple(cache[k] if type(k) is str and k in cache else _prepare_raw(k, mode, needles)
                 for k in keys)  # type: ignore[attr-defined]


def prepare_macro(raw: str, env: MacroEnv, mode: MatchMode, needles: Needles,
                   cache: dict[str, KeyItem]) -> KeyItem:
    """A key with a macro, substituted for ``env`` and prepared (cached by its raw text)."""
    item = cache.get(raw)
    if item is None:
        item = cache[raw] = _prepare(raw, substitute(raw, env), mode.case_sensitive, mode.whole_words, needles)
    return item


def register(items: Sequence[KeyItem], gid: int, needles: Needles) -> bool:
    """List entry ``gid`` under its keys' needles; whether it must be checked on every pass."""
    always = False
    for item in items:
        nids = (item,) if type(item) is int else item.nids  # type: ignore[union-attr]
        if nids:
            for nid in nids:
                lst = needles.entries[nid - needles.base]
                if not lst or lst[-1] != gid:
                    lst.append(gid)
        elif item.kind != SKIP:  # type: ignore[union-attr]
            always = True
    return always
