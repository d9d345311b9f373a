"""Find JavaScript regex keys prone to catastrophic backtracking, such as ``/(a+)+$/``.

SillyTavern runs regex keys with the browser's backtracking engine, which hangs on a repetition
that can match the same text in many different ways when what follows it fails: ``(a+)+``,
``(a*)*``, ``(a|aa)+``, ``(\\w+\\s?)+`` or ``(.*a){5}`` before a ``$``, a ``\\b`` or more text.

The check is static. The pattern is parsed into a small tree; for each repetition its Glushkov
automaton is built with edge multiplicities (so ``(a+)+``'s two ways from ``a`` back to ``a`` stay
two edges) and searched for exponential ambiguity: a state with two different same-text paths
back to itself, found as a strongly connected component of the automaton's square that holds a
pair ``(p, p)`` together with a pair ``(q, r)``, ``q != r``, or two parallel edges. Only a
repetition followed by something that can fail is reported (``/(a+)+/`` alone succeeds at once, and
bare ``/(.*a){5}/`` fails fast: only a text too short for the required iterations fails it).
A bounded repetition with an upper bound of 3 or more is judged like an unbounded one (its cost
grows like the text length to that power). Lookarounds are checked on their own; backreferences
and anchors only count as "can fail". Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

Intervals = tuple[tuple[int, int], ...]
_MAX = 0x10FFFF
_ANY: Intervals = ((0, _MAX),)
_LT: Intervals = ((0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029))
_DIGIT: Intervals = ((0x30, 0x39),)
_WORD: Intervals = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_SPACE: Intervals = ((0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                     (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
_LOOP_FROM = 3          # {m,n} with n >= this is judged like an unbounded repetition
_MAX_POSITIONS = 300    # larger repetitions are not analysed (no finding)
_MAX_STEPS = 200_000    # pairs of edges the ambiguity search may look at before it gives up (no finding)


def _norm(iv: list[tuple[int, int]]) -> Intervals:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(iv):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(iv: Intervals) -> Intervals:
    out, nxt = [], 0
    for lo, hi in iv:
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= _MAX:
        out.append((nxt, _MAX))
    return tuple(out)


def _meets(a: Intervals, b: Intervals) -> bool:
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def _fold(iv: Intervals) -> Intervals:
    """Add the other ASCII case of every letter in ``iv`` (the ``i`` flag, approximately)."""
    extra = []
    for lo, hi in iv:
        for a, z, shift in ((0x41, 0x5A, 32), (0x61, 0x7A, -32)):
            if lo <= z and hi >= a:
                extra.append((max(lo, a) + shift, min(hi, z) + shift))
    return _norm([*iv, *extra]) if extra else iv


# -- the tree --------------------------------------------------------------------------------------

@dataclass
class Char:
    chars: Intervals


@dataclass
class Seq:
    items: list[Node]


@dataclass
class Alt:
    branches: list[Node]


@dataclass
class Rep:
    child: Node
    lo: int
    hi: int | None
    span: tuple[int, int]

    @property
    def loops(self) -> bool:
        return self.hi is None or self.hi >= _LOOP_FROM


@dataclass
class Check:
    """An anchor, ``\\b``, a backreference or a lookaround: consumes nothing, can fail."""

    inner: Node | None = None


Node = Char | Seq | Alt | Rep | Check


class _Parser:
    """A lenient reader for patterns JavaScript already accepted (only their structure matters)."""

    def __init__(self, source: str, flags: str) -> None:
        self.s, self.i = source, 0
        self.icase, self.dotall, self.unicode = "i" in flags, "s" in flags, "u" in flags or "v" in flags
        self.groups = len(re.findall(r"(?<!\\)\((?!\?)|\(\?<(?![=!])", source))
        self.named = "(?<" in source.replace("(?<=", "").replace("(?<!", "")

    def parse(self) -> Node:
        node = self.alt()
        if self.i < len(self.s):
            raise ValueError(f"unexpected {self.s[self.i]!r}")
        return node

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def alt(self) -> Node:
        branches = [self.seq()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.seq())
        return branches[0] if len(branches) == 1 else Alt(branches)

    def seq(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.s) and self.s[self.i] not in "|)":
            start = self.i
            atom = self.atom()
            bounds = self.quantifier()
            items.append(Rep(atom, bounds[0], bounds[1], (start, self.i)) if bounds else atom)
        return items[0] if len(items) == 1 else Seq(items)

    def quantifier(self) -> tuple[int, int | None] | None:
        c = self.peek()
        if c in ("*", "+", "?"):
            self.i += 1
            bounds: tuple[int, int | None] = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{" and (m := re.compile(r"\{(\d+)(,(\d*))?\}").match(self.s, self.i)):
            self.i = m.end()
            lo = int(m.group(1))
            bounds = (lo, lo if m.group(2) is None else int(m.group(3)) if m.group(3) else None)
        else:
            return None
        if self.peek() == "?":
            self.i += 1                           # lazy: tries the same ways, in another order
        return bounds

    def atom(self) -> Node:
        c = self.s[self.i]
        self.i += 1
        if c == "(":
            return self.group()
        if c == "[":
            return Char(self.char_class())
        if c == ".":
            return Char(_ANY if self.dotall else _complement(_LT))
        if c in "^$":
            return Check()
        if c == "\\":
            return self.escape()
        return self.literal(ord(c))

    def literal(self, cp: int) -> Char:
        iv: Intervals = ((cp, cp),)
        return Char(_fold(iv) if self.icase else iv)

    def group(self) -> Node:
        icase = self.icase
        look = False
        if self.s.startswith("?", self.i):
            m = re.compile(r"\?(?:(:)|(=|!|<=|<!)|<[^>]*>|([a-z]*)(?:-([a-z]*))?:)").match(self.s, self.i)
            if m is None:
                raise ValueError("unknown group")
            self.i = m.end()
            look = bool(m.group(2))
            if m.group(3) is not None or m.group(4) is not None:   # (?i:…) / (?-i:…) modifiers
                self.icase = ("i" in (m.group(3) or "") or icase) and "i" not in (m.group(4) or "")
        inner = self.alt()
        if self.peek() != ")":
            raise ValueError("unclosed group")
        self.i += 1
        self.icase = icase
        return Check(inner) if look else inner

    def escape(self) -> Node:
        c = self.s[self.i] if self.i < len(self.s) else "\\"
        self.i += 1
        if c in "bB":
            return Check()
        if c in "dDwWsS":
            iv = {"d": _DIGIT, "w": _WORD, "s": _SPACE}[c.lower()]
            return Char(_complement(iv) if c.isupper() else iv)
        if c.isdigit() and c != "0":
            m = re.compile(r"\d+").match(self.s, self.i - 1)
            assert m is not None
            if int(m.group()) <= self.groups:
                self.i = m.end()
                return Check()                     # a backreference
            return self.literal(ord(c) - 48 if c < "8" else ord(c))
        if c == "k" and self.named and self.peek() == "<":
            self.i = self.s.index(">", self.i) + 1
            return Check()
        if c in "pP" and self.unicode and self.peek() == "{":
            self.i = self.s.index("}", self.i) + 1
            return Char(_ANY)
        return self.literal(self.char_escape(c))

    def char_escape(self, c: str) -> int:
        """The code point of an escape that stands for one character (``c`` is after the backslash)."""
        simple = {"n": 10, "r": 13, "t": 9, "v": 11, "f": 12, "0": 0}
        if c in simple:
            return simple[c]
        if c == "c" and self.peek().isascii() and self.peek().isalpha():
            self.i += 1
            return ord(self.s[self.i - 1]) % 32
        m = re.compile(r"x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|u\{([0-9A-Fa-f]+)\}").match(self.s, self.i - 1)
        if m and (m.group(3) is None or self.unicode):
            self.i = m.end()
            return int(next(g for g in m.groups() if g is not None), 16)
        return ord(c)

    def char_class(self) -> Intervals:
        negated = self.peek() == "^"
        self.i += negated
        items: list[tuple[int, int]] = []
        while self.i < len(self.s) and self.s[self.i] != "]":
            lo = self.class_atom()
            if self.peek() == "-" and self.i + 1 < len(self.s) and self.s[self.i + 1] != "]" \
                    and isinstance(lo, int):
                self.i += 1
                hi = self.class_atom()
                if isinstance(hi, int):
                    items.append((lo, hi) if lo <= hi else (hi, lo))
                    continue
                items.extend([(lo, lo), (45, 45), *hi])
                continue
            items.extend([(lo, lo)] if isinstance(lo, int) else lo)
        self.i += 1
        iv = _norm(items)
        if self.icase:
            iv = _fold(iv)
        return _complement(iv) if negated else iv

    def class_atom(self) -> int | Intervals:
        c = self.s[self.i]
        self.i += 1
        if c != "\\":
            return ord(c)
        c = self.s[self.i]
        self.i += 1
        if c in "dDwWsS":
            iv = {"d": _DIGIT, "w": _WORD, "s": _SPACE}[c.lower()]
            return _complement(iv) if c.isupper() else iv
        if c in "pP" and self.unicode and self.peek() == "{":
            self.i = self.s.index("}", self.i) + 1
            return _ANY
        return 8 if c == "b" else self.char_escape(c)


# -- ambiguity -------------------------------------------------------------------------------------

@dataclass
class _Automaton:
    """A Glushkov automaton whose ``follow`` counts the ways each edge arises."""

    labels: list[Intervals] = field(default_factory=list)
    follow: list[dict[int, int]] = field(default_factory=list)

    def build(self, node: Node) -> tuple[bool, list[int], list[int]]:
        """(nullable, first positions, last positions) of ``node``, adding its positions and edges."""
        if isinstance(node, Char):
            self.labels.append(node.chars)
            self.follow.append({})
            p = len(self.labels) - 1
            return False, [p], [p]
        if isinstance(node, Check):
            return True, [], []
        if isinstance(node, Alt):
            parts = [self.build(b) for b in node.branches]
            return (any(n for n, _, _ in parts), [p for _, f, _ in parts for p in f],
                    [p for _, _, last in parts for p in last])
        if isinstance(node, Seq):
            return self.chain([(item, False) for item in node.items])
        if node.hi == 0:
            return True, [], []
        if node.loops:
            n, first, last = self.build(node.child)
            self.link(last, first)
            return n or node.lo == 0, first, last
        assert node.hi is not None                  # x{m,n} with n < 3: m copies, then n - m optional ones
        return self.chain([(node.child, False)] * node.lo + [(node.child, True)] * (node.hi - node.lo))

    def chain(self, parts: list[tuple[Node, bool]]) -> tuple[bool, list[int], list[int]]:
        """A sequence of parts (``True``: optional), each built in turn with positions of its own."""
        nullable, first, last = True, list[int](), list[int]()
        for node, optional in parts:
            n, f, lst = self.build(node)
            n = n or optional
            self.link(last, f)
            if nullable:
                first = first + f
            last = lst + (last if n else [])
            nullable = nullable and n
        return nullable, first, last

    def link(self, sources: list[int], targets: list[int]) -> None:
        for p in sources:
            out = self.follow[p]
            for q in targets:
                out[q] = out.get(q, 0) + 1

    def exponential(self) -> bool | None:
        """Whether some state has two different same-text paths back to itself (``None``: too big)."""
        labels, follow = self.labels, self.follow
        succ: dict[tuple[int, int], list[tuple[tuple[int, int], bool]]] = {}
        todo = [(p, p) for p in range(len(labels))]
        seen = set(todo)
        steps = 0
        while todo:
            p, q = pair = todo.pop()
            out = []
            steps += len(follow[p]) * len(follow[q])
            if steps > _MAX_STEPS:
                return None
            for r, m in follow[p].items():
                for s in follow[q]:
                    if r == s or _meets(labels[r], labels[s]):
                        out.append(((r, s), p == q and r == s and m > 1))
                        if (r, s) not in seen:
                            seen.add((r, s))
                            todo.append((r, s))
            succ[pair] = out
        return any(self._mixed(comp, succ) for comp in _components(succ))

    @staticmethod
    def _mixed(comp: set[tuple[int, int]], succ: dict) -> bool:
        if not any(p == q for p, q in comp):
            return False
        if any(p != q for p, q in comp):
            return True
        return any(twice and nxt in comp for pair in comp for nxt, twice in succ[pair])


def _components(succ: dict[tuple[int, int], list]) -> list[set[tuple[int, int]]]:
    """Strongly connected components (iterative Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on: set = set()
    comps: list[set] = []
    counter = 0
    for root in succ:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on.add(v)
            nexts = succ.get(v, [])
            if i < len(nexts):
                work.append((v, i + 1))
                w = nexts[i][0]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps


# -- the walk --------------------------------------------------------------------------------------

def _can_fail(node: Node) -> bool:
    if isinstance(node, (Char, Check)):
        return True
    if isinstance(node, Seq):
        return any(map(_can_fail, node.items))
    if isinstance(node, Alt):
        return all(map(_can_fail, node.branches))
    return node.lo >= 1 and _can_fail(node.child)


def _size(node: Node) -> int:
    if isinstance(node, Char):
        return 1
    if isinstance(node, Check):
        return 0
    if isinstance(node, Seq):
        return sum(map(_size, node.items))
    if isinstance(node, Alt):
        return sum(map(_size, node.branches))
    return _size(node.child) * (1 if node.loops or node.hi is None else max(node.hi, 1))


def _find(node: Node, tail_fails: bool) -> Rep | None:
    """The outermost ambiguous repetition with something after it that can fail."""
    if isinstance(node, Seq):
        for i, item in enumerate(node.items):
            found = _find(item, tail_fails or any(map(_can_fail, node.items[i + 1:])))
            if found:
                return found
        return None
    if isinstance(node, Alt):
        return next((f for b in node.branches if (f := _find(b, tail_fails))), None)
    if isinstance(node, Check):
        return _find(node.inner, False) if node.inner is not None else None
    if isinstance(node, Char):
        return None
    # The iterations a repetition still requires do not count as a tail that can fail: they fail
    # only on texts too short to supply them (bare /(.*a){5}/ fails fast on a long text).
    if node.loops and tail_fails and _size(node) <= _MAX_POSITIONS:
        automaton = _Automaton()
        automaton.build(node)
        if automaton.exponential():
            return node
    return _find(node.child, tail_fails)


@lru_cache(maxsize=1024)
def catastrophic(source: str, flags: str = "") -> str | None:
    """The repetition in ``/source/flags`` that can backtrack catastrophically (its source text, with
    its bound when it has one), or ``None``: no such repetition, or the pattern is beyond the check."""
    try:
        rep = _find(_Parser(source, flags).parse(), False)
    except (ValueError, IndexError, RecursionError):
        return None
    if rep is None:
        return None
    return source[rep.span[0]:rep.span[1]]


def bound(part: str) -> int | None:
    """The upper bound written at the end of ``part`` (``{m,n}``), ``None`` when unbounded."""
    m = re.search(r"\{\d+(?:,(\d*))?\}\??$", part)
    if m is None:
        return None
    nums = re.findall(r"\d+", m.group())
    return None if m.group(1) == "" else int(nums[-1])
