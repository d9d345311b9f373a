"""The key index: every key of every entry prepared once (see :mod:`lorescan.keys`), each
needle's entries listed, and the keys with macros prepared per (user, character) by
:meth:`KeyIndex.bind`. Each entry's keys are prepared when a scan first reaches it; entries with no
rare gate then get a :class:`PlainEntry` record for the engine's fast path.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from functools import partial
from itertools import chain, compress, count, islice, repeat
from operator import and_, attrgetter, is_, not_
from typing import TYPE_CHECKING, Any, Final, Literal

from . import _construct, _js
from ._compile import CompiledEntry
from ._keys import MACRO, SKIP, Key, KeyItem, Needles, prepare_items, prepare_macro, register
from ._keys_unicode import UnicodeNeedles
from ._macros import MacroEnv, names_card_macro
from ._match import SILLYTAVERN, UNICODE, MatchMode, fold, nfc

if TYPE_CHECKING:
    from ._plan import Plan

#: the optional C extension, or None (not built, or LORESCAN_NATIVE=0): see _construct
native = _construct.native


class Sentinel(enum.Enum):
    """Markers that are not values: typed, so a checker tells them from the values they stand beside."""

    UNBUILT = "unbuilt"     # an entry whose PlainEntry record is not made yet
    ABSENT = "absent"       # no value under that key


UNBUILT: Final = Sentinel.UNBUILT
_ABSENT: Final = Sentinel.ABSENT
#: pieces of scan text whose hits a bound index remembers, in each of its two memos (messages,
#: which recur across generations; recursed contents, which recur across evaluations and chats;
#: a few MB at most each): past it, the older half is forgotten, so the chats in progress keep
#: theirs (forgetting all of them rescanned every visible message of every chat, 2.7 times the
#: scans per generation of 200 chats in turn)
HITS_MEMO_SIZE = 20_000
#: the needle ids found in one piece of scan text: a tuple, as the memos keep tens of thousands (a
#: frozenset of three ids takes 216 bytes, a tuple 64; every empty one is the same object)
Hits = tuple[int, ...]
_KEYS, _SECONDARY = attrgetter("keys"), attrgetter("keys_secondary")


def make_room(memo: dict[Any, Any], size: int) -> None:
    """Before adding to a memo bounded at ``size``: when full, its older half is forgotten (dicts
    keep insertion order), so what is in use now stays."""
    if len(memo) >= size:
        for old in list(islice(memo, size // 2)):
            del memo[old]


_GID = attrgetter("gid")
_CS, _WW = attrgetter("case_sensitive"), attrgetter("match_whole_words")   # an entry's own modes


def _modes(ecs: object, eww: object, case_sensitive: bool, whole_words: bool,
           word_rule: str = SILLYTAVERN) -> MatchMode:
    """An entry's case sensitivity and whole-word matching (``ecs``, ``eww``: its own values)
    ``??`` the settings."""
    return MatchMode.of(case_sensitive if ecs is None else _js.truthy(ecs),
                        whole_words if eww is None else _js.truthy(eww), word_rule)



class KeyIndex:
    """Every key of every entry, prepared once, with the automata that find them.

    Built per (entries, global case and whole-word settings) and independent of names: keys that
    contain macros are marked and prepared per (user, character) by :meth:`bind`.
    """

    def __init__(self, entries: Sequence[CompiledEntry], case_sensitive: bool, whole_words: bool,
                 word_rule: str = SILLYTAVERN) -> None:
        self.case_sensitive = case_sensitive
        self.whole_words = whole_words
        self.word_rule = word_rule
        self.size = len(entries)    # entries[gid] is the entry numbered gid (Lore's list)
        if entries and (entries[0].gid != 0 or entries[-1].gid != self.size - 1):
            raise ValueError("KeyIndex needs every entry, in gid order")
        self.needles = UnicodeNeedles() if word_rule == UNICODE else Needles()
        self.needles.native = native
        #: gid -> its prepared primary / secondary keys (made on first use)
        default = MatchMode.of(case_sensitive, whole_words, word_rule)
        self.primary = _LazyKeys(entries, "keys", default, self.needles)
        self.secondary = _LazyKeys(entries, "keys_secondary", default, self.needles)
        self.always: list[int] = []
        #: entries with a key holding a macro: (entry, primary, secondary, mode) with the macro keys
        #: as ``MACRO`` placeholders, filled per names by :class:`BoundIndex`
        self.macro: list[tuple[CompiledEntry, tuple[KeyItem, ...], tuple[KeyItem, ...], MatchMode]] = []
        #: whether a macro key names one of the card's macros: else keys bind to the names alone
        self.card_macros = False
        #: every distinct macro key (what a bind substitutes)
        self.macro_texts: set[str] = set()
        needles = self.needles
        self._add_groups(entries, default)
        needles.build()
        # done growing: tuples are smaller, and the collector stops walking tuples of ints
        needles.entries = list(map(tuple, needles.entries))  # type: ignore[arg-type]
        #: (regex key text, piece, how it is searched) -> whether the regex matches that piece, or
        #: TIMED_OUT (see ``ScanBuffer.regex_piecewise``); kept across evaluations like hits.
        self.piece_memo: dict[tuple[str, str, int], object] = {}
        #: what every pair of names shares (see :class:`BoundIndex`): the hits of this index's own
        #: needles in contents, and in messages when no needle depends on the names; with macro
        #: keys, the entry records of the entries without one (by gid; made while the needles'
        #: deaths were ``shared_deaths``)
        self.main_hits: dict[str, Hits] = {}
        self.main_content_hits: dict[str, Hits] = {}
        self.macro_gids = frozenset(ce.gid for ce, _, _, _ in self.macro)
        self.shared_records: list[PlainEntry | None | Literal[Sentinel.UNBUILT]] = \
            [UNBUILT] * self.size if self.macro else []
        self.shared_deaths = self.needles.deaths

    def _add_groups(self, entries: Sequence[CompiledEntry], default: MatchMode) -> None:
        """The entries grouped by their (case, word) mode (most use the global one), each group's
        keys added."""
        case_sensitive, whole_words, word_rule = self.case_sensitive, self.whole_words, self.word_rule
        cs_own, ww_own = list(map(_CS, entries)), list(map(_WW, entries))
        plain = list(map(and_, map(is_, cs_own, repeat(None)), map(is_, ww_own, repeat(None))))
        by_mode: dict[MatchMode, list[CompiledEntry]] = {default: []}
        if all(plain):
            by_mode[default] = list(entries)
        else:
            by_mode[default] = list(compress(entries, plain))
            own = list(map(not_, plain))
            for ce, ecs, eww in zip(compress(entries, own), compress(cs_own, own), compress(ww_own, own)):
                by_mode.setdefault(_modes(ecs, eww, case_sensitive, whole_words, word_rule), []).append(ce)
        for mode, group in by_mode.items():
            self._add_group(group, mode)

    def _add_group(self, group: list[CompiledEntry], mode: MatchMode) -> None:
        """Prepare the keys of entries sharing one (case, word) mode: each distinct raw key once
        (plain words in bulk), then every entry's keys by lookup and each needle's entries listed;
        an entry with a macro key goes to :attr:`macro`. Built with C-level maps where it can: this
        runs once per 100k-entry book."""
        needles = self.needles
        # each entry's key lists and gid, and every key: in one pass in C, else here
        read = native.key_lists(CompiledEntry, group) if native is not None else None
        if read is not None:
            klists, slists, gids, distinct = read
        else:
            klists, slists, gids = list(map(_KEYS, group)), list(map(_SECONDARY, group)), list(map(_GID, group))
            try:
                distinct = set(chain.from_iterable(filter(None, klists)))
                distinct.update(chain.from_iterable(filter(None, slists)))
            except TypeError:   # an unhashable key (never a match): prepared where it is used
                distinct = {k for keys in chain(klists, slists) if keys for k in keys if type(k) is str}
        cache = needles.add_keys(distinct, mode)
        # Every primary key prepared by lookup and each needle's entries listed; entries with a macro
        # key (their places in the group) are prepared per names (BoundIndex), their other keys
        # listed like any other.
        if native is not None:      # the same in one pass in C
            macro = set(native.index_keys(klists, gids, cache, needles.entries, self.always, SKIP, MACRO,
                                          partial(prepare_items, cache=cache, mode=mode, needles=needles)))
        else:
            macro = self._list_keys(klists, gids, cache, mode)
        macro_raws = set(compress(cache.keys(), map(is_, cache.values(), repeat(MACRO))))
        self.macro_texts.update(r for r in macro_raws if type(r) is str)
        self.card_macros = self.card_macros or any(names_card_macro(r) for r in macro_raws if type(r) is str)
        if macro_raws:      # and entries with a macro secondary key
            sec = list(filter(None, slists))
            try:
                hits = list(map(macro_raws.__contains__, chain.from_iterable(sec)))
            except TypeError:   # an unhashable key
                hits = [type(k) is str and k in macro_raws for k in chain.from_iterable(sec)]
            if any(hits):
                macro.update(compress(chain.from_iterable(map(repeat, compress(count(), slists), map(len, sec))), hits))
        for i in sorted(macro, key=gids.__getitem__):
            self.macro.append((group[i], prepare_items(klists[i], cache, mode, needles),
                               prepare_items(slists[i], cache, mode, needles), mode))
        self.primary.skip.update(map(gids.__getitem__, macro))
        self.secondary.skip.update(map(gids.__getitem__, macro))
        self.primary.add(gids, mode, cache)
        self.secondary.add(gids, mode, cache)

    def _list_keys(self, klists: list[Any], gids: list[int], cache: dict[object, KeyItem], mode: MatchMode) -> set[int]:
        """Each entry's primary keys prepared by lookup and listed under their needles (an entry may
        be listed twice: candidates are sets), but macro keys; the places of the entries with a
        macro key. ``index_keys`` in ``_csrc/listing.c`` does the same in one pass."""
        needles = self.needles
        present = list(filter(None, klists))
        try:
            items = list(map(cache.__getitem__, chain.from_iterable(present)))
        except (KeyError, TypeError):   # odd keys: one by one
            items = list(chain.from_iterable(prepare_items(ks, cache, mode, needles) for ks in present))
        owners = list(chain.from_iterable(map(repeat, compress(gids, klists), map(len, present))))
        at = list(compress(range(len(items)), map(is_, items, repeat(MACRO))))
        for p in at:
            items[p] = _NO_NEEDLE
        _list_entries(items, owners, needles.entries, self.always, SKIP)
        if not at:
            return set()
        places = list(chain.from_iterable(map(repeat, compress(count(), klists), map(len, present))))
        return set(map(places.__getitem__, at))

    def bind(self, env: MacroEnv) -> BoundIndex:
        """This index with macro keys substituted for ``env`` (the caller keeps it per names: a
        cache here would make a reference cycle, and a dropped book would wait for the collector)."""
        return (UnicodeBoundIndex if self.word_rule == UNICODE else BoundIndex)(self, env)


def _list_entries(items: list[KeyItem], owners: list[int], lists: list[list[int]], always: list[int],
                  skip: int) -> None:
    """Each owner's gid listed under its prepared key's needles: an int is a needle id; a Key is
    listed under its prefilter needles, or, with none and not of kind ``skip``, its entry is
    searched on every pass (``always``: a regex without a literal, a blank key, ``"\\x01"``).
    ``index_keys`` in ``_csrc/listing.c`` does the same as it lists."""
    for nid, g in zip(items, owners):
        if type(nid) is int:
            lists[nid].append(g)
        elif nid.nids:  # type: ignore[union-attr]
            for n in nid.nids:  # type: ignore[union-attr]
                lists[n].append(g)
        elif nid.kind != skip and (not always or always[-1] != g):  # type: ignore[union-attr]
            always.append(g)


class _LazyKeys:
    """Entries' prepared keys (primary or secondary) by gid, each list prepared on first use from
    the entry's raw keys: a scan reads them only for entries it reaches (a few per evaluation), so
    compiling makes no per-entry tuples. Their needles are in the automata already (every raw key
    is prepared)."""

    __slots__ = ("entries", "field", "default", "modes", "caches", "needles", "skip", "made")

    def __init__(self, entries: Sequence[CompiledEntry], field: str, default: MatchMode,
                 needles: Needles) -> None:
        self.entries = entries                      # by gid
        self.field = field                          # "keys" or "keys_secondary"
        self.default = default
        self.modes: dict[int, MatchMode] = {}             # gid -> its mode, if not default
        self.caches: dict[MatchMode, dict[object, KeyItem]] = {}   # mode -> raw key -> item
        self.needles = needles
        self.skip: set[int] = set()                 # entries with a macro key (prepared per names)
        self.made: dict[int, tuple[KeyItem, ...]] = {}

    def add(self, gids: list[int], mode: MatchMode, cache: dict[object, KeyItem]) -> None:
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
            got = self.made[gid] = prepare_items(keys, self.caches[mode], mode, self.needles)
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


_NO_NEEDLE = Key(SKIP, "")   # stands for a macro key while the other keys are listed


class BoundIndex:
    """A :class:`KeyIndex` plus the macro keys of one (user, character): what a scan queries."""

    def __init__(self, main: KeyIndex, env: MacroEnv) -> None:
        self.main = main
        self.env = env
        over = type(main.needles)(base=len(main.needles.word))
        over.native = main.needles.native
        self.primary = main.primary
        self.secondary = main.secondary
        self.always = main.always
        if main.macro:
            self.primary = _Overlay(main.primary)  # type: ignore[arg-type, assignment]
            self.secondary = _Overlay(main.secondary)  # type: ignore[arg-type, assignment]
            self.always = list(main.always)
            listed = set(main.always)
            caches: dict[MatchMode, dict[str, KeyItem]] = {}   # keys recur across entries
            for ce, prim, sec, mode in main.macro:
                cache = caches.setdefault(mode, {})
                gid = ce.gid
                if ce.keys:
                    # only the macro keys are prepared here; the others are in the main index
                    fresh = [prepare_macro(raw, env, mode, over, cache)
                             for raw, item in zip(ce.keys, prim) if item is MACRO]
                    it = iter(fresh)
                    self.primary[gid] = tuple(next(it) if item is MACRO else item for item in prim)  # type: ignore[index]
                    if register(fresh, gid, over) and gid not in listed:
                        self.always.append(gid)
                        listed.add(gid)
                if ce.keys_secondary:
                    self.secondary[gid] = tuple(  # type: ignore[index]
                        prepare_macro(raw, env, mode, over, cache) if item is MACRO else item
                        for raw, item in zip(ce.keys_secondary, sec))
        over.build()
        self.over = over if over.word else None
        self.base = over.base
        self.newline_needles = main.needles.newline or over.newline
        #: text -> hits (read directly by hot paths); the main index's own when no needle depends
        #: on the names, so every pair of names shares it
        self.hits_memo: dict[str, Hits] = main.main_hits if self.over is None else {}
        #: the same for entry contents (recursion text), apart: a batch's stream of new messages
        #: would otherwise push out the contents, which recur in every chat
        self.content_memo: dict[str, Hits] = main.main_content_hits if self.over is None else {}
        #: the entries listed under a needle id: one list lookup (the overlay's ids follow the main ones)
        self.needle_lists: list[list[int]] = (main.needles.entries if self.over is None
                                              else main.needles.entries + over.entries)
        self.needle_entries: Callable[[int], Sequence[int]] = self.needle_lists.__getitem__
        #: per gid: its PlainEntry, None (the entry needs the full gate) or UNBUILT (see :meth:`plain`);
        #: those of entries without a macro key as other names' evaluations made them
        self.plain_records: list[PlainEntry | None | Literal[Sentinel.UNBUILT]] = self._shared_records()
        self._tables: dict[object, PlaceTables] = {}
        self._deaths = self._count_deaths()
        self.used = 0       # when its Lore last handed it out (see Lore._index)

    def _shared_records(self) -> list[PlainEntry | None | Literal[Sentinel.UNBUILT]]:
        main = self.main
        if main.shared_records and main.shared_deaths == main.needles.deaths:
            return list(main.shared_records)
        if main.shared_records:     # a regex needle was given up since they were made
            main.shared_records, main.shared_deaths = [UNBUILT] * main.size, main.needles.deaths
        return [UNBUILT] * main.size

    def _count_deaths(self) -> int:
        return self.main.needles.deaths + (self.over.deaths if self.over is not None else 0)

    def refresh(self) -> None:
        """Forget the entry records if a regex needle was given up since they were made."""
        deaths = self._count_deaths()
        if deaths != self._deaths:
            self._deaths = deaths
            self.plain_records[:] = [UNBUILT] * len(self.plain_records)
            self._tables = {}

    def place_tables(self, plan: Plan, size: int) -> PlaceTables:
        """The simple records' needles by place in ``plan``'s scan order (see :class:`PlaceTables`),
        made on first use and filled as the engine meets the entries."""
        got = self._tables.get(plan)
        if got is None:
            got = PlaceTables(size, plan.pos, self.needle_lists)
            tables = dict(self._tables)     # published whole: another thread may be reading
            tables[plan] = got
            self._tables = tables
        return got

    def regex_ready(self, key: Key) -> bool:
        """Whether a regex key is looked up as its regex needle (see :meth:`Needles.regex_ready`)."""
        rid = key.rid
        if rid < 0:
            return False
        return (self.main.needles if rid < self.base else self.over).regex_ready(rid)  # type: ignore[union-attr]

    def plain(self, ce: CompiledEntry) -> PlainEntry | None:
        """The entry's :class:`PlainEntry` record, or ``None`` when it needs the full gate (memoised)."""
        gid = ce.gid
        rec = self.plain_records[gid]
        if rec is UNBUILT:
            deaths = self._count_deaths()
            rec = _plain_record(ce, self.primary.get(gid, ()), self.secondary.get(gid, ()), self.regex_ready)  # type: ignore[arg-type]
            if self._count_deaths() == deaths:   # else a regex needle it used may have died meanwhile
                self.plain_records[gid] = rec
                main = self.main
                if main.shared_records and gid not in main.macro_gids and main.shared_deaths == main.needles.deaths:
                    main.shared_records[gid] = rec      # the same for every pair of names
        return rec

    def hits(self, text: str) -> Hits:
        """Needle ids found in one piece of scan text (memoised: messages recur across generations)."""
        cached = self.hits_memo.get(text)
        if cached is not None:
            return cached
        return self._remember(text, self.hits_memo, None)

    def content_hits(self, text: str) -> Hits:
        """:meth:`hits` for an entry's content (recursion text), remembered in :attr:`content_memo`."""
        cached = self.content_memo.get(text)
        if cached is not None:
            return cached
        return self._remember(text, self.content_memo, self.main.main_content_hits)

    def _remember(self, text: str, memo: dict[str, Hits], shared: dict[str, Hits] | None) -> Hits:
        """The hits of ``text``, remembered in ``memo``; with needles of the names' own, the main
        needles' part is taken from (or left in) ``shared``, the main index's memo, for other
        names to take. Only for contents: they recur in every chat, while another pair of names
        is nearly always another chat, whose messages are its own (and a memo more cost a new
        message 3 % more instructions)."""
        found: set[int] = set()
        if text and shared is not None and memo is not shared and self.splits_hits:
            lowered = _js.lower(text)
            main_hits = shared.get(text)
            if main_hits is None:
                self._find_main(text, lowered, found)
                self.refresh()
                make_room(shared, HITS_MEMO_SIZE)
                shared[text] = main_hits = tuple(found)
            own: set[int] = set()
            self._find_over(text, lowered, own)
            self.refresh()
            result = main_hits if not own else (*main_hits, *own)     # the two sets of ids are apart
        else:
            if text:
                self._find(text, found)
                self.refresh()
            result = tuple(found)      # () when empty: one object for every piece without a needle
        make_room(memo, HITS_MEMO_SIZE)
        memo[text] = result
        return result

    #: whether :meth:`_find` is :meth:`_find_main` then :meth:`_find_over` (neither reads the
    #: other's needles), so the main needles' hits can be shared by every pair of names
    splits_hits = True

    def _find(self, text: str, found: set[int]) -> None:
        """Add the needle ids found in ``text`` (not empty) to ``found``."""
        lowered = _js.lower(text)
        self._find_main(text, lowered, found)
        self._find_over(text, lowered, found)

    def _find_main(self, text: str, lowered: str, found: set[int]) -> None:
        """The main index's needles found in ``text``: its automaton, phrases and regex needles."""
        main = self.main.needles
        main.collect(text, lowered, found)
        if main.phrase_triggers:
            main.find_phrases(text, lowered, found)
        if main.triggers:
            main.find_regexes(text, found, self.main.piece_memo)

    def _find_over(self, text: str, lowered: str, found: set[int]) -> None:
        """The names' own needles (the macro keys') found in ``text``. Their ids follow the main
        needles', and their regex needles' triggers are their own: what :meth:`_find_main` adds to
        ``found`` changes nothing here."""
        over = self.over
        if over is not None:
            over.collect(text, lowered, found)
            if over.triggers:
                over.find_regexes(text, found, self.main.piece_memo)


