"""The key index: every key of every entry prepared once, and the automata that find them.

Plain keys become needle ids in two Aho-Corasick automata (case-folded and exact); regex keys,
blank keys and keys holding ``"\\x01"`` stay :class:`Key` objects, a regex key with prefilter
needles so it is only tried where one occurs. Such a regex key that can only match within one piece
of scan text also gets a regex needle id, added to a text's hits when the regex matches it, so it
is looked up like a plain key. A new multi-word key (a phrase) is not put in the automata (it
would make most of the trie): it is found through its longest word, then looked for in the piece.
Keys with macros are prepared per (user, character) by :meth:`KeyIndex.bind`. Each entry's keys
are prepared when a scan first reaches it; entries with no rare gate then get a
:class:`PlainEntry` record for the engine's fast path.
"""

from __future__ import annotations

import re
from collections import deque
from functools import partial
from itertools import chain, compress, count, repeat
from operator import attrgetter, is_, not_
from typing import Callable, Iterable, Sequence

import ahocorasick

from . import _js
from ._jsregex import JsRegex, parse_regex_key
from ._prefilter import required_literals
from .compile import CompiledEntry
from .macros import MacroEnv, substitute

MARKER = "\x01"
TIMED_OUT = "timed out"   # a piece memo's note: searching this piece timed out
UNBUILT = object()        # an entry whose PlainEntry record is not made yet

SKIP, PLAIN, EMPTY, REGEX, SLOW = range(5)  # PLAIN keys are bare needle ids


def is_word_char(ch: str) -> bool:
    """ASCII ``\\w`` (JavaScript regexes without the ``u`` flag)."""
    return ch.isascii() and (ch.isalnum() or ch == "_")


class Key:
    """A key that needs more than an automaton lookup (regex, blank, ``\\x01``, or not matchable).

    Plain keys are stored as bare needle ids (ints) instead; both kinds keep their position in the
    entry's key list so traces can name the raw key.
    """

    __slots__ = ("kind", "text", "_regex", "raw", "cs", "ww", "nids", "rid")

    def __init__(self, kind: int, raw: str, text: str = "", regex: JsRegex | None = None,
                 cs: bool = False, ww: bool = False, nids: tuple[int, ...] = ()) -> None:
        self.kind = kind
        self.raw = raw
        self.text = text
        self._regex = regex
        self.cs = cs
        self.ww = ww
        self.nids = nids        # needles one of which every match contains (a prefilter), or ()
        self.rid = -1           # a regex key's regex needle (see _Needles.add_regex), or -1

    @property
    def regex(self) -> JsRegex | None:
        """The compiled regex, built on first use; ``None`` if JavaScript would reject it (plain text)."""
        if self._regex is None and self.kind == REGEX:
            self._regex = parse_regex_key(self.text) or False  # type: ignore[assignment]
        return self._regex or None


_KEY_SYNTAX = re.compile(r"/([\s\S]+?)/([gimsuy]*)")
_UNESCAPED_SLASH = re.compile(r"(?:^|[^\\])/")


def _escape_for_word_regex(needle: str) -> str:
    return re.sub(r"[/\-\\^$*+?.()|\[\]{}]", lambda m: "\\" + m.group(0), needle)


def match_key_text(haystack: str, needle: str, case_sensitive: bool, whole_words: bool) -> bool:
    """SillyTavern's ``matchKeys`` on a full scan text (the slow reference path)."""
    rx = parse_regex_key(needle)
    if rx is not None:
        return rx.test(haystack)
    if not case_sensitive:
        haystack = _js.lower(haystack)
        needle = _js.lower(needle)
    if whole_words:
        if len(_js.split_ws(needle)) > 1:
            return needle in haystack
        pattern = r"(?:^|[^A-Za-z0-9_])(" + _escape_for_word_regex(needle) + r")(?:\Z|[^A-Za-z0-9_])"
        return re.search(pattern, haystack) is not None
    return needle in haystack


KeyItem = int | Key
_WHITESPACE = re.compile("[" + re.escape(_js.JS_WHITESPACE) + "]")


_LONGEST = partial(max, key=len)


