"""The JavaScript → ``regex`` pattern translator behind :mod:`lorescan._jsregex` (see its notes).

``_Translator(source, flags).translate()`` reads a JavaScript pattern and returns the ``regex``
pattern plus the branches ``test`` may search one by one; ``reach`` tells which characters its atoms
can consume and whether it looks beyond a match (what ``JsRegex.piecewise`` is decided from).
"""

from __future__ import annotations

import itertools
import re
from typing import cast

from ._jsregex_tables import js_cases, js_partners, property_name, regex_cases, utf16

_MAX_REPEAT = 100_000
_MAXCP = 0x10FFFF
NL, SOH, CTX = 1, 2, 4  # _Translator.reach bits: consumes "\n" / consumes "\x01" / anchor or lookaround

Intervals = list[tuple[int, int]]
_Item = int | tuple[Intervals, list[str]]  # a class atom: one code unit, or a set


class JsRegexSyntaxError(ValueError):
    """``new RegExp(source, flags)`` would throw (or the pattern cannot be expressed)."""


# --------------------------------------------------------------------------- character sets

def _norm(iv: Intervals) -> Intervals:
    out: Intervals = []
    for lo, hi in sorted(iv):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def _complement(iv: Intervals) -> Intervals:
    out: Intervals = []
    nxt = 0
    for lo, hi in _norm(iv):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    return out + [(nxt, _MAXCP)] if nxt <= _MAXCP else out


def _lit(cp: int) -> str:
    """One code point as a ``regex`` literal that is special nowhere (in or out of a set)."""
    if cp < 128 and chr(cp).isalnum():
        return chr(cp)
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def _body(iv: Intervals) -> str:
    return "".join(_lit(lo) if lo == hi else _lit(lo) + ("" if hi == lo + 1 else "-") + _lit(hi)
                   for lo, hi in _norm(iv))


def _chars(s: str) -> Intervals:
    return [(ord(c), ord(c)) for c in s]


def _cls(body: str, negated: bool) -> str:
    if negated:
        return "[^" + body + "]" if body else _ANY
    return "[" + body + "]" if body else _NEVER


_ANY = "[\\x00-\\U0010ffff]"
_NEVER = "(?:(?!))"
_DIGIT: Intervals = [(0x30, 0x39)]
_WORD: Intervals = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_WORD_UI: Intervals = _WORD + [(0x17F, 0x17F), (0x212A, 0x212A)]  # JS \w with u+i
_LT = _chars("\n\r\u2028\u2029")
_SPACE = _norm(_chars("\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") + [(0x2000, 0x200A)])
#: U+0130 and U+0131 themselves: regex's IGNORECASE pairs them with i/I (so the class is read
#: case-sensitively, or it would match I too); JS simple folding does not
_TURK = "(?-i:[\\u0130\\u0131])"
_TURKISH_I = (0x49, 0x69, 0x130, 0x131)
_WUI = f"(?!{_TURK})[{_body(_WORD)}]"  # with IGNORECASE, regex folding adds U+017F/U+212A as JS does
_BOUNDARY_UI = {"b": f"(?:(?<={_WUI})(?!{_WUI})|(?<!{_WUI})(?={_WUI}))",
                "B": f"(?:(?<={_WUI})(?={_WUI})|(?<!{_WUI})(?!{_WUI}))"}
_ANCHOR = {("^", False): "\\A", ("$", False): "\\Z",
           ("^", True): f"(?<![^{_body(_LT)}])", ("$", True): f"(?![^{_body(_LT)}])"}


# --------------------------------------------------------------------------- translator

