"""JavaScript regular expressions for SillyTavern ``/pattern/flags`` keys, run on the ``regex`` module.

A small recursive-descent translator reads the JavaScript pattern (ECMAScript 2025; Annex B rules
when the ``u`` flag is absent) and emits an equivalent ``regex`` (VERSION0) pattern in which every
construct is explicit: ``\\w \\d \\b`` are ASCII, ``\\s`` is JavaScript's whitespace set, ``.``, ``^``
and ``$`` follow JavaScript's line terminators, literals are escaped. Without ``u`` the text is
matched as UTF-16 code units and ``i`` uses JavaScript's ``Canonicalize`` (``toUpperCase`` of a single
unit, never mapping into ASCII from outside it; the classes are dumped from V8 in ``_jsregex_tables``):
sets are expanded explicitly, a run of literals becomes ``(?i:…)`` (fast to search) plus a lookbehind
of explicit sets where ``regex``'s folding, measured per unit, is wider (the Kelvin sign, long s and
U+0130/U+0131 are not k, s, i in JS). ``test`` tries alternatives one by one in long texts (``_expand``).
Searches run with a timeout.

Known differences from JavaScript:

* Captures inside a quantified group are not cleared between iterations, so a backreference after
  such a loop can see a capture from an earlier iteration (JavaScript sees "undefined" = empty).
* JavaScript rejects an iteration beyond the minimum that matches the empty string and backtracks
  into it; ``regex`` accepts it. Only spans and captures differ (e.g. ``/(a*?)+/`` on "a" matches
  "a" in JavaScript and "" here), so ``test`` agrees unless a backreference reads such a capture.
* Lookbehind is matched left-to-right; captures and backreferences inside a lookbehind can differ.
* With ``i``, backreferences compare with ``regex`` simple case folding, not JS ``Canonicalize``;
  with ``u`` + ``i`` all case-insensitive matching uses ``regex``'s simple folding (≈ JS ``scf``;
  its extra pairing of U+0130/U+0131 with i/I is undone explicitly).
* ``\\p{…}`` uses the ``regex`` module's Unicode version; script names are validated by ``regex``,
  ``Changes_When_NFKC_Casefolded`` is unsupported (such a key becomes plain text).
* Quantifier bounds above ``_MAX_REPEAT``: an upper bound becomes unbounded, a lower bound never
  matches (exact for texts shorter than the bound, unless the quantified atom can match empty).
* ``(?i:…)``-style modifier groups and duplicate named groups in different alternatives are accepted
  as in ES2025 (current Chrome/Firefox); older engines (e.g. Node 20) reject them. No ``v`` flag.
* A JavaScript-valid pattern that ``regex`` still refuses to compile becomes plain text (``None``).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import regex

from ._jsregex_tables import from_utf16, utf16
from ._jsregex_translate import CTX, NL, SOH, JsRegexSyntaxError, _Translator
from ._match import split_regex_key

__all__ = ["JsRegex", "JsRegexSyntaxError", "PIECE_MARKED", "PIECE_NEWLINE", "RegexTimeout", "REGEX_TIMEOUT_SECONDS",
           "parse_regex_key", "timeout_count", "translate_regex_key"]

#: Seconds one search may run before it is abandoned (read at call time, so callers may change it).
REGEX_TIMEOUT_SECONDS: float = 0.25
_SPLIT_AT = 256  # test() searches alternatives one by one in texts this long (each search costs ~1.5 µs)
_TIMEOUTS = [0]

#: ``JsRegex.piecewise`` values. In a text ``"\x01" + pieces.join("\n\x01")`` a regex with no
#: anchor, lookaround or ``y`` flag matches exactly when it matches some piece searched on its own
#: as ``"\x01" + piece`` (PIECE_MARKED: no atom can consume "\n", so no match reaches past the
#: piece's own marker) or as ``piece + "\n"``, the last piece without the "\n" (PIECE_NEWLINE: no
#: atom can consume "\x01"). ``\b`` agrees: "\n", "\x01" and the text's ends are all non-word.
PIECE_MARKED, PIECE_NEWLINE = 1, 2

_Runs = tuple[Callable[..., regex.Match[str] | None], ...]  # bound search (or match) methods


class RegexTimeout(Exception):
    """A search exceeded :data:`REGEX_TIMEOUT_SECONDS` (raised only with ``strict=True``)."""


def timeout_count() -> int:
    """How many searches have timed out in this process."""
    return _TIMEOUTS[0]


# --------------------------------------------------------------------------- public API

class JsRegex:
    """A compiled JavaScript ``new RegExp(source, flags)``; raises :class:`JsRegexSyntaxError`.

    ``lazy=True`` translates the pattern (raising for what JavaScript rejects) and leaves the
    ``regex`` module's compile, the dearer half, to the first search or :meth:`compiles`: what a
    key index needs first is whether a regex can be searched piece by piece (:attr:`local`),
    and most keys are never searched."""

    __slots__ = ("source", "flags", "py_pattern", "piecewise", "local", "timed_out", "_opts", "_whole",
                 "_tests", "_utf16", "_branches", "_refused")

    def __init__(self, source: str, flags: str = "", *, lazy: bool = False) -> None:
        if len(set(flags)) != len(flags) or not set(flags) <= set("dgimsuy"):
            raise JsRegexSyntaxError(f"Invalid flags {flags!r}")
        self.source, self.flags = source, flags
        tr = _Translator(source, flags)
        self.py_pattern, self._branches = tr.translate()
        #: How a text made of pieces joined by "\n\x01" may be searched piece by piece (see
        #: :data:`PIECE_MARKED`); 0 when it may not: an anchor, a lookaround or ``y`` sees beyond a
        #: match, or some atom can consume both "\n" and "\x01" (a match could span the joiner).
        self.piecewise = (0 if tr.reach & CTX or "y" in flags else PIECE_MARKED if not tr.reach & NL
                          else PIECE_NEWLINE if not tr.reach & SOH else 0)
        #: Whether no atom can consume "\n" or "\x01" either (and nothing looks beyond a match): then
        #: the regex matches such a text exactly when it matches one of its pieces searched on its
        #: own, whatever surrounds the piece.
        self.local = self.piecewise == PIECE_MARKED and not tr.reach & SOH
        self._opts = regex.VERSION0 | (regex.IGNORECASE if "u" in flags and "i" in flags else 0)
        self._tests: _Runs | None = None
        self._whole: _Runs | None = None
        self._refused: str | None = None      # why the regex module refused the pattern
        self._utf16 = "u" not in flags
        #: Whether the last ``test``/``search_span`` call hit the timeout.
        self.timed_out = False
        if not lazy:
            self._runs()

    def compiles(self) -> bool:
        """Whether the ``regex`` module takes the pattern (compiled now, if it was not yet): a
        pattern JavaScript accepts and ``regex`` refuses is plain text, as if JavaScript refused it."""
        if self._tests is None and self._refused is None:
            try:
                self._runs()
            except JsRegexSyntaxError:
                pass
        return self._refused is None

    def _runs(self) -> _Runs:
        """The searches :meth:`test` tries in long texts (each alternative of a top-level
        alternation on its own), compiled on first use; the whole pattern, when it has none."""
        tests = self._tests
        if tests is None:
            if self._refused is not None:
                raise JsRegexSyntaxError(self._refused)
            branches = self._branches
            split = len(branches) > 1  # then the whole pattern is compiled when first needed
            try:
                compiled = [regex.compile(b, self._opts) for b in (branches if split else [self.py_pattern])]
            except (regex.error, OverflowError, MemoryError, RecursionError) as exc:
                self._refused = f"cannot compile /{self.source}/{self.flags}: {exc}"
                raise JsRegexSyntaxError(self._refused) from exc
            tests = tuple(rx.match if "y" in self.flags else rx.search for rx in compiled)  # y: lastIndex 0
            if not split:
                self._whole = tests
            self._tests = tests
        return tests

    def __repr__(self) -> str:
        return f"JsRegex(/{self.source}/{self.flags})"

    def _one(self) -> _Runs:  # the whole pattern, compiled on first use when test() has branches
        if self._whole is None:
            self._runs()        # refused as the alternatives are, if they are
            if self._whole is not None:
                return self._whole
            rx = regex.compile(self.py_pattern, self._opts)
            self._whole = (rx.match if "y" in self.flags else rx.search,)
        return self._whole

    def _find(self, runs: _Runs, text: str, strict: bool) -> tuple[str, regex.Match[str] | None, bool]:
        """The first match of the first of ``runs`` that matches (they share one time budget), and
        whether the search timed out."""
        s, late = (utf16(text) if self._utf16 else text), False
        t0 = time.monotonic() if len(runs) > 1 else 0.0
        for run in runs:
            try:
                m = run(s, timeout=max(REGEX_TIMEOUT_SECONDS + t0 - time.monotonic(), 1e-6) if t0 else
                        REGEX_TIMEOUT_SECONDS)
            except TimeoutError:
                late = True
                continue
            if m is not None:
                self.timed_out = False
                return s, m, False
        self.timed_out = late
        if late:
            _TIMEOUTS[0] += 1
            if strict:
                raise RegexTimeout(f"/{self.source}/{self.flags} timed out")
        return s, None, late

    def test(self, text: str, *, strict: bool = False) -> bool:
        """``RegExp.prototype.test(text)`` with lastIndex 0; a timeout gives False and sets ``timed_out``."""
        runs = self._runs() if len(text) >= _SPLIT_AT else self._whole or self._one()
        return self._find(runs, text, strict)[1] is not None

    def test_or_timeout(self, text: str) -> bool | None:
        """``test(text)``, or ``None`` when the search timed out. Unlike ``timed_out``, which the
        last search of any thread sets, the answer belongs to this call."""
        runs = self._runs() if len(text) >= _SPLIT_AT else self._whole or self._one()
        _, m, late = self._find(runs, text, False)
        return None if late else m is not None

    def search_span(self, text: str, *, strict: bool = False) -> tuple[int, int] | None:
        """The span (Python indices into ``text``) of the first match, or None (also on timeout)."""
        s, m, _ = self._find(self._whole or self._one(), text, strict)
        if m is None:
            return None
        start, end = int(m.start()), int(m.end())
        if len(s) == len(text):
            return start, end
        return from_utf16(text, start), from_utf16(text, end)


@functools.lru_cache(maxsize=4096)
def parse_regex_key(key: str) -> JsRegex | None:
    """SillyTavern's ``parseRegexFromString``: a :class:`JsRegex`, or ``None`` when the key is plain text."""
    rx = translate_regex_key(key)
    return rx if rx is not None and rx.compiles() else None


@functools.lru_cache(maxsize=4096)
def translate_regex_key(key: str) -> JsRegex | None:
    """:func:`parse_regex_key`'s regex, translated but not compiled yet (``lazy``; the same object
    while cached), or ``None`` when JavaScript rejects it; whether ``regex`` compiles it is
    :meth:`JsRegex.compiles`'s question."""
    parts = split_regex_key(key)
    if parts is None:
        return None
    try:
        return JsRegex(*parts, lazy=True)
    except (JsRegexSyntaxError, RecursionError):
        return None
