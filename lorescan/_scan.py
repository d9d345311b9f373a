"""Key matching: one Aho-Corasick pass over each piece of scan text, then per-entry lookups.

SillyTavern matches every key of every entry against a per-entry scan text
(``"\\x01" + messages.join("\\n\\x01")`` plus injections and the recursion buffer). A plain key can
never span the ``"\\n\\x01"`` joiner, and case folding and the ASCII whole-word rule are local, so
matching each piece (a message, an injected prompt, a recursion text) on its own gives the same
answers: a key is visible to an entry when it hits a message within the entry's scan depth or any
other piece the entry sees. A regex key whose matches cannot span the joiner (no anchor or
lookaround, and no atom that can consume ``"\\n"``, or none that can consume ``"\\x01"``) is likewise
searched piece by piece, each piece's answer kept across evaluations (one that can consume neither
and has a prefilter is found with the hits, as a regex needle: see ``index.py``); other regex keys,
and the rare plain keys that contain ``"\\x01"``, are run on the exact per-entry text.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import compress
from operator import attrgetter, not_
from typing import Any, TypeVar, cast

from . import _index, _js
from ._compile import CompiledEntry
from ._index import BoundIndex, Hits, make_room
from ._jsregex import PIECE_MARKED, JsRegex
from ._keys import EMPTY, MARKER, REGEX, SKIP, TIMED_OUT, Key, KeyItem, match_key_text
from ._macros import MacroEnv, substitute
from ._model import ChatMessage

MAX_SCAN_DEPTH = 1000
JOINER = "\n\x01"


_AFTER_MARK, _BEFORE_NEWLINE, _ALONE = range(3)
_NONE: Hits = ()


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
        # per recursion text: its hits, and the contents it joins with "\n" and the hits of each
        # (None when not known)
        self._recursion_parts: list[tuple[Collection[int], Sequence[str] | None, list[Hits] | None]] = []
        self.skew = 0
        self.skip_empty_recursion = skip_empty_recursion
        self._scanned = 0
        self._message_hits: list[Hits] = []   # per scanned message (0 = newest)
        self._unions: dict[int, frozenset[int]] = {}     # n -> hits of the newest n messages
        self._first: dict[int, int] = {}     # needle -> the newest of the first _first_n messages holding it
        self._first_n = 0
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
        if len(trimmed) <= i:
            trim = _js.trim
            trimmed += [trim(raw) if raw else None for raw in self.messages[len(trimmed):i + 1]]
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
        # SillyTavern reads no message at a depth of NaN or at most 0, and at most MAX_SCAN_DEPTH
        upto = min(self.chat_length, MAX_SCAN_DEPTH, int(min(depth, MAX_SCAN_DEPTH)) if depth > 0 else 0)
        start = self._scanned
        if upto > start:
            m, index = self.messages, self.index
            if _index.native is not None and type(m) is ScanMessages and type(index).hits is BoundIndex.hits:
                # the same two steps in C, ScanMessages._get and BoundIndex.hits taking what it leaves
                _index.native.scan_window(m._cache, m.kept, m._length, m.chat, m.named, m.include_names, m._get,
                                          self._trimmed, _js.JS_WHITESPACE, start, upto, self._message_hits, _NONE,
                                          index.hits_memo, index.hits)
            else:
                self.message(upto - 1)      # every message up to there, trimmed
                hits = index.hits
                self._message_hits += [hits(text) if text else _NONE for text in self._trimmed[start:upto]]
            self._scanned = upto

    def add_recursion(self, text: str, lines: Sequence[str] | None = None) -> None:
        """Append one pass's recursion text (an empty one too, as 1.12 does, unless told not to);
        ``lines`` are the contents it joins with "\\n", whose hits are remembered one by one."""
        if self.skip_empty_recursion and not text:
            return
        self.recursion.append(text)
        index = self.index
        got: list[Hits] | None = None
        if lines is not None and not index.newline_needles:
            # no needle holds "\n", and "\n" is a word boundary: the text's hits are its lines' hits,
            # remembered ones as they are (an empty set too: most contents hold no needle)
            found: Collection[int]
            if _index.native is not None and type(lines) is list:     # the same in C
                got, found = _index.native.lines_hits(lines, index.content_memo, index.content_hits)
            else:
                hits, memo = index.content_hits, index.content_memo.get
                got = [h if (h := memo(line)) is not None else hits(line) for line in lines]
                found = set().union(*got)
        else:
            found, lines = index.hits(text), None
        self.recursion_hits.update(found)
        self._recursion_parts.append((found, lines, got))
        self._text_cache.clear()

    def has_recursion(self) -> bool:
        return bool(self.recursion)

    # -- matching ---------------------------------------------------------------------------
    def message_hits(self, depth: float) -> frozenset[int]:
        """Needles in the messages an entry with scan depth ``depth`` (> 0) reads (scanned ones)."""
        n = min(int(min(depth, MAX_SCAN_DEPTH) // 1), self._scanned)
        got = self._unions.get(n)
        if got is None:
            got = self._unions[n] = frozenset().union(*self._message_hits[:n])
        return got

    def visible(self, nid: int, depth: float, with_recursion: bool, fields: tuple[str, ...]) -> bool:
        """Whether plain needle ``nid`` occurs in the scan text of an entry with ``depth``/``fields``."""
        if not depth > 0:
            return depth != depth and self._visible_beyond_messages(nid, with_recursion, fields)
        if nid in self.message_hits(depth):
            return True
        return self._visible_beyond_messages(nid, with_recursion, fields)

    def visible_set(self, depth: float, with_recursion: bool) -> set[int] | frozenset[int]:
        """Every needle :meth:`visible` finds for an entry with ``depth`` and no extra match fields."""
        if not depth > 0:
            if depth != depth:
                return self.inject_hits | self.recursion_hits if with_recursion else self.inject_hits
            return frozenset()
        found = self.message_hits(depth)
        if self.inject_hits:
            found = found | self.inject_hits
        if with_recursion and self.recursion_hits:
            found = found | self.recursion_hits
        return found

    def depth_hits(self, depth: float, with_recursion: bool) -> DepthHits | set[int] | frozenset[int]:
        """What :meth:`visible_set` gives, for an entry with its own scan depth: the same needles,
        looked up where they are instead of joined into one set (valid until the next recursion
        text is added). An evaluation meets a few such depths in every pass, and joining each one's
        messages with the recursion text's needles cost more than all their entries' lookups."""
        if not depth > 0:
            return self.visible_set(depth, with_recursion)
        n = min(int(min(depth, MAX_SCAN_DEPTH) // 1), self._scanned)
        first = self._first
        if self._first_n < n:
            hs = self._message_hits
            for i in range(self._first_n, n):      # newer messages first: the first index kept
                for nid in hs[i]:
                    if nid not in first:
                        first[nid] = i
            self._first_n = n
        return DepthHits(first, n, self.inject_hits, self.recursion_hits if with_recursion else _NO_HITS)

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
        rk = cast(Key, key)    # checked by type() above (faster than isinstance, opaque to mypy)
        kind = rk.kind
        if kind == SKIP:
            return False
        if kind == EMPTY:
            return True
        if kind == REGEX:
            if rk.rid >= 0 and self.index.regex_ready(rk):
                return self.visible(rk.rid, depth, with_recursion, ce.match_fields)
            nids = rk.nids
            if nids and not any(self.visible(n, depth, with_recursion, ce.match_fields) for n in nids):
                return False
            # The same regex on the same text gives the same answer: remember it for this evaluation.
            ck = (rk.text, rk.cs, rk.ww, depth, with_recursion, ce.match_fields, len(self.recursion))
            got = self._regex_cache.get(ck)
            if got is None:
                rx = rk.regex
                if rx is not None and rx.piecewise and depth > 0:
                    got = self.regex_piecewise(rk, rx, depth, with_recursion, ce.match_fields)
                else:
                    hay = self.text(depth, with_recursion, ce.match_fields)
                    if rx is None:  # not a valid JavaScript regex: SillyTavern matches it as plain text
                        got = match_key_text(hay, rk.text, rk.cs, rk.ww, rk.rule)
                    else:
                        got = rx.test(hay)
                self._regex_cache[ck] = got
            return got
        hay = self.text(depth, with_recursion, ce.match_fields)
        return match_key_text(hay, rk.text, rk.cs, rk.ww, rk.rule)

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
        tail: list[tuple[str, Collection[int], list[tuple[str, Hits]] | None]] = []
        for f in fields:
            v = self.fields.get(f)
            if v:
                tail.append((v, self.field_hits[f], None))
        tail += [(t, hits(t), None) for t in self.injections]
        if with_recursion:
            tail += [(t, hs, None if got is None else list(zip(lines, got)))   # type: ignore[arg-type]
                     for t, (hs, lines, got) in zip(self.recursion, self._recursion_parts)]
        nids = key.nids
        needles = frozenset(nids)       # a piece's hits are a tuple (or a set): looked up in this
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
                idx = [i for i in range(d) if not needles.isdisjoint(hs[i])]
            checks = [(self.message(i) or "", _AFTER_MARK if marked else _ALONE if i == end else _BEFORE_NEWLINE)
                      for i in idx]
        elif not nids:   # no messages: the text still starts with an empty piece
            checks.append(("", _AFTER_MARK if marked else _ALONE if not tail else _BEFORE_NEWLINE))
        end = len(tail) - 1
        for j, (t, piece_hits, lines) in enumerate(tail):
            if nids and needles.isdisjoint(piece_hits):
                continue
            if marked and lines is not None and len(lines) > 1:
                # no match crosses a "\n": each recursed content on its own (they recur)
                checks += [(line, _AFTER_MARK if k == 0 else _ALONE) for k, (line, lh) in enumerate(lines)
                           if not nids or not needles.isdisjoint(lh)]
            else:
                checks.append((t, _AFTER_MARK if marked else _ALONE if j == end else _BEFORE_NEWLINE))
        memo = self.index.main.piece_memo
        text = key.text
        for piece, how in checks:
            mk = (text, piece, how)
            got = memo.get(mk)
            if got is None:
                got = rx.test_or_timeout("\x01" + piece if how == _AFTER_MARK else piece + "\n"
                                         if how == _BEFORE_NEWLINE else piece)
                if got is None:   # timed out
                    # as one search of the whole text would: no match, and one timeout's worth of
                    # time (the pieces left are not tried); not remembered, so tried again next time
                    return False
                if len(memo) > 100_000:
                    memo.clear()
                memo[mk] = got
            elif got is TIMED_OUT:   # noted when the regex needle's search timed out on this piece
                return False
            if got:
                return True
        return False

    def candidates(self, gids: Iterable[int]) -> Candidates:
        """Entries with a primary needle that occurs anywhere in the scanned pieces, and ``gids``."""
        needles = (self.message_hits(MAX_SCAN_DEPTH), self.inject_hits, frozenset(self.recursion_hits),
                   *self.field_hits.values())
        return Candidates(gids, needles, self.index.needle_entries)


_NO_HITS: frozenset[int] = frozenset()


class DepthHits:
    """The needles visible at one scan depth (:meth:`ScanBuffer.depth_hits`): those of the newest
    ``n`` messages (``first`` maps a needle to the newest message holding it), of the injections
    and of the recursion texts. Answers ``in`` and ``isdisjoint`` as the joined set would."""

    __slots__ = ("first", "n", "inject", "recursion")

    def __init__(self, first: dict[int, int], n: int, inject: Collection[int], recursion: Collection[int]) -> None:
        self.first, self.n, self.inject, self.recursion = first, n, inject, recursion

    def __contains__(self, nid: object) -> bool:
        i = self.first.get(nid)     # type: ignore[call-overload]
        return (i is not None and i < self.n) or nid in self.inject or nid in self.recursion

    def isdisjoint(self, ids: Iterable[int]) -> bool:
        first, n, inject, recursion = self.first, self.n, self.inject, self.recursion
        for nid in ids:
            i = first.get(nid)
            if (i is not None and i < n) or nid in inject or nid in recursion:
                return False
        return True


class Candidates:
    """A pass's candidates before recursion: the entries ``gids``, and those listed under the
    needles in ``needles`` (sets of needle ids), expanded only when :attr:`entries` is read (the C
    extension's ``scan_order`` reads the needles' lists itself)."""

    __slots__ = ("gids", "needles", "_listed", "_entries")

    def __init__(self, gids: Iterable[int], needles: tuple[Collection[int], ...],
                 listed: Callable[[int], Sequence[int]]) -> None:
        self.gids = gids
        self.needles = needles
        self._listed = listed
        self._entries: set[int] | None = None

    @property
    def entries(self) -> set[int]:
        """Every candidate's gid."""
        if self._entries is None:
            found: set[int] = set(self.gids)
            for hs in self.needles:
                found.update(*map(self._listed, hs))
            self._entries = found
        return self._entries