class _Needles:
    """Needle ids and the two automata (case-folded and exact) that find them.

    An automaton maps each needle text to its id, or to a tuple of ids when the same text is
    needed both as a whole word and as a substring; ``word`` and ``length`` are per id.
    """

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
        self.triggers: frozenset[int] = frozenset()      # the prefilter needles of regex needles
        # Phrase needles (see _add_phrases): a trigger needle -> the phrase needle(s) it leads to,
        # each phrase's text, and the case-sensitive ones (ints and strings: no tuples by the
        # 10,000 for the collector to walk)
        self.phrase_on: dict[int, int | tuple[int, ...]] = {}
        self.phrase_text: dict[int, str] = {}
        self.phrase_cs: set[int] = set()
        self.phrase_triggers: frozenset[int] = frozenset()
        self.deaths = 0                                  # regex needles given up (a search timed out)

    def add(self, needle: str, cs: bool, word: bool) -> int:
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
            values[needle] = nid if old is None else (old + (nid,) if type(old) is tuple else (old, nid))
        return nid

    def add_keys(self, raws: Iterable[object], mode: tuple[bool, bool]) -> dict[object, KeyItem]:
        """Each raw key prepared (:func:`_prepare_raw`): keys that are one word, or words and single
        spaces, become needles in bulk; the rest one by one."""
        cs, ww = mode
        pool = raws if isinstance(raws, set) else set(raws)
        try:
            words = list(filter(str.isalnum, pool))
        except TypeError:   # a key that is not a string
            words = [r for r in pool if type(r) is str and r.isalnum()]
        rest = pool.difference(words)
        # words and single spaces: nothing to trim, and never a whole word (they hold a space)
        phrases = [r for r in rest if type(r) is str and r.replace(" ", "").isalnum()
                   and r[0] != " " and r[-1] != " "]
        cache: dict[object, KeyItem] = {raw: _prepare_raw(raw, mode, self) for raw in rest.difference(phrases)}
        self._add_bulk(words, cs, ww, cache)
        self._add_bulk(phrases, cs, False, cache, phrases=True)
        return cache

    def _add_bulk(self, raws: list[str], cs: bool, word: bool, cache: dict[object, KeyItem],
                  phrases: bool = False) -> None:
        """``add`` for many needles that hold no newline, with C-level maps. New ``phrases`` (words
        and single spaces) are not put in the automata but found through their longest word (see
        :meth:`find_phrases`): their own trie nodes would be most of the trie."""
        texts = raws if cs else list(map(str.lower, raws))
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
            values[text] = old + (nid,) if type(old) is tuple else (old, nid)
        values.update(fresh)
        cache.update(zip(raws, map(ids.__getitem__, texts)))

    def _add_phrases(self, fresh: dict[str, int], cs: bool) -> None:
        """Phrase needles (text -> id), each found through a substring needle for its longest word."""
        texts = list(fresh)
        longest = list(map(_LONGEST, map(str.split, texts, repeat(" "))))
        triggers: dict[object, KeyItem] = {}
        self._add_bulk(longest, cs, False, triggers)
        on = self.phrase_on
        pids = list(fresh.values())
        for pid, tid in zip(pids, map(triggers.__getitem__, longest)):
            got = on.get(tid)   # type: ignore[call-overload]
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
            for pid in ((pids,) if type(pids) is int else pids):
                if phrase[pid] in (text if pid in cs else lowered):
                    found.add(pid)

    def add_regex(self, key: Key) -> int:
        """The regex needle of a regex key with prefilter needles (one per regex text)."""
        rid = self._regex_ids.get(key.text)
        if rid is None:
            rid = self._regex_ids[key.text] = self.base + len(self.word)
            self.word.append(False)
            self.length.append(0)
            self.entries.append([])
            self.regex_keys[rid] = key
            for nid in key.nids:
                self.regex_on[nid] = self.regex_on.get(nid, ()) + (rid,)
        return rid

    def regex_ready(self, rid: int) -> bool:
        """Whether hits find regex needle ``rid``: its key is a valid JavaScript regex whose matches
        stay within one piece of scan text (``JsRegex.local``), and no search of it timed out."""
        live = self.regex_live.get(rid)
        if live is None:
            rx = self.regex_keys[rid].regex
            live = self.regex_live[rid] = rx is not None and rx.local
        return live

    def find_regexes(self, text: str, found: set[int], memo: dict[tuple[str, str, int], object]) -> None:
        """Add to ``found`` (the piece's needles so far) the regex needles that match ``text``.

        A search that times out gives the regex up as a needle (its keys go back to the search of
        the whole text) and leaves a note in ``memo`` so the piece is not searched again."""
        rids: set[int] = set()
        for nid in found & self.triggers:
            rids.update(self.regex_on[nid])
        for rid in rids:
            if not self.regex_ready(rid):
                continue
            key = self.regex_keys[rid]
            rx = key.regex
            if rx.test(text):  # type: ignore[union-attr]
                found.add(rid)
            elif rx.timed_out:  # type: ignore[union-attr]
                self.regex_live[rid] = False
                self.deaths += 1
                for how in range(3):
                    memo[(key.text, text, how)] = TIMED_OUT

    def build(self) -> None:
        self._ci = self._automaton(self._values[False])
        self._cs = self._automaton(self._values[True])
        self._values = ({}, {})
        self.ids = {}                   # only needed while adding
        self._regex_ids = {}
        self.triggers = frozenset(self.regex_on)
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