class UnicodeBoundIndex(BoundIndex):
    """A :class:`BoundIndex` under the unicode word rule: the automata read each piece of text in
    comparison form (NFC; folded for the case-insensitive automaton). Regex keys are unaffected:
    they run on the text as written, and their prefilter needles are looked for in its
    SillyTavern form (lowercase, not normalised) whenever the comparison form differs from it."""

    splits_hits = False     # the regex needles' triggers are looked for with both automata at once

    def _find(self, text: str, found: set[int]) -> None:
        exact, folded = nfc(text), fold(text)
        main = self.main.needles
        main.collect(exact, folded, found)
        if self.over is not None:
            self.over.collect(exact, folded, found)
        if main.phrase_triggers:
            main.find_phrases(exact, folded, found)
        if main.literals or (self.over is not None and self.over.literals):  # type: ignore[attr-defined]
            self._regex_hits(text, exact, folded, found)

    def _regex_hits(self, text: str, exact: str, folded: str, found: set[int]) -> None:
        """Add the regex keys' prefilter needles found in the text's SillyTavern form (lowercase,
        not normalised: what a regex reads), and the regex needles whose regex matches ``text``."""
        lowered = _js.lower(text)
        if exact == text and folded == lowered:
            trig = set(found)
        else:
            trig = set()
            self.main.needles.collect(text, lowered, trig)
            if self.over is not None:
                self.over.collect(text, lowered, trig)
        for needles in (self.main.needles, self.over):
            if needles is None:
                continue
            found.update(trig & needles.literals)  # type: ignore[attr-defined]
            if needles.triggers:
                probe = trig & needles.triggers | trig & needles.text_triggers
                needles.find_regexes(text, probe, self.main.piece_memo)
                found.update(probe.difference(trig))


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