_IS_SYSTEM = attrgetter("is_system")


def kept_indexes(chat: Sequence[ChatMessage], start: int = 0, stop: int | None = None) -> Sequence[int]:
    """Indexes (ascending, in ``chat[start:stop]``) of the messages that are not system messages
    (with the C extension, a ``range`` when there is none: the common case)."""
    stop = len(chat) if stop is None else stop
    if _index.native is not None and isinstance(chat, list) and start >= 0:     # the same in C
        return _index.native.kept_indexes(chat, start, stop, ChatMessage)
    return list(compress(range(start, stop), map(not_, map(_IS_SYSTEM, chat[start:stop]))))


_Chat = TypeVar("_Chat")


class KnownChat(list):
    """A chat of :class:`ChatMessage` objects whose non-system message indexes (``kept``, ascending)
    its maker already knows, as a :class:`~lorescan._replay.Session` does: evaluating it neither
    checks the messages' types nor reads every message again."""

    kept: Sequence[int] = ()


def known_chat(chat: _Chat) -> _Chat:
    """``chat`` as a :class:`KnownChat` (a copy of the list, its kept indexes read now) when it is a
    list of :class:`ChatMessage` objects, with the C extension; else ``chat`` itself. One pass in C
    both checks the messages' types and reads which are system messages, for an evaluation that
    starts now (a long chat given as a list was read twice: about 0.14 µs a message in all)."""
    if _index.native is None or type(chat) is not list:
        return chat
    items = cast("list[Any]", chat)
    kept = _index.native.kept_indexes(items, 0, len(items), ChatMessage, True)
    if kept is None:
        return chat
    known = KnownChat(items)
    known.kept = kept
    return cast(_Chat, known)