def _prepare(raw: object, sub: str, cs: bool, ww: bool, needles: _Needles) -> KeyItem:
    """One key after macro substitution: a needle id, or a :class:`Key` for the slow kinds."""
    if not sub:
        return Key(SKIP, raw if isinstance(raw, str) else "")
    text = sub.strip(_js.JS_WHITESPACE)
    if text.startswith("/"):
        m = _KEY_SYNTAX.fullmatch(text)
        if m and not _UNESCAPED_SLASH.search(m.group(1)):
            # compiled on first use; a literal that every match (and the key as plain text) contains
            # makes the entry a candidate only where that literal occurs
            lits = required_literals(m.group(1), m.group(2))
            nids: tuple[int, ...] = ()
            if lits is not None:
                # Case-folded substring needles: one is present whenever the regex matches (with or
                # without the i flag); the key itself, as plain text, is what matches if JavaScript
                # rejects the pattern, so a piece of it is a needle too unless a literal is one.
                low = text.lower()
                if not any(lit in low for lit in lits):
                    lits = (*lits, _text_needle(low, lits))
                nids = tuple(needles.add(lit, False, False) for lit in lits)
            key = Key(REGEX, sub, text, cs=cs, ww=ww, nids=nids)
            if nids:
                key.rid = needles.add_regex(key)
            return key
    needle = text if cs else text.lower()
    if not needle:
        return Key(EMPTY, sub, text)
    if MARKER in needle:
        return Key(SLOW, sub, text, cs=cs, ww=ww)
    # A trimmed needle splits on /\s+/ into more than one piece exactly when it holds whitespace.
    return needles.add(needle, cs, ww and _WHITESPACE.search(needle) is None)


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
    return best or low


_KEYS, _SECONDARY = attrgetter("keys"), attrgetter("keys_secondary")
_MACRO = -1   # the prepared form of a raw key with a macro (such keys are prepared per names)


def _prepare_raw(raw: object, mode: tuple[bool, bool], needles: _Needles) -> KeyItem:
    """A raw key prepared for the name-independent index, or :data:`_MACRO` (plain words and
    phrases go through :meth:`_Needles.add_keys` in bulk instead)."""
    if type(raw) is not str:
        return _prepare(raw, "", mode[0], mode[1], needles)
    if "<" in raw or "{{" in raw:
        return _MACRO
    return _prepare(raw, raw, mode[0], mode[1], needles)


def _items(keys: object, cache: dict[object, KeyItem], mode: tuple[bool, bool],
           needles: _Needles) -> tuple[KeyItem, ...]:
    """A raw key list prepared: by lookup in ``cache`` (each distinct raw key prepared once), or one
    key at a time for lists with unhashable or non-string keys."""
    if not keys:
        return ()
    try:
        return tuple(map(cache.__getitem__, keys))  # type: ignore[call-overload]
    except (KeyError, TypeError):
        pass
    return tuple(cache[k] if type(k) is str and k in cache else _prepare_raw(k, mode, needles)
                 for k in keys)  # type: ignore[union-attr]


_OWN_MODE = attrgetter("case_sensitive", "match_whole_words")
_NO_MODE = (None, None)


def _modes(ecs: object, eww: object, case_sensitive: bool, whole_words: bool) -> tuple[bool, bool]:
    """An entry's case sensitivity and whole-word matching (``ecs``, ``eww``: its own values)
    ``??`` the settings."""
    return (case_sensitive if ecs is None else _js.truthy(ecs),
            whole_words if eww is None else _js.truthy(eww))