class PlaceTables:
    """A plan's entry records by place in scan order, so that a pass gates them without reading the
    entry or its record.

    With the C extension, ``gates`` holds, in compact arrays, the simple records'
    (:attr:`PlainEntry.simple`) needle ids, and which places are constant or never candidates, and
    gates them itself. Without it, ``primary[i]`` holds the primary needle ids of a simple record
    without secondary keys (not excluded from recursion) and ``secondary[i]`` ``(primary,
    secondary, logic)`` of one with them; ``None`` in both for any other entry and for one not met
    yet. Each place is written once, with what its record says."""

    __slots__ = ("primary", "secondary", "gates", "bitmap")

    def __init__(self, size: int, pos: list[int], needle_lists: list[list[int]]) -> None:
        #: with the C extension: the records by place, and the candidates' order (``pos``: each
        #: entry's place, by gid; ``needle_lists``: the entries listed under each needle)
        self.gates = native.PlaceGates(size, pos, needle_lists) if native is not None else None
        #: the visible needles as the bitmap ``gates`` reads (with the C extension)
        self.bitmap: Callable[[set[int] | frozenset[int]], bytes] = native.bitmap if native is not None else bytes
        self.primary: list[tuple[int, ...] | None] = [None] * (0 if self.gates is not None else size)
        self.secondary: list[tuple[tuple[int, ...], tuple[int, ...], int] | None] = \
            [None] * (0 if self.gates is not None else size)

    def note(self, place: int, rec: PlainEntry) -> None:
        """Write down the record met at ``place`` (what the tables hold of it)."""
        gates = self.gates
        if gates is not None:
            if rec.kind != KEYED:       # 3: constant, 4: never a candidate
                gates.note(place, 3 if rec.kind == CONSTANT else 4, (), None, -1, rec.exclude_recursion)
            elif rec.simple:
                # needle ids only, at the global depth (gating entries with a depth of their own in
                # C, from a bitmap of every needle visible there, cost 4.7 % more instructions)
                gates.note(place, 1 if rec.secondary is None else 2, rec.primary, rec.secondary, rec.logic,
                           rec.exclude_recursion)
        elif rec.simple and not rec.exclude_recursion:
            if rec.secondary is None:
                self.primary[place] = rec.primary
            else:
                self.secondary[place] = (rec.primary, rec.secondary, rec.logic)

    def noted(self, place: int) -> bool:
        """Whether the record at ``place`` was written down."""
        if self.gates is not None:
            return self.gates.noted(place)
        return self.primary[place] is not None or self.secondary[place] is not None


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