class ScanMessages(Sequence[str]):
    """The chat as ``checkWorldInfo`` receives it, built lazily: newest first, ``"name: mes"``.

    System messages are dropped, a swipe drops the last message, and the first message of the chat
    gets macro substitution. Only the messages a scan reaches are ever formatted.
    """

    def __init__(self, chat: Sequence[ChatMessage], generation_type: str, include_names: bool,
                 env: MacroEnv, named: dict[str, str] | None = None,
                 substituted: dict[str, str] | None = None) -> None:
        self.chat = chat
        self.include_names = include_names
        self.env = env
        #: texts with the macros of ``env`` substituted, by text, kept by the caller (the first
        #: message is substituted again by every generation that reaches it)
        self.substituted = substituted
        #: ``"name: mes"`` by ``mes``, kept by the caller across evaluations (a chat's messages
        #: recur in every later generation): the same string object each time, whose hash is known
        self.named = named if named is not None and include_names else None
        # indexes into ``chat`` of the kept messages, ascending (built in C: a replay passes long chats)
        self.kept = chat.kept if type(chat) is KnownChat else kept_indexes(chat)
        length = len(self.kept)
        if generation_type == "swipe" and length:
            length -= 1
        self._length = length
        self._cache: dict[int, str] = {}

    def __len__(self) -> int:
        return self._length

    def _get(self, i: int) -> str:
        got = self._cache.get(i)
        if got is None:
            j = self.kept[self._length - 1 - i]
            # the fields read from the model's __dict__ at once: each attribute read of a pydantic
            # model goes through its class's __getattr__ hook (slow, and not specialised)
            fields = self.chat[j].__dict__
            mes = fields.get("mes")
            if not isinstance(mes, str):
                mes = ""
            name = fields.get("name", "")
            if j == 0:      # the first message gets macros, then is formatted like the others
                mes = self._first(mes)
            if self.named is not None:
                got = _named(self.named, name, mes)
            else:
                got = f"{name}: {mes}" if self.include_names else mes
            self._cache[i] = got
        return got

    def _first(self, mes: str) -> str:
        """The first message's text with the macros substituted (remembered in :attr:`substituted`)."""
        memo = self.substituted
        if memo is None:
            return substitute(mes, self.env)
        got = memo.get(mes)
        if got is None:
            got = memo[mes] = substitute(mes, self.env)
        return got

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self._get(k) for k in range(*i.indices(self._length))]
        if i < 0:
            i += self._length
        if not 0 <= i < self._length:
            raise IndexError(i)
        return self._get(i)


#: how many formatted messages a :class:`ScanMessages` caller keeps (the older half goes first)
NAMED_SIZE = 20_000


def _named(memo: dict[str, str], name: str, mes: str) -> str:
    """``f"{name}: {mes}"``, the same object while ``memo`` keeps it. Kept by ``mes`` alone (no
    key tuple per message: the memo holds tens of thousands): a kept string is
    ``f"{n}: {mes}"`` for the name ``n`` it was made with, which is ``name`` when the lengths agree
    and it starts with ``name``."""
    got = memo.get(mes)
    if got is None or len(got) != len(name) + 2 + len(mes) or not got.startswith(name):
        make_room(memo, NAMED_SIZE)
        got = memo[mes] = f"{name}: {mes}"
    return got


def scan_messages(chat: Sequence[ChatMessage], generation_type: str, include_names: bool,
                  env: MacroEnv) -> list[str]:
    """The whole chat as ``checkWorldInfo`` receives it (see :class:`ScanMessages`)."""
    return list(ScanMessages(chat, generation_type, include_names, env))