def _prepare_macro(raw: str, env: MacroEnv, mode: tuple[bool, bool], needles: _Needles,
                   cache: dict[str, KeyItem]) -> KeyItem:
    """A key with a macro, substituted for ``env`` and prepared (cached by its raw text)."""
    item = cache.get(raw)
    if item is None:
        item = cache[raw] = _prepare(raw, substitute(raw, env), mode[0], mode[1], needles)
    return item


def _register(items: Sequence[KeyItem], gid: int, needles: _Needles) -> bool:
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


class KeyIndex:
    """Every key of every entry, prepared once, with the automata that find them.

    Built per (entries, global case and whole-word settings) and independent of names: keys that
    contain macros are marked and prepared per (user, character) by :meth:`bind`.
    """

    def __init__(self, entries: Sequence[CompiledEntry], case_sensitive: bool, whole_words: bool) -> None:
        self.case_sensitive = case_sensitive
        self.whole_words = whole_words
        self.size = len(entries)    # entries[gid] is the entry numbered gid (Lore's list)
        if entries and (entries[0].gid != 0 or entries[-1].gid != self.size - 1):
            raise ValueError("KeyIndex needs every entry, in gid order")
        self.needles = _Needles()
        #: gid -> its prepared primary / secondary keys (made on first use)
        self.primary = _LazyKeys(entries, "keys", (case_sensitive, whole_words), self.needles)
        self.secondary = _LazyKeys(entries, "keys_secondary", (case_sensitive, whole_words), self.needles)
        self.always: list[int] = []
        #: entries with a key holding a macro: (entry, primary, secondary, mode) with the macro keys
        #: as ``_MACRO`` placeholders, filled per names by :class:`BoundIndex`
        self.macro: list[tuple[CompiledEntry, tuple[KeyItem, ...], tuple[KeyItem, ...], tuple[bool, bool]]] = []
        needles = self.needles
        # Entries grouped by their (case, word) mode; most use the global one.
        default = (case_sensitive, whole_words)
        modes = list(map(_OWN_MODE, entries))
        plain = list(map(_NO_MODE.__eq__, modes))   # entries that keep the global mode
        by_mode: dict[tuple[bool, bool], list[CompiledEntry]] = {default: []}
        if all(plain):
            by_mode[default] = list(entries)
        else:
            by_mode[default] = list(compress(entries, plain))
            own = list(map(not_, plain))
            for ce, (ecs, eww) in zip(compress(entries, own), compress(modes, own)):
                by_mode.setdefault(_modes(ecs, eww, case_sensitive, whole_words), []).append(ce)
        for mode, group in by_mode.items():
            self._add_group(group, mode)
        needles.build()
        needles.entries = [tuple(x) for x in needles.entries]   # done growing: tuples are smaller
        #: (regex key text, piece, how it is searched) -> whether the regex matches that piece, or
        #: TIMED_OUT (see ``ScanBuffer.regex_piecewise``); kept across evaluations like hits.
        self.piece_memo: dict[tuple[str, str, int], object] = {}

    def _add_group(self, group: list[CompiledEntry], mode: tuple[bool, bool]) -> None:
        """Prepare the keys of entries sharing one (case, word) mode: each distinct raw key once
        (plain words in bulk), then every entry's keys by lookup and each needle's entries listed;
        an entry with a macro key goes to :attr:`macro`. Built with C-level maps where it can: this
        runs once per 100k-entry book."""
        needles = self.needles
        klists = list(map(_KEYS, group))
        slists = list(map(_SECONDARY, group))
        try:
            distinct = set(chain.from_iterable(filter(None, klists)))
            distinct.update(chain.from_iterable(filter(None, slists)))
        except TypeError:   # an unhashable key (never a match): prepared where it is used
            distinct = {k for keys in chain(klists, slists) if keys for k in keys if type(k) is str}
        cache = needles.add_keys(distinct, mode)
        gids = [ce.gid for ce in group]
        # Every primary key prepared by lookup, for listing each needle's entries.
        present = list(filter(None, klists))
        try:
            items = list(map(cache.__getitem__, chain.from_iterable(present)))
        except (KeyError, TypeError):   # odd keys: one by one
            items = list(chain.from_iterable(_items(ks, cache, mode, needles) for ks in present))
        owners = list(chain.from_iterable(map(repeat, compress(gids, klists), map(len, present))))
        # Entries with a macro key are prepared per names (BoundIndex); their other keys are
        # listed here like any other. Found from the prepared primary keys and the raw secondary ones.
        macro_raws = set(compress(cache.keys(), map(is_, cache.values(), repeat(_MACRO))))
        macro: set[int] = set()
        if macro_raws:
            at = list(compress(range(len(items)), map(is_, items, repeat(_MACRO))))
            macro.update(map(owners.__getitem__, at))
            for p in at:
                items[p] = _NO_NEEDLE
            sec = list(filter(None, slists))
            try:
                hits = list(map(macro_raws.__contains__, chain.from_iterable(sec)))
            except TypeError:   # an unhashable key
                hits = [type(k) is str and k in macro_raws for k in chain.from_iterable(sec)]
            if any(hits):
                sec_owners = chain.from_iterable(map(repeat, compress(gids, slists), map(len, sec)))
                macro.update(compress(sec_owners, hits))
        if macro:
            where = dict(zip(gids, count()))
            for g in sorted(macro):
                i = where[g]
                self.macro.append((group[i], _items(klists[i], cache, mode, needles),
                                   _items(slists[i], cache, mode, needles), mode))
            self.primary.skip.update(macro)
            self.secondary.skip.update(macro)
        self.primary.add(gids, mode, cache)
        self.secondary.add(gids, mode, cache)
        # Each needle lists its entries (an entry may be listed twice: candidates are sets).
        lists, always = needles.entries, self.always
        for nid, g in zip(items, owners):
            if type(nid) is int:
                lists[nid].append(g)
            elif nid.nids:  # type: ignore[union-attr]
                for n in nid.nids:  # type: ignore[union-attr]
                    lists[n].append(g)
            elif nid.kind != SKIP and (not always or always[-1] != g):  # type: ignore[union-attr]
                always.append(g)   # a key with no needle (regex without literal, blank, "\x01"): every pass

    def bind(self, env: MacroEnv) -> "BoundIndex":
        """This index with macro keys substituted for ``env`` (the caller keeps it per names: a
        cache here would make a reference cycle, and a dropped book would wait for the collector)."""
        return BoundIndex(self, env)