_SYNTAX = set("^$\\.*+?()[]{}|/")
_CONTROL = {"f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
_HEX = set("0123456789abcdefABCDEF")
_DIGITS = set("0123456789")
_NAME_ESC = re.compile(r"u(?:([0-9a-fA-F]{4})|\{([0-9a-fA-F]+)\})")
_BRACED = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_DECIMAL = re.compile(r"[0-9]+")
_PROP = re.compile(r"\{([A-Za-z0-9_=]+)\}")
_U4 = re.compile(r"[0-9a-fA-F]{4}")
_UBRACE = re.compile(r"\{([0-9a-fA-F]+)\}")
_TRAIL = re.compile(r"\\u([dD][c-fC-F][0-9a-fA-F]{2})")
_MODIFIERS = re.compile(r"\?([ims]*)(?:-([ims]*))?:")


_Piece = str | tuple[str, list[str]]  # regex text, or a plain group: (opening, alternatives)


class _Zero(str):
    """The ``regex`` text of an assertion (it matches the empty string)."""


def _render(parts: list[_Piece]) -> str:
    return "".join(p if isinstance(p, str) else p[0] + "|".join(p[1]) + ")" for p in parts)


def _expand(parts: list[_Piece]) -> list[str]:
    """Branches that match where ``parts`` does, a group after nothing but assertions distributed
    (``\\b(?:a|b)c`` → ``\\bac``, ``\\bbc``): without backreferences captures cannot change whether a
    match exists, and ``x(a|b)y`` matches where ``xay`` or ``xby`` does, so ``test`` may search them one
    by one (``regex`` is slow at alternation, fast at a branch that starts with a literal)."""
    k = next((k for k, p in enumerate(parts) if not isinstance(p, _Zero)), len(parts))
    if k == len(parts) or isinstance(parts[k], str):
        return [_render(parts)]
    head, tail = _render(parts[:k]), _render(parts[k + 1:])
    return [head + alt + tail for alt in parts[k][1]]


def _name_char(k: int, ch: str) -> bool:
    """May ``ch`` stand at index ``k`` of a JavaScript identifier (ID_Start/ID_Continue, ``$ _ ZWNJ ZWJ``)?"""
    return ch in "$_" or bool(k and ch in "\u200c\u200d") or ("a" + ch if k else ch).isidentifier()


class _Translator:
    """One-shot JavaScript-pattern → ``regex``-pattern translation (``translate()``)."""

    def __init__(self, source: str, flags: str) -> None:
        self.u = "u" in flags
        self.src = source if self.u else utf16(source)
        self.n, self.pos, self.cap, self.ndisj = len(self.src), 0, 0, 0
        self.i, self.m, self.s = "i" in flags, "m" in flags, "s" in flags
        self.open: list[int] = []  # capture groups being parsed
        self.path: list[tuple[int, int]] = []  # (disjunction id, alternative index) from the root
        self.seen: dict[str, list[tuple[tuple[int, int], ...]]] = {}
        self.names: dict[str, list[int]] = {}
        self.ncaps = self._prescan()
        self.last, self.refs = 0, False  # the last literal code unit read; any backreference seen?
        self.reach = 0  # NL / SOH: some atom can consume "\n" / "\x01"; CTX: an anchor or lookaround

    def err(self, msg: str) -> JsRegexSyntaxError:
        return JsRegexSyntaxError(f"{msg} at {self.pos} in /{self.src}/")

    def peek(self, k: int = 0) -> str:
        return self.src[self.pos + k] if self.pos + k < self.n else ""

    def _prescan(self) -> int:
        """Count capturing groups and collect group names (they decide what ``\\k`` and ``\\N`` mean)."""
        src, count, i, in_cls = self.src, 0, 0, False
        while i < self.n:
            c = src[i]
            if c == "\\":
                i += 1
            elif in_cls:
                in_cls = c != "]"
            elif c == "[":
                in_cls = True
            elif c == "(" and not src.startswith("?", i + 1):
                count += 1
            elif c == "(" and src.startswith("?<", i + 1) and src[i + 3:i + 4] not in ("=", "!"):
                count += 1
                self.names.setdefault(self._read_name(i + 3)[0], []).append(count)
            i += 1
        return count

    def _read_name(self, i: int) -> tuple[str, int]:
        """The GroupName ``name>`` starting at ``i``: the decoded name and the index after ``>``."""
        out: list[str] = []
        while i < self.n and self.src[i] != ">":
            c = self.src[i]
            if c == "\\":
                m = _NAME_ESC.match(self.src, i + 1)
                if not m or int(m.group(1) or m.group(2), 16) > _MAXCP:
                    raise self.err("Invalid capture group name")
                c, i = chr(int(m.group(1) or m.group(2), 16)), m.end() - 1
            out.append(c)
            i += 1
        try:
            name = "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            name = ""
        if i >= self.n or not name or not all(_name_char(k, ch) for k, ch in enumerate(name)):
            raise self.err("Invalid capture group name")
        return name, i + 1

    # ---- structure

    def translate(self) -> tuple[str, list[str]]:
        """The ``regex`` pattern, and branches whose matches together are its matches (``_expand``)."""
        top = self.disjunction()
        if self.pos < self.n:
            raise self.err("Unmatched ')'")
        branches = [] if self.refs else [b for alt in top for b in _expand(alt)]
        return "|".join(map(_render, top)), branches

    def disjunction(self) -> list[list[_Piece]]:
        """The alternatives, each a list of pieces; runs of unquantified literal code units are merged."""
        did, alts = self.ndisj, list[list[_Piece]]()
        self.ndisj += 1
        while True:
            self.path.append((did, len(alts)))
            terms: list[_Piece | int] = []
            while self.pos < self.n and self.src[self.pos] not in "|)":
                terms.append(self.term())
            alts.append([])
            for chars, grp in itertools.groupby(terms, key=lambda t: isinstance(t, int)):
                run = list(grp)
                alts[-1].extend([self.run(cast("list[int]", run))] if chars else cast("list[_Piece]", run))
            self.path.pop()
            if self.peek() != "|":
                return alts
            self.pos += 1

    def term(self) -> _Piece | int:
        """A term: its piece, or the code unit of an unquantified literal (``disjunction`` merges those)."""
        atom, kind = self.atom()
        q = self.quantifier()
        if q is None:
            return self.last if kind == "char" else _Zero(atom) if kind in ("assert", "lookahead") else atom
        if kind == "assert" or (kind == "lookahead" and self.u):
            raise self.err("Invalid quantifier")
        text = _render([atom])
        return ("(?:" + text + ")" if kind == "lookahead" else text) + q

    def braced(self) -> tuple[str, int] | None:
        """A ``{n}``/``{n,}``/``{n,m}`` quantifier at ``pos`` as (``regex`` text, end), else None."""
        m = _BRACED.match(self.src, self.pos)
        if not m:
            return None
        lo = int(m.group(1))
        hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
        if hi is not None and hi < lo:
            raise self.err("numbers out of order in {} quantifier")
        if lo > _MAX_REPEAT:
            return "{0}" + _NEVER, m.end()
        if hi is None or hi > _MAX_REPEAT:
            return f"{{{lo},}}", m.end()
        return (f"{{{lo}}}" if hi == lo else f"{{{lo},{hi}}}"), m.end()

    def quantifier(self) -> str | None:
        c = self.peek()
        if c in ("*", "+", "?"):
            q, self.pos = c, self.pos + 1
        elif c == "{" and (b := self.braced()) is not None:
            q, self.pos = b
        elif c == "{" and self.u:
            raise self.err("Incomplete quantifier")
        else:
            return None  # without u, a "{" that is no quantifier is a literal
        if self.peek() == "?":
            self.pos += 1
            return q if q.endswith(_NEVER) else q + "?"
        return q

    def atom(self) -> tuple[_Piece, str]:
        """One atom or assertion: (``regex`` text, kind ``atom``/``assert``/``lookahead``)."""
        c = self.src[self.pos]
        if c == "{" and (self.u or self.braced() is not None) or c in "*+?":
            raise self.err("Nothing to repeat")
        self.pos += 1
        if c in "^$":
            self.reach |= CTX
            return _ANCHOR[(c, self.m)], "assert"
        if c == "\\":
            return self.atom_escape()
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class(), "atom"
        if c == ".":
            if self.s:
                self.reach |= NL | SOH
                return _ANY, "atom"
            return self.emit_set(_LT, True), "atom"
        if c in "]}" and self.u:
            raise self.err("Lone quantifier brackets")
        return self.char(ord(c)), "char"

    def group(self) -> tuple[_Piece, str]:
        start, kind, py = self.pos, "atom", "("
        saved = (self.i, self.m, self.s)
        if self.peek() != "?":
            self.cap += 1
        elif self.src.startswith(("?=", "?!"), start):
            self.reach |= CTX
            kind, py, self.pos = "lookahead", "(" + self.src[start:start + 2], start + 2
        elif self.src.startswith(("?<=", "?<!"), start):
            self.reach |= CTX
            kind, py, self.pos = "assert", "(" + self.src[start:start + 3], start + 3
        elif self.src.startswith("?<", start):
            name, self.pos = self._read_name(start + 2)
            self.cap += 1
            here = tuple(self.path)  # ES2025: a duplicate name must sit in another alternative
            for other in self.seen.get(name, []):
                k = next((j for j, (a, b) in enumerate(zip(here, other)) if a != b), None)
                if k is None or here[k][0] != other[k][0]:
                    raise self.err("Duplicate capture group name")
            self.seen.setdefault(name, []).append(here)
        else:  # ES2025 modifiers (?ims-ims:...)
            m = _MODIFIERS.match(self.src, start)
            on, off = (m.group(1), m.group(2) or "") if m else ("", "")
            if not m or len(set(on + off)) != len(on + off) or (m.group(2) is not None and not on + off):
                raise self.err("Invalid group")
            self.pos = m.end()
            for f in on + off:
                setattr(self, f, f in on)
            py = ("(?i:" if "i" in on else "(?-i:") if self.u and "i" in on + off else "(?:"
        if py == "(":
            self.open.append(self.cap)
        body = self.disjunction()
        if py == "(":
            self.open.pop()
        if self.peek() != ")":
            raise self.err("Unterminated group")
        self.pos += 1
        self.i, self.m, self.s = saved
        alts = list(map(_render, body))
        if py in ("(", "(?:") and len(alts) > 1:
            return (py, alts), kind
        return py + "|".join(alts) + ")", kind

    # ---- escapes and characters

    def char(self, cp: int) -> str:
        self.last = cp  # term() hands an unquantified literal to disjunction() as this code unit
        self.reach |= NL if cp == 0x0A else SOH if cp == 0x01 else 0
        if self.i and (not self.u or cp in _TURKISH_I):
            return self.emit_set([(cp, cp)])
        return _lit(cp)

    def run(self, cps: list[int]) -> str:
        """Literal code units in a row; with ``i`` (no ``u``) one ``(?i:…)``, then explicit JS sets in a
        lookbehind from the first unit that ``regex`` folds wider (k: the Kelvin sign, i: U+0130 …)."""
        for cp in cps:
            self.reach |= NL if cp == 0x0A else SOH if cp == 0x01 else 0
        if not self.i or self.u:
            return "".join(map(self.char, cps))
        out: list[str] = []
        for fits, grp in itertools.groupby(cps, key=lambda c: js_cases(c) <= regex_cases(c)):
            seg = list(grp)
            wider = [k for k, c in enumerate(seg) if regex_cases(c) != js_cases(c)]
            if not fits or not any(len(regex_cases(c)) > 1 for c in seg):
                out.extend(map(self.char, seg))
                continue
            look = "".join(map(self.char, seg[wider[0]:])) if wider else ""
            out.append("(?i:" + "".join(map(_lit, seg)) + ")" + (f"(?<={look})" if look else ""))
        return "".join(out)

    def backref(self, groups: list[int]) -> str:
        """``\\N``/``\\k<n>``: an unset group (or one still open) matches the empty string, as in JS."""
        out = ""
        self.refs = True
        for g in reversed([g for g in groups if g not in self.open]):
            ref = f"\\g<{g}>" if not self.i or self.u else f"(?i:\\g<{g}>)"
            out = f"(?({g}){ref}|{out})"
        return "(?:" + out + ")"

    def class_escape(self, c: str) -> Intervals:
        base = {"d": _DIGIT, "s": _SPACE, "w": _WORD_UI if self.u and self.i else _WORD}[c.lower()]
        return _complement(base) if c.isupper() else base

    def prop(self) -> str:
        self.reach |= NL | SOH  # not worked out per property: assume it may
        neg = self.src[self.pos] == "P"
        m = _PROP.match(self.src, self.pos + 1)
        if not m:
            raise self.err("Invalid property name")
        self.pos = m.end()
        if (name := property_name(m.group(1))) is None:
            raise JsRegexSyntaxError(f"Invalid property name {m.group(1)!r}")
        return ("\\P{" if neg else "\\p{") + name + "}"

    def legacy_octal(self) -> int:
        end, v = self.pos + (3 if self.src[self.pos] in "0123" else 2), 0
        while self.pos < min(end, self.n) and self.src[self.pos] in "01234567":
            v, self.pos = v * 8 + int(self.src[self.pos]), self.pos + 1
        return v

    def atom_escape(self) -> tuple[str, str]:
        if self.pos >= self.n:
            raise self.err("\\ at end of pattern")
        c = self.src[self.pos]
        if c in "bB":
            self.pos += 1
            return (_BOUNDARY_UI[c] if self.u and self.i else f"(?a:\\{c})"), "assert"
        if c in "123456789":
            num = _DECIMAL.match(self.src, self.pos)
            assert num is not None
            if int(num.group()) <= self.ncaps:
                self.pos = num.end()
                return self.backref([int(num.group())]), "atom"
            if self.u:
                raise self.err("Invalid escape")
            if c in "89":
                self.pos += 1
                return self.char(ord(c)), "char"
            return self.char(self.legacy_octal()), "char"
        if c == "0" and self.peek(1) in _DIGITS:
            if self.u:
                raise self.err("Invalid decimal escape")
            return self.char(self.legacy_octal()), "char"
        if c == "k" and (self.u or self.names):
            if self.peek(1) != "<":
                raise self.err("Invalid named reference")
            name, self.pos = self._read_name(self.pos + 2)
            if name not in self.names:
                raise self.err("Invalid named capture referenced")
            return self.backref(self.names[name]), "atom"
        if c in "dDwWsS":
            self.pos += 1
            return self.emit_set(self.class_escape(c.lower()), c.isupper()), "atom"
        if c in "pP" and self.u:
            return self.prop(), "atom"
        return self.char(self.char_escape(False)), "char"

    def char_escape(self, in_class: bool) -> int:
        """A CharacterEscape after ``\\`` (Annex B identity escapes without ``u``)."""
        c = self.src[self.pos]
        self.pos += 1
        if c in _CONTROL:
            return _CONTROL[c]
        if c == "0" and self.peek() not in _DIGITS:
            return 0
        if c == "c":
            x = self.peek()
            if x.isascii() and (x.isalpha() or (in_class and not self.u and (x in _DIGITS or x == "_"))):
                self.pos += 1
                return ord(x) % 32
            if self.u:
                raise self.err("Invalid unicode escape")
            self.pos -= 1  # "\c" is a literal backslash; the "c" is read next
            return 0x5C
        if c == "x" and self.n - self.pos >= 2 and set(self.src[self.pos:self.pos + 2]) <= _HEX:
            self.pos += 2
            return int(self.src[self.pos - 2:self.pos], 16)
        if c == "u":
            m = (_UBRACE if self.u and self.peek() == "{" else _U4).match(self.src, self.pos)
            if m:
                v = int(m.group(1) if m.groups() else m.group(), 16)
                if v > _MAXCP:
                    raise self.err("Invalid Unicode escape")
                self.pos = m.end()
                t = _TRAIL.match(self.src, self.pos)
                if self.u and m.re is _U4 and 0xD800 <= v <= 0xDBFF and t:  # \uLEAD\uTRAIL
                    self.pos = t.end()
                    v = 0x10000 + ((v - 0xD800) << 10) + int(t.group(1), 16) - 0xDC00
                return v
        if self.u and not (c in _SYNTAX or (in_class and c == "-")):
            raise self.err("Invalid escape")
        return ord(c)

    # ---- character classes

    def class_atom(self) -> _Item:
        c = self.src[self.pos]
        self.pos += 1
        if c != "\\":
            return ord(c)
        e = self.peek()
        if not e:
            raise self.err("\\ at end of pattern")
        if e in "pP" and self.u:
            return [], [self.prop()]
        if e in "b-dDwWsS":
            self.pos += 1
            return 8 if e == "b" else 45 if e == "-" else (self.class_escape(e), [])
        if e in _DIGITS:
            if self.u and (e != "0" or self.peek(1) in _DIGITS):
                raise self.err("Invalid class escape")
            if self.u or e in "89":
                self.pos += 1
                return 0 if e == "0" else ord(e)
            return self.legacy_octal()
        if e == "k" and self.names:
            raise self.err("Invalid escape")
        return self.char_escape(True)

    def char_class(self) -> str:
        neg = self.peek() == "^"
        self.pos += neg
        iv: Intervals = []
        props: list[str] = []
        while True:
            if self.pos >= self.n:
                raise self.err("Unterminated character class")
            if self.src[self.pos] == "]":
                self.pos += 1
                return self.emit_set(iv, neg, props)
            items = [self.class_atom()]
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.pos += 1
                items.append(self.class_atom())
                a, b = items
                if isinstance(a, int) and isinstance(b, int):
                    if a > b:
                        raise self.err("Range out of order in character class")
                    iv.append((a, b))
                    continue
                if self.u:
                    raise self.err("Invalid character class")
                items.insert(1, 45)  # Annex B: [\d-z] is \d, "-" and "z"
            for item in items:
                if isinstance(item, int):
                    iv.append((item, item))
                else:
                    iv.extend(item[0])
                    props.extend(item[1])

    def _reaches(self, iv: Intervals, negated: bool) -> None:
        """Note whether a set (``iv``, complemented if ``negated``) holds "\\n" or "\\x01"."""
        for cp, bit in ((0x0A, NL), (0x01, SOH)):
            if any(lo <= cp <= hi for lo, hi in iv) != negated:
                self.reach |= bit

    def emit_set(self, iv: Intervals, negated: bool = False, props: list[str] | None = None) -> str:
        """A character set as ``regex`` text, with JavaScript's case-insensitive membership."""
        if not self.u:
            iv = _norm(iv + js_partners(iv) if self.i else iv)
            iv = _complement(iv) if negated else iv
            self._reaches(iv, False)
            if len(iv) == 1 and iv[0][0] == iv[0][1]:
                return _lit(iv[0][0])
            return _cls(_body(iv), False)
        self._reaches(iv, negated)   # no character case-folds to "\n" or "\x01"
        extra = "".join(props or [])
        if self.i and (extra or any(lo <= t <= hi for t in _TURKISH_I for lo, hi in iv)):
            rest = _body(_complement(_complement(iv) + [(0x130, 0x131)])) + extra
            return (f"(?:(?!{_TURK}){_cls(rest, negated)}"
                    f"|(?={_TURK})(?-i:{_cls(_body(iv) + extra, negated)}))")
        return _cls(_body(iv) + extra, negated)
