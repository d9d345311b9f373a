"""Key matching: one Aho-Corasick pass over each piece of scan text, then per-entry lookups.

SillyTavern matches every key of every entry against a per-entry scan text
(``"\\x01" + messages.join("\\n\\x01")`` plus injections and the recursion buffer). A plain key can
never span the ``"\\n\\x01"`` joiner, and case folding and the ASCII whole-word rule are local, so
matching each piece (a message, an injected prompt, a recursion text) on its own gives the same
answers: a key is visible to an entry when it hits a message within the entry's scan depth or any
other piece the entry sees. Regex keys, and the rare plain keys that contain ``"\\x01"``, are run
on the exact per-entry text instead.
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

import ahocorasick

from . import _js
from ._jsregex import PIECE_MARKED, JsRegex, parse_regex_key
from .compile import CompiledEntry
from .macros import MacroEnv, substitute

MAX_SCAN_DEPTH = 1000
MARKER = "\x01"
JOINER = "\n\x01"

SKIP, PLAIN, EMPTY, REGEX, SLOW = range(5)  # PLAIN keys are bare needle ids


def is_word_char(ch: str) -> bool:
    """ASCII ``\\w`` (JavaScript regexes without the ``u`` flag)."""
    return ch.isascii() and (ch.isalnum() or ch == "_")


class Key:
    """A key that needs more than an automaton lookup (regex, blank, ``\\x01``, or not matchable).

    Plain keys are stored as bare needle ids (ints) instead; both kinds keep their position in the
    entry's key list so traces can name the raw key.
    """

    __slots__ = ("kind", "text", "_regex", "raw", "cs", "ww", "nids")

    def __init__(self, kind: int, raw: str, text: str = "", regex: JsRegex | None = None,
                 cs: bool = False, ww: bool = False, nids: tuple[int, ...] = ()) -> None:
        self.kind = kind
        self.raw = raw
        self.text = text
        self._regex = regex
        self.cs = cs
        self.ww = ww
        self.nids = nids        # needles one of which every match contains (a prefilter), or ()

    @property
    def regex(self) -> JsRegex | None:
        """The compiled regex, built on first use; ``None`` if JavaScript would reject it (plain text)."""
        if self._regex is None and self.kind == REGEX:
            self._regex = parse_regex_key(self.text) or False  # type: ignore[assignment]
        return self._regex or None


_KEY_SYNTAX = re.compile(r"/([\s\S]+?)/([gimsuy]*)")
_UNESCAPED_SLASH = re.compile(r"(?:^|[^\\])/")
_QUANT = re.compile(r"\{\d+(?:,\d*)?\}")
_LIT_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-'\",:;!@#%&=~<>`")


def _group_end(source: str, i: int) -> int:
    """Index of the ``)`` closing the group opened at ``source[i]`` (``len(source)`` if none)."""
    depth, j, n = 0, i, len(source)
    while j < n:
        d = source[j]
        if d == "\\":
            j += 2
            continue
        if d == "[":
            j += 1
            while j < n and source[j] != "]":
                j += 2 if source[j] == "\\" else 1
        elif d == "(":
            depth += 1
        elif d == ")":
            depth -= 1
            if depth == 0:
                return j
        j += 1
    return n


def _split_top(source: str) -> list[str] | None:
    """``source`` split at its top-level ``|`` (None if a group or class is left open)."""
    parts, depth, start, i, n = [], 0, 0, 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":
            i += 1
            while i < n and source[i] != "]":
                i += 2 if source[i] == "\\" else 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(source[start:i])
            start = i + 1
        i += 1
    if depth:
        return None
    return parts + [source[start:]]


def _literal_alternatives(body: str) -> list[str] | None:
    """The alternatives of a group body when each is plain characters, else None."""
    alts = _split_top(body)
    if alts is None or any(not all(c in _LIT_OK for c in a) for a in alts):
        return None
    return alts


def required_literals(source: str, flags: str, min_len: int = 3, max_alts: int = 8) -> tuple[str, ...] | None:
    """Strings one of which every match of ``/source/flags`` contains (lowercased), or ``None``.

    Runs of plain characters are followed through unquantified groups whose alternatives are plain
    (``dr(?:ag|agon)`` → ``drag``, ``dragon``); a top-level ``|`` takes the union of its branches.
    Conservative: classes, escapes, ``.``, anchors and other groups break runs; a character or group
    followed by ``?``, ``*`` or ``{`` is dropped. Only ASCII letters, digits and a few punctuation
    marks are taken (so ``i`` matching is plain ASCII case folding, and no literal contains ``\\n`` or
    ``\\x01``); ``u`` + ``i`` (where ``ſ`` folds to ``s``) is not prefiltered. The set chosen is the one
    whose shortest string is longest, each at least ``min_len`` long.
    """
    if "u" in flags and "i" in flags:
        return None
    branches = _split_top(source)
    if branches is None:
        return None
    if len(branches) > 1:
        union: set[str] = set()
        for b in branches:
            got = required_literals(b, flags, min_len, max_alts)
            if got is None:
                return None
            union.update(got)
        return tuple(sorted(union)) if len(union) <= max_alts else None
    sets: list[set[str]] = []
    cur: set[str] = {""}
    last: set[str] | None = None       # ``cur`` before the last character or group was added

    def close(keep: set[str]) -> set[str]:
        sets.append(keep)
        return {""}

    i, n = 0, len(source)
    while i < n:
        c = source[i]
        if c == "\\":
            # an escape: skip it whole (\x41, \u{…}, \cA, \k<n>, \p{…} and backreferences run
            # on; taking the characters after those as a run-break is merely conservative)
            cur, last = close(cur), None
            e = source[i + 1:i + 2]
            i += 2
            if e and e in "xuckpP0123456789":
                while i < n and (source[i].isalnum() or source[i] in "{}<>_"):
                    i += 1
            continue
        if c == "[":
            j = i + 1
            while j < n and source[j] != "]":
                j += 2 if source[j] == "\\" else 1
            cur, last, i = close(cur), None, j + 1
            continue
        if c == "(":
            j = _group_end(source, i)
            body = source[i + 1:j]
            if body.startswith("?:"):
                body = body[2:]
            elif body.startswith("?<") and not body.startswith(("?<=", "?<!")):
                body = body[body.find(">") + 1:]
            elif body.startswith("?"):
                body = None  # type: ignore[assignment]  # lookaround or modifiers
            alts = _literal_alternatives(body) if body is not None else None
            if alts is None or len(cur) * len(alts) > max_alts:
                cur, last = close(cur), None
            else:
                last, cur = cur, {a + b for a in cur for b in alts}
            i = j + 1
            continue
        if c == "{":
            q = _QUANT.match(source, i)
            if q is None:              # Annex B: a literal "{" (taken as a break, to be safe)
                cur, last, i = close(cur), None, i + 1
            else:
                cur, last, i = close(last if last is not None else {""}), None, q.end()
            continue
        if c in "?*":
            cur, last = close(last if last is not None else {""}), None
            i += 1
            continue
        if c == "+":
            cur, last = close(cur), None
            i += 1
            continue
        if c in _LIT_OK:
            last, cur = cur, {a + c for a in cur}
        else:
            cur, last = close(cur), None
        i += 1
    sets.append(cur)
    good = [x for x in sets if min(map(len, x)) >= min_len]
    if not good:
        return None
    best = max(good, key=lambda x: (min(map(len, x)), -len(x)))
    return tuple(sorted({x.lower() for x in best}))


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
MACRO = -1


class _Needles:
    """Needle ids and the two automata (case-folded and exact) that find them.

    An automaton maps each needle text to its id, or to a tuple of ids when the same text is
    needed both as a whole word and as a substring; ``word`` and ``length`` are per id.
    """

    def __init__(self, base: int = 0) -> None:
        self.base = base
        self.ids: dict[tuple[str, bool, bool], int] = {}
        self.newline = False        # whether some needle holds "\n"
        self.word: list[bool] = []
        self.length: list[int] = []
        self.entries: list[list[int]] = []
        self._ci: ahocorasick.Automaton | None = None
        self._cs: ahocorasick.Automaton | None = None

    def add(self, needle: str, cs: bool, word: bool) -> int:
        ident = (needle, cs, word)
        nid = self.ids.get(ident)
        if nid is None:
            nid = self.base + len(self.word)
            self.ids[ident] = nid
            self.newline = self.newline or "\n" in needle
            self.word.append(word)
            self.length.append(len(needle))
            self.entries.append([])
        return nid

    def build(self) -> None:
        self._ci = self._automaton(False)
        self._cs = self._automaton(True)

    def _automaton(self, cs: bool) -> ahocorasick.Automaton | None:
        values: dict[str, int | tuple[int, ...]] = {}
        for (needle, ncs, _word), nid in self.ids.items():
            if ncs == cs:
                old = values.get(needle)
                values[needle] = nid if old is None else (old + (nid,) if type(old) is tuple else (old, nid))
        if not values:
            return None
        auto = ahocorasick.Automaton()
        add = auto.add_word
        for needle, value in values.items():
            add(needle, value)
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
                # rejects the pattern, so it is a needle too unless it holds every literal.
                low = text.lower()
                if not all(lit in low for lit in lits):
                    lits = (*lits, low)
                nids = tuple(needles.add(lit, False, False) for lit in lits)
            return Key(REGEX, sub, text, cs=cs, ww=ww, nids=nids)
    needle = text if cs else text.lower()
    if not needle:
        return Key(EMPTY, sub, text)
    if MARKER in needle:
        return Key(SLOW, sub, text, cs=cs, ww=ww)
    # A trimmed needle splits on /\s+/ into more than one piece exactly when it holds whitespace.
    return needles.add(needle, cs, ww and _WHITESPACE.search(needle) is None)


def _modes(ce: CompiledEntry, case_sensitive: bool, whole_words: bool) -> tuple[bool, bool]:
    """The entry's case sensitivity and whole-word matching: its own value ``??`` the setting."""
    ecs, eww = ce.case_sensitive, ce.match_whole_words
    return (case_sensitive if ecs is None else _js.truthy(ecs),
            whole_words if eww is None else _js.truthy(eww))


def _prepare_keys(raws: Sequence[object], env: MacroEnv | None, cs: bool, ww: bool, needles: _Needles,
                  cache: dict[str, KeyItem]) -> tuple[KeyItem, ...]:
    """A key list prepared (macros substituted for ``env`` when given), reusing ``cache``."""
    items: list[KeyItem] = []
    for raw in raws:
        item = cache.get(raw) if type(raw) is str else None
        if item is None:
            if type(raw) is not str:
                sub = ""
            else:
                sub = substitute(raw, env) if env is not None else raw
            item = _prepare(raw, sub, cs, ww, needles)
            if type(raw) is str:
                cache[raw] = item
        items.append(item)
    return tuple(items)


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


def _any_macro(keys: Sequence[object]) -> bool:
    """Whether a key list has a key with a macro (``<USER>``-style or ``{{…}}``)."""
    for raw in keys:
        if type(raw) is str and ("<" in raw or "{{" in raw):
            return True
    return False


class KeyIndex:
    """Every key of every entry, prepared once, with the automata that find them.

    Built per (entries, global case and whole-word settings) and independent of names: keys that
    contain macros are marked and prepared per (user, character) by :meth:`bind`.
    """

    def __init__(self, entries: Sequence[CompiledEntry], case_sensitive: bool, whole_words: bool) -> None:
        self.case_sensitive = case_sensitive
        self.whole_words = whole_words
        self.needles = _Needles()
        self.primary: dict[int, list[KeyItem]] = {}
        self.secondary: dict[int, list[KeyItem]] = {}
        self.always: list[int] = []
        self.macro: list[CompiledEntry] = []
        caches: dict[tuple[bool, bool], dict[str, KeyItem]] = {}   # prepared keys per (case, word)
        needles = self.needles
        for ce in entries:
            keys = ce.keys
            sec = ce.keys_secondary
            if not keys and not sec:
                continue
            if (keys and _any_macro(keys)) or (sec and _any_macro(sec)):
                self.macro.append(ce)
                continue
            cs, ww = _modes(ce, case_sensitive, whole_words)
            cache = caches.get((cs, ww))
            if cache is None:
                cache = caches[(cs, ww)] = {}
            gid = ce.gid
            if keys:
                items = _prepare_keys(keys, None, cs, ww, needles, cache)
                self.primary[gid] = items
                if _register(items, gid, needles):
                    self.always.append(gid)
            if sec:
                self.secondary[gid] = _prepare_keys(sec, None, cs, ww, needles, cache)
        needles.build()
        needles.entries = [tuple(x) for x in needles.entries]   # done growing: tuples are smaller
        needles.ids = {}                                         # only needed while adding
        #: (regex key text, piece, how it is searched) -> whether the regex matches that piece
        #: (see ``ScanBuffer.regex_piecewise``); kept across evaluations like hits.
        self.piece_memo: dict[tuple[str, str, int], bool] = {}
        self._bound: dict[MacroEnv, BoundIndex] = {}

    def bind(self, env: MacroEnv) -> "BoundIndex":
        """This index with macro keys substituted for ``env`` (cached per names)."""
        bound = self._bound.get(env)
        if bound is None:
            if len(self._bound) > 16:
                self._bound.clear()
            bound = BoundIndex(self, env)
            self._bound[env] = bound
        return bound


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
            self.primary = dict(main.primary)
            self.secondary = dict(main.secondary)
            self.always = list(main.always)
            for ce in main.macro:
                cs, ww = _modes(ce, main.case_sensitive, main.whole_words)
                gid = ce.gid
                if ce.keys:
                    items = _prepare_keys(ce.keys, env, cs, ww, over, {})
                    self.primary[gid] = items
                    if _register(items, gid, over):
                        self.always.append(gid)
                if ce.keys_secondary:
                    self.secondary[gid] = _prepare_keys(ce.keys_secondary, env, cs, ww, over, {})
        over.build()
        self.over = over if over.word else None
        self.base = over.base
        self.newline_needles = main.needles.newline or over.newline
        self._hits_cache: dict[str, frozenset[int]] = {}
        self._plain: dict[int, PlainEntry | None] = {}

    def plain(self, ce: CompiledEntry) -> "PlainEntry | None":
        """The entry's :class:`PlainEntry` record, or ``None`` when it needs the full gate (memoised)."""
        gid = ce.gid
        try:
            return self._plain[gid]
        except KeyError:
            rec = self._plain[gid] = _plain_record(ce, self.primary.get(gid, ()), self.secondary.get(gid, ()))
            return rec

    def needle_entries(self, nid: int) -> list[int]:
        if nid < self.base:
            return self.main.needles.entries[nid]
        return self.over.entries[nid - self.base]  # type: ignore[union-attr]

    def hits(self, text: str) -> frozenset[int]:
        """Needle ids found in one piece of scan text (memoised: messages recur across generations)."""
        cached = self._hits_cache.get(text)
        if cached is not None:
            return cached
        found: set[int] = set()
        if text:
            lowered = _js.lower(text)
            self.main.needles.collect(text, lowered, found)
            if self.over is not None:
                self.over.collect(text, lowered, found)
        result = frozenset(found)
        if len(self._hits_cache) > 50000:
            self._hits_cache.clear()
        self._hits_cache[text] = result
        return result


class PlainEntry:
    """An entry whose gate is only its timed effects plus key lookups, prepared for the fast path.

    ``kind`` is :data:`NEVER` (disabled), :data:`CONSTANT` or :data:`KEYED`; the keys are split into
    needle ids (set lookups) and the rest (regex and other :class:`Key` objects); ``secondary`` is
    ``None`` when the secondary keys do not apply; ``logic`` is the selective logic 0–3, or -1 for a
    value equal to none of them; ``depth`` is the entry's own scan depth, or ``None`` for the global one.
    """

    __slots__ = ("kind", "primary", "primary_other", "secondary", "secondary_other", "logic",
                 "exclude_recursion", "depth")

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


NEVER, CONSTANT, KEYED = range(3)


def _split(items: Sequence[KeyItem]) -> tuple[tuple[int, ...], tuple[Key, ...]]:
    return (tuple(k for k in items if type(k) is int),  # type: ignore[misc]
            tuple(k for k in items if type(k) is not int))  # type: ignore[misc]


def _plain_record(ce: CompiledEntry, primary: Sequence[KeyItem], secondary: Sequence[KeyItem]) -> PlainEntry | None:
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
    ints, others = _split(primary)
    sec: tuple[int, ...] | None = None
    sec_others: tuple[Key, ...] = ()
    logic = -1
    if secondary and ce.selective:
        sec, sec_others = _split(secondary)
        v = ce.selective_logic
        if v is None:
            v = 0
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v in (0, 1, 2, 3):
            logic = int(v)
    sd = ce.scan_depth
    return PlainEntry(KEYED, ints, others, sec, sec_others, logic, excl,
                      None if sd is None else _js.to_number(sd))


_AFTER_MARK, _BEFORE_NEWLINE, _ALONE = range(3)


class ScanBuffer:
    """The scan text of one evaluation: messages (newest first), injections, card fields, recursion.

    It answers "does this key match for this entry in this pass" from per-piece hit sets, and builds
    the exact text SillyTavern would scan only when a regex key or an explanation needs it.
    """

    def __init__(self, messages: Sequence[str], injections: Sequence[str],
                 fields: dict[str, str], index: BoundIndex, global_depth: int,
                 skip_empty_recursion: bool) -> None:
        self.index = index
        self.global_depth = global_depth
        self.chat_length = len(messages)
        self.messages = messages
        self._trimmed: list[str | None] = []
        self._present_end: int | None = None
        self.injections = list(injections)
        self.fields = fields
        self.recursion: list[str] = []
        # per recursion text: its hits, and the contents it joins with "\n" (None if not known)
        self._recursion_parts: list[tuple[frozenset[int] | set[int], Sequence[str] | None]] = []
        self.skew = 0
        self.skip_empty_recursion = skip_empty_recursion
        self._scanned = 0
        self._message_hits: list[frozenset[int]] = []   # per scanned message (0 = newest)
        self.first_hit: dict[int, int] = {}
        self.inject_hits: frozenset[int] = frozenset().union(*(index.hits(t) for t in self.injections)) \
            if self.injections else frozenset()
        self.field_hits = {name: index.hits(text) for name, text in fields.items() if text}
        self.recursion_hits: set[int] = set()
        self._text_cache: dict[tuple, str] = {}
        self._regex_cache: dict[tuple, bool] = {}

    # -- depth and message hits -------------------------------------------------------------
    def current_depth(self) -> int:
        return self.global_depth + self.skew

    def entry_depth(self, ce: CompiledEntry) -> float:
        sd = ce.scan_depth
        if sd is None:
            return self.current_depth()
        return _js.to_number(sd)

    def message(self, i: int) -> str | None:
        """Message ``i`` (0 = newest) trimmed, or ``None`` for an empty one (a hole in the buffer)."""
        trimmed = self._trimmed
        while len(trimmed) <= i:
            raw = self.messages[len(trimmed)]
            trimmed.append(_js.trim(raw) if raw else None)
        return trimmed[i]

    def depth_buffer_length(self) -> int:
        """Length of SillyTavern's depth buffer: trailing empty messages leave no slot."""
        if self._present_end is None:
            end = min(len(self.messages), MAX_SCAN_DEPTH)
            while end > 0 and not self.messages[end - 1]:
                end -= 1
            self._present_end = end
        return self._present_end

    def ensure_scanned(self, depth: float) -> None:
        upto = min(self.chat_length, MAX_SCAN_DEPTH, int(depth) if depth == depth else 0)
        hits = self.index.hits
        first = self.first_hit
        per_message = self._message_hits
        for i in range(self._scanned, upto):
            text = self.message(i)
            hs = hits(text) if text else frozenset()
            per_message.append(hs)
            for nid in hs:
                if nid not in first:
                    first[nid] = i
        if upto > self._scanned:
            self._scanned = upto

    def add_recursion(self, text: str, lines: Sequence[str] | None = None) -> None:
        """Append one pass's recursion text (an empty one too, as 1.12 does, unless told not to);
        ``lines`` are the contents it joins with "\\n", whose hits are remembered one by one."""
        if self.skip_empty_recursion and not text:
            return
        self.recursion.append(text)
        index = self.index
        if lines is not None and not index.newline_needles:
            # no needle holds "\n", and "\n" is a word boundary: the text's hits are its lines' hits
            found: set[int] | frozenset[int] = set()
            for line in lines:
                found |= index.hits(line)   # type: ignore[operator]
        else:
            found = index.hits(text)
            lines = None
        self.recursion_hits |= found
        self._recursion_parts.append((found, lines))
        self._text_cache.clear()

    def has_recursion(self) -> bool:
        return bool(self.recursion)

    # -- matching ---------------------------------------------------------------------------
    def visible(self, nid: int, depth: float, with_recursion: bool, fields: tuple[str, ...]) -> bool:
        """Whether plain needle ``nid`` occurs in the scan text of an entry with ``depth``/``fields``."""
        if not depth > 0:
            return depth != depth and self._visible_beyond_messages(nid, with_recursion, fields)
        if self.first_hit.get(nid, MAX_SCAN_DEPTH + 1) < min(depth, MAX_SCAN_DEPTH) // 1:
            return True
        return self._visible_beyond_messages(nid, with_recursion, fields)

    def visible_set(self, depth: float, with_recursion: bool) -> set[int] | frozenset[int]:
        """Every needle :meth:`visible` finds for an entry with ``depth`` and no extra match fields."""
        if not depth > 0:
            if depth != depth:
                return self.inject_hits | self.recursion_hits if with_recursion else self.inject_hits
            return frozenset()
        limit = min(depth, MAX_SCAN_DEPTH) // 1
        found = {nid for nid, i in self.first_hit.items() if i < limit}
        found |= self.inject_hits
        if with_recursion:
            found |= self.recursion_hits
        return found

    def _visible_beyond_messages(self, nid: int, with_recursion: bool, fields: tuple[str, ...]) -> bool:
        if nid in self.inject_hits:
            return True
        if with_recursion and nid in self.recursion_hits:
            return True
        for f in fields:
            hs = self.field_hits.get(f)
            if hs is not None and nid in hs:
                return True
        return False

    def text(self, depth: float, with_recursion: bool, fields: tuple[str, ...]) -> str:
        """The exact text SillyTavern's ``WorldInfoBuffer.get`` builds for an entry."""
        ck = (depth, with_recursion, fields, len(self.recursion))
        got = self._text_cache.get(ck)
        if got is not None:
            return got
        if depth <= 0:
            result = ""
        else:
            d = int(min(depth, MAX_SCAN_DEPTH)) if depth == depth else 0
            d = min(d, self.depth_buffer_length())
            parts = [self.message(i) or "" for i in range(d)]
            result = MARKER + JOINER.join(parts)
            for f in fields:
                value = self.fields.get(f)
                if value:
                    result += JOINER + value
            if self.injections:
                result += JOINER + JOINER.join(self.injections)
            if with_recursion and self.recursion:
                result += JOINER + JOINER.join(self.recursion)
        self._text_cache[ck] = result
        return result

    def key_matches(self, key: KeyItem, ce: CompiledEntry, depth: float, with_recursion: bool) -> bool:
        if type(key) is int:
            return self.visible(key, depth, with_recursion, ce.match_fields)
        kind = key.kind  # type: ignore[union-attr]
        if kind == SKIP:
            return False
        if kind == EMPTY:
            return True
        if kind == REGEX:
            nids = key.nids
            if nids and not any(self.visible(n, depth, with_recursion, ce.match_fields) for n in nids):
                return False
            # The same regex on the same text gives the same answer: remember it for this evaluation.
            ck = (key.text, key.cs, key.ww, depth, with_recursion, ce.match_fields, len(self.recursion))
            got = self._regex_cache.get(ck)
            if got is None:
                rx = key.regex
                if rx is not None and rx.piecewise and depth > 0:
                    got = self.regex_piecewise(key, rx, depth, with_recursion, ce.match_fields)
                else:
                    hay = self.text(depth, with_recursion, ce.match_fields)
                    if rx is None:  # not a valid JavaScript regex: SillyTavern matches it as plain text
                        got = match_key_text(hay, key.text, key.cs, key.ww)
                    else:
                        got = rx.test(hay)
                self._regex_cache[ck] = got
            return got
        hay = self.text(depth, with_recursion, ce.match_fields)
        return match_key_text(hay, key.text, key.cs, key.ww)

    def regex_piecewise(self, key: Key, rx: JsRegex, depth: float, with_recursion: bool,
                        fields: tuple[str, ...]) -> bool:
        """``rx.test(self.text(...))`` piece by piece, for a regex with ``rx.piecewise`` set.

        The text is ``"\\x01" + pieces.join("\\n\\x01")``; each piece's answer is remembered by the
        index across evaluations, so a new generation searches only pieces it has not seen. With a
        prefilter (``key.nids``) only the pieces that contain one of its needles can match.
        """
        d = int(min(depth, MAX_SCAN_DEPTH)) if depth == depth else 0
        d = min(d, self.depth_buffer_length())
        hits = self.index.hits
        # the pieces after the messages: (text, its hits, its lines if it is a recursion text)
        tail: list[tuple[str, frozenset[int] | set[int], Sequence[str] | None]] = []
        for f in fields:
            v = self.fields.get(f)
            if v:
                tail.append((v, self.field_hits[f], None))
        tail += [(t, hits(t), None) for t in self.injections]
        if with_recursion:
            tail += [(t, hs, lines) for t, (hs, lines) in zip(self.recursion, self._recursion_parts)]
        nids = key.nids
        marked = rx.piecewise == PIECE_MARKED
        # (piece, how it is searched): _AFTER_MARK "\x01" + piece, _BEFORE_NEWLINE piece + "\n",
        # _ALONE the piece as it is (the text's last piece, or a recursed content after the first)
        checks: list[tuple[str, int]] = []
        if d:
            self.ensure_scanned(d)
            end = d - 1 if not tail else -1
            if not nids:
                idx: Iterable[int] = range(d)
            else:
                hs = self._message_hits
                first = min(self.first_hit.get(n, d) for n in nids)
                idx = [i for i in range(first, d) if not hs[i].isdisjoint(nids)]
            checks = [(self.message(i) or "", _AFTER_MARK if marked else _ALONE if i == end else _BEFORE_NEWLINE)
                      for i in idx]
        elif not nids:   # no messages: the text still starts with an empty piece
            checks.append(("", _AFTER_MARK if marked else _ALONE if not tail else _BEFORE_NEWLINE))
        end = len(tail) - 1
        for j, (t, hs, lines) in enumerate(tail):
            if nids and hs.isdisjoint(nids):
                continue
            if marked and lines is not None and len(lines) > 1:
                # no match crosses a "\n": each recursed content on its own (they recur)
                checks += [(line, _AFTER_MARK if k == 0 else _ALONE) for k, line in enumerate(lines)
                           if not nids or not hits(line).isdisjoint(nids)]
            else:
                checks.append((t, _AFTER_MARK if marked else _ALONE if j == end else _BEFORE_NEWLINE))
        memo = self.index.main.piece_memo
        text = key.text
        for piece, how in checks:
            mk = (text, piece, how)
            got = memo.get(mk)
            if got is None:
                got = rx.test("\x01" + piece if how == _AFTER_MARK else piece + "\n" if how == _BEFORE_NEWLINE
                              else piece)
                if not rx.timed_out:
                    if len(memo) > 200_000:
                        memo.clear()
                    memo[mk] = got
            if got:
                return True
        return False

    def candidates(self, gids: Iterable[int]) -> set[int]:
        """Entries with a primary needle that occurs anywhere in the scanned pieces."""
        found: set[int] = set(gids)
        ne = self.index.needle_entries
        for nid in self.first_hit:
            found.update(ne(nid))
        for nid in self.inject_hits:
            found.update(ne(nid))
        for nid in self.recursion_hits:
            found.update(ne(nid))
        for hs in self.field_hits.values():
            for nid in hs:
                found.update(ne(nid))
        return found