class _LazyKeys:
    """Entries' prepared keys (primary or secondary) by gid, each list prepared on first use from
    the entry's raw keys: a scan reads them only for entries it reaches (a few per evaluation), so
    compiling makes no per-entry tuples. Their needles are in the automata already (every raw key
    is prepared)."""

    __slots__ = ("entries", "field", "default", "modes", "caches", "needles", "skip", "made")

    def __init__(self, entries: Sequence[CompiledEntry], field: str, default: tuple[bool, bool],
                 needles: _Needles) -> None:
        self.entries = entries                      # by gid
        self.field = field                          # "keys" or "keys_secondary"
        self.default = default
        self.modes: dict[int, tuple[bool, bool]] = {}             # gid -> its mode, if not default
        self.caches: dict[tuple[bool, bool], dict[object, KeyItem]] = {}   # mode -> raw key -> item
        self.needles = needles
        self.skip: set[int] = set()                 # entries with a macro key (prepared per names)
        self.made: dict[int, tuple[KeyItem, ...]] = {}

    def add(self, gids: list[int], mode: tuple[bool, bool], cache: dict[object, KeyItem]) -> None:
        """Entries sharing ``mode`` (``cache``: its prepared raw keys)."""
        self.caches[mode] = cache
        if mode != self.default:
            self.modes.update(zip(gids, repeat(mode)))

    def get(self, gid: int, default: object = None) -> object:
        got = self.made.get(gid)
        if got is None:
            if gid in self.skip or not 0 <= gid < len(self.entries):
                return default
            keys = getattr(self.entries[gid], self.field)
            if not keys:
                return default
            mode = self.modes.get(gid, self.default)
            got = self.made[gid] = _items(keys, self.caches[mode], mode, self.needles)
        return got

    def __getitem__(self, gid: int) -> tuple[KeyItem, ...]:
        got = self.get(gid, _ABSENT)
        if got is _ABSENT:
            raise KeyError(gid)
        return got  # type: ignore[return-value]


class _Overlay:
    """A mapping's ``get`` with some more keys (the macro entries' keys for one pair of names) on
    top, without copying the mapping (100k entries)."""

    __slots__ = ("base", "own")

    def __init__(self, base: dict[int, tuple[KeyItem, ...]]) -> None:
        self.base = base
        self.own: dict[int, tuple[KeyItem, ...]] = {}

    def get(self, key: int, default: object = None) -> object:
        got = self.own.get(key, _ABSENT)
        return self.base.get(key, default) if got is _ABSENT else got

    def __getitem__(self, key: int) -> tuple[KeyItem, ...]:
        got = self.own.get(key, _ABSENT)
        return self.base[key] if got is _ABSENT else got  # type: ignore[return-value]

    def __setitem__(self, key: int, value: tuple[KeyItem, ...]) -> None:
        self.own[key] = value


_ABSENT = object()
_NO_NEEDLE = Key(SKIP, "")   # stands for a macro key while the other keys are listed


class BoundIndex:
    """A :class:`KeyIndex` plus the macro keys of one (user, character): what a scan queries."""

    def __init__(self, main: KeyIndex, env: MacroEnv) -> None:
        self.main = main
        self.env = env
        over = _Needles(base=len(main.needles.word))
        self.primary = main.primary
        self.secondary = main.secondary
        self.always = main.always
        if main.macro:
            self.primary = _Overlay(main.primary)       # type: ignore[assignment]
            self.secondary = _Overlay(main.secondary)   # type: ignore[assignment]
            self.always = list(main.always)
            listed = set(main.always)
            caches: dict[tuple[bool, bool], dict[str, KeyItem]] = {}   # keys recur across entries
            for ce, prim, sec, mode in main.macro:
                cache = caches.setdefault(mode, {})
                gid = ce.gid
                if ce.keys:
                    # only the macro keys are prepared here; the others are in the main index
                    fresh = [_prepare_macro(raw, env, mode, over, cache)  # type: ignore[arg-type]
                             for raw, item in zip(ce.keys, prim) if item is _MACRO]
                    it = iter(fresh)
                    self.primary[gid] = tuple(next(it) if item is _MACRO else item for item in prim)
                    if _register(fresh, gid, over) and gid not in listed:
                        self.always.append(gid)
                        listed.add(gid)
                if ce.keys_secondary:
                    self.secondary[gid] = tuple(
                        _prepare_macro(raw, env, mode, over, cache) if item is _MACRO else item  # type: ignore[arg-type]
                        for raw, item in zip(ce.keys_secondary, sec))
        over.build()
        self.over = over if over.word else None
        self.base = over.base
        self.newline_needles = main.needles.newline or over.newline
        self.hits_memo: dict[str, frozenset[int]] = {}   # text -> hits (read directly by hot paths)
        #: the entries listed under a needle id: one list lookup (the overlay's ids follow the main ones)
        self.needle_entries: Callable[[int], Sequence[int]] = (
            main.needles.entries if self.over is None else main.needles.entries + over.entries).__getitem__
        #: per gid: its PlainEntry, None (the entry needs the full gate) or UNBUILT (see :meth:`plain`)
        self.plain_records: list[PlainEntry | None | object] = [UNBUILT] * main.size
        self._deaths = self._count_deaths()

    def _count_deaths(self) -> int:
        return self.main.needles.deaths + (self.over.deaths if self.over is not None else 0)

    def refresh(self) -> None:
        """Forget the entry records if a regex needle was given up since they were made."""
        deaths = self._count_deaths()
        if deaths != self._deaths:
            self._deaths = deaths
            self.plain_records[:] = [UNBUILT] * len(self.plain_records)

    def regex_ready(self, key: Key) -> bool:
        """Whether a regex key is looked up as its regex needle (see :meth:`_Needles.regex_ready`)."""
        rid = key.rid
        if rid < 0:
            return False
        return (self.main.needles if rid < self.base else self.over).regex_ready(rid)  # type: ignore[union-attr]

    def plain(self, ce: CompiledEntry) -> "PlainEntry | None":
        """The entry's :class:`PlainEntry` record, or ``None`` when it needs the full gate (memoised)."""
        gid = ce.gid
        rec = self.plain_records[gid]
        if rec is UNBUILT:
            rec = self.plain_records[gid] = _plain_record(ce, self.primary.get(gid, ()), self.secondary.get(gid, ()),
                                                          self.regex_ready)
        return rec  # type: ignore[return-value]

    def hits(self, text: str) -> frozenset[int]:
        """Needle ids found in one piece of scan text (memoised: messages recur across generations)."""
        cached = self.hits_memo.get(text)
        if cached is not None:
            return cached
        found: set[int] = set()
        if text:
            lowered = _js.lower(text)
            main = self.main.needles
            main.collect(text, lowered, found)
            if self.over is not None:
                self.over.collect(text, lowered, found)
            if main.phrase_triggers:
                main.find_phrases(text, lowered, found)
            if main.triggers:
                main.find_regexes(text, found, self.main.piece_memo)
            if self.over is not None and self.over.triggers:
                self.over.find_regexes(text, found, self.main.piece_memo)
            self.refresh()
        result = frozenset(found)
        if len(self.hits_memo) > 20000:    # messages and recursed contents; about 15 MB at most
            self.hits_memo.clear()
        self.hits_memo[text] = result
        return result


class PlainEntry:
    """An entry whose gate is only its timed effects plus key lookups, prepared for the fast path.

    ``kind`` is :data:`NEVER` (disabled), :data:`CONSTANT` or :data:`KEYED`; the keys are split into
    needle ids (set lookups) and the rest (regex and other :class:`Key` objects); ``secondary`` is
    ``None`` when the secondary keys do not apply; ``logic`` is the selective logic 0–3, or -1 for a
    value equal to none of them; ``depth`` is the entry's own scan depth, or ``None`` for the global one.
    """

    __slots__ = ("kind", "primary", "primary_other", "secondary", "secondary_other", "logic",
                 "exclude_recursion", "depth", "simple")

    def __init__(self, kind: int, primary: tuple[int, ...] = (), primary_other: tuple[Key, ...] = (),
                 secondary: tuple[int, ...] | None = None, secondary_other: tuple[Key, ...] = (),
                 logic: int = -1, exclude_recursion: bool = False, depth: float | None = None) -> None:
        self.kind = kind
        self.primary = primary
        self.primary_other = primary_other
        self.secondary = secondary
        self.secondary_other = secondary_other
        self.logic = logic
        self.exclude_recursion = exclude_recursion
        self.depth = depth
        #: keyed, global depth and plain keys only: gated by set lookups (the engine inlines it)
        self.simple = kind == KEYED and depth is None and not primary_other and not secondary_other


NEVER, CONSTANT, KEYED = range(3)


def _split(items: Sequence[KeyItem], ready: Callable[[Key], bool]) -> tuple[tuple[int, ...], tuple[Key, ...]]:
    """Needle ids (a regex key that is looked up as its regex needle too) and the other keys."""
    ids = [k if type(k) is int else k.rid for k in items if type(k) is int or ready(k)]  # type: ignore[union-attr, arg-type]
    return tuple(ids), tuple(k for k in items if type(k) is not int and not ready(k))  # type: ignore[misc, arg-type]


def _plain_record(ce: CompiledEntry, primary: Sequence[KeyItem], secondary: Sequence[KeyItem],
                  ready: Callable[[Key], bool]) -> PlainEntry | None:
    """A :class:`PlainEntry` unless the entry has a rarer gate (generation triggers, character
    filters, decorators, delay until recursion, extra match fields): those go through ``gate``."""
    if ce.disable:
        return PlainEntry(NEVER)
    if ce.triggers or ce.char_names or ce.char_tags or ce.delay_until_recursion or ce.decorators \
            or ce.match_fields:
        return None
    excl = bool(ce.exclude_recursion)
    if ce.constant:
        return PlainEntry(CONSTANT, exclude_recursion=excl)
    if not isinstance(ce.keys, list) or not ce.keys:
        return PlainEntry(NEVER)
    ints, others = _split(primary, ready)
    sec: tuple[int, ...] | None = None
    sec_others: tuple[Key, ...] = ()
    logic = -1
    if secondary and ce.selective:
        sec, sec_others = _split(secondary, ready)
        v = ce.selective_logic
        if v is None:
            v = 0
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v in (0, 1, 2, 3):
            logic = int(v)
    sd = ce.scan_depth
    return PlainEntry(KEYED, ints, others, sec, sec_others, logic, excl,
                      None if sd is None else _js.to_number(sd))
