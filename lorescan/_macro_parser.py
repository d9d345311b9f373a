"""The lexer and parser of SillyTavern 1.18's default macro engine (:mod:`._macro_engine`).

The engine reads a text with a modal lexer (plain text, a macro's head, its arguments, a
variable's parts) and a grammar whose parser generator recovers from errors: a missing ``}}`` is
made up, or one stray token dropped, when that fits; otherwise the rules being parsed give up up
to a token that may follow one of them, and the tokens skipped stay as written. :func:`parse`
gives the document's macros as :class:`Node` trees; evaluating them is the engine's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import _js

#: JavaScript's ``\s``, as a character class
WS = "[" + re.escape(_js.JS_WHITESPACE) + "]"

# Token kinds of the lexer.
(PT, OB, ST, END, FLAG, FFLAG, DSL, MID, DC, CO, EQ, QU, ID, UNK, LP, GP, VID, INC, DEC, OPV,
 EOF) = range(21)
_IDENT = re.compile(r"[a-zA-Z][\w-]*", re.ASCII)
_VAR_IDENT = re.compile(r"[a-zA-Z](?:[\w-]*\w)?", re.ASCII)
_SPACE = re.compile(WS + "+")
_PLAIN = re.compile(r"(?:[^{]|\{(?!\{))+", re.DOTALL)
_OPS = ("??=", "??", "||=", "||", "-=", "==", "!=", ">=", ">", "<=", "<", "+=", "=")

# Lexer modes.
_M_PLAIN, _M_DEF, _M_IDEND, _M_ARGS, _M_VARID, _M_VARAFTER, _M_VARVAL = range(7)


@dataclass
class Tok:
    """A token: kind, text offsets ``[start, end)``; ``inserted`` when made up by error recovery."""

    kind: int
    start: int
    end: int
    inserted: bool = False


def _lex_one(text: str, pos: int, mode: int, modes: list[int]) -> tuple[int, int] | None:
    """The token at ``pos`` in ``mode`` as (kind or -1 for a skipped one, length), updating the
    mode stack; ``None`` when nothing matches (only after a macro's name)."""
    c = text[pos]
    two = text[pos:pos + 2]
    if mode == _M_PLAIN:
        if c != "{":
            m = _PLAIN.match(text, pos)
            return PT, m.end() - pos if m else 1
        if two != "{{":
            return PT, _PLAIN.match(text, pos).end() - pos   # type: ignore[union-attr]
        if text[pos:pos + 3] == "{{{":
            return OB, 1
        modes.append(_M_DEF)
        return ST, 2
    if mode == _M_IDEND:
        if two == "}}":
            modes.pop()
            return -1, 0
        if c in ":|}" or c in _js.JS_WHITESPACE:
            modes[-1] = _M_ARGS
            m = _SPACE.match(text, pos)
            return -1, m.end() - pos if m else 0
        return None
    if mode == _M_DEF:
        if two == "}}":
            modes.pop()
            return END, 2
        if two == "//":
            modes.append(_M_ARGS)
            return DSL, 2
        if c in ".$":
            modes.append(_M_VARID)
            return (LP if c == "." else GP), 1
        if c in "!?~#/":
            return FLAG, 1
        if c == ">":
            return FFLAG, 1
    elif mode in (_M_VARID, _M_VARAFTER):
        got = _lex_variable(text, pos, mode, modes)
        if got is not None:
            return got
    else:   # arguments and a variable's value
        if two == "{{":
            modes.append(_M_DEF)
            return ST, 2
        if mode == _M_ARGS:
            if two == "::":
                return DC, 2
            kind = {":": CO, "=": EQ, '"': QU}.get(c)
            if kind is not None:
                return kind, 1
        m = _IDENT.match(text, pos)
        if m:
            return ID, m.end() - pos
        if two != "}}" and c not in _js.JS_WHITESPACE:
            return UNK, 1
    m = _SPACE.match(text, pos)
    if m:
        return -1, m.end() - pos
    if mode == _M_DEF:
        m = _IDENT.match(text, pos)
        if m:
            modes.append(_M_IDEND)
            return MID, m.end() - pos
    modes.pop()   # nothing else fits: back to the enclosing mode
    return -1, 0


def _lex_variable(text: str, pos: int, mode: int, modes: list[int]) -> tuple[int, int] | None:
    """A variable shorthand's name, or the operator after it (``None``: neither is here)."""
    c, two = text[pos], text[pos:pos + 2]
    if c in _js.JS_WHITESPACE:
        return None
    if mode == _M_VARID:
        m = _VAR_IDENT.match(text, pos)
        if m:
            modes[-1] = _M_VARAFTER
            return VID, m.end() - pos
        return None
    if two in ("++", "--"):
        return (INC if two == "++" else DEC), 2
    for op in _OPS:
        if text.startswith(op, pos):
            modes[-1] = _M_VARVAL
            return OPV, len(op)
    if two == "}}":
        modes.pop()
        return -1, 0
    return None


def lex(text: str) -> list[Tok]:
    """The tokens of ``text``, as the engine's lexer makes them, then an end-of-input token."""
    toks: list[Tok] = []
    modes = [_M_PLAIN]
    pos, n = 0, len(text)
    while pos < n:
        got = _lex_one(text, pos, modes[-1], modes)
        if got is None:   # an unexpected character after a macro's name: skipped up to a place that fits
            pos += 1
            while pos < n and not (text[pos] in ":|}" or text[pos] in _js.JS_WHITESPACE):
                pos += 1
            continue
        kind, length = got
        if kind >= 0:
            toks.append(Tok(kind, pos, pos + length))
        pos += length
    toks.append(Tok(EOF, n, n))
    return toks


@dataclass
class Node:
    """A parsed macro (``kind`` 'macro') or argument ('arg'): its tokens and nested macros."""

    kind: str
    toks: list[Tok] = field(default_factory=list)
    macros: list[Node] = field(default_factory=list)
    args: list[Node] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    name: str = ""
    end: Tok | None = None
    var: bool = False
    lo: int = -1
    hi: int = -1

    def add(self, lo: int, hi: int) -> None:
        """Widen the node's location to the offsets ``[lo, hi)``."""
        if lo < 0:
            return
        if self.lo < 0 or lo < self.lo:
            self.lo = lo
        if hi > self.hi:
            self.hi = hi

    def complete(self) -> bool:
        """Whether the macro has its real closing braces (not made up by error recovery)."""
        return self.end is not None and not self.end.inserted


class _Fail(Exception):
    """A recognition error on its way up to the rule that resynchronises."""

    def __init__(self) -> None:
        super().__init__()
        self.partial: Node | None = None


_DOC_FOLLOW = frozenset({PT, OB, ST})
_ARG_TOKS = frozenset({ST, ID, UNK, CO, EQ, QU})
_AAC_TOKS = _ARG_TOKS | {DC}
#: what may follow a macro's closing braces, by where the macro is (single-token insertion)
_END_FOLLOWS = {"doc": _DOC_FOLLOW, "arg": _AAC_TOKS | {END}, "aac": _AAC_TOKS | {END},
                "val": frozenset({ST, ID, UNK, END})}
#: the resynchronisation set of a macro, by where it is
_MACRO_RESYNC = {"doc": _DOC_FOLLOW, "arg": _ARG_TOKS, "aac": _AAC_TOKS, "val": frozenset({ST, ID, UNK})}
_VID_FOLLOWS = frozenset({INC, DEC, OPV, END})


class _Parser:
    """The engine's grammar, with its parser generator's error recovery: a missing ``}}`` is made
    up or one stray token dropped when that fits, else the rules being parsed give up up to a
    token that may follow one of them (skipped tokens stay as written)."""

    def __init__(self, text: str, toks: list[Tok]) -> None:
        self.text = text
        self.toks = toks
        self.i = 0
        self.stack: list[frozenset[int]] = []

    def la(self, k: int) -> Tok:
        """The k-th token ahead (1: the next one)."""
        return self.toks[min(self.i + k - 1, len(self.toks) - 1)]

    def sub(self, parent: Node, rule: str, follow: frozenset[int], ctx: str = "") -> None:
        """Invoke a rule; on error resynchronise here if its follow set allows, else pass it up."""
        node = Node("macro" if rule == "macro" else "arg")
        self.stack.append(follow)
        try:
            getattr(self, "_" + rule)(node, ctx)
            prev = self.toks[self.i - 1]
            if 0 <= node.lo <= prev.start:
                node.hi = prev.end
        except _Fail:
            every = frozenset({EOF}).union(*self.stack)
            k = 1
            while self.la(k).kind not in every:
                k += 1
            kind = self.la(k).kind
            if kind not in follow:
                self.stack.pop()
                self._attach(parent, rule, node)
                raise
            self.i += k - 1
        self.stack.pop()
        self._attach(parent, rule, node)

    @staticmethod
    def _attach(parent: Node, rule: str, node: Node) -> None:
        if rule == "macro":
            parent.macros.append(node)
        elif rule in ("argument", "argumentAllowingColons"):
            parent.args.append(node)
        else:   # a macro's body, its arguments, a variable's parts: merged into the macro
            parent.toks.extend(node.toks)
            parent.macros.extend(node.macros)
            parent.args.extend(node.args)
            parent.var = parent.var or node.var
            parent.name = parent.name or node.name
        parent.add(node.lo, node.hi)

    def take(self, node: Node) -> Tok:
        """Consume the next token into ``node``."""
        tok = self.toks[self.i]
        self.i += 1
        node.toks.append(tok)
        node.add(tok.start, tok.end)
        return tok

    def document(self) -> Node:
        """Parse the whole token list into a document node (never raises)."""
        doc = Node("doc")
        self.stack.append(frozenset({EOF}))
        try:
            self._doc_items(doc)
        except _Fail:
            while self.la(1).kind != EOF:
                self.i += 1
        return doc

    def _doc_items(self, doc: Node) -> None:
        while True:
            while (kind := self.la(1).kind) in _DOC_FOLLOW:
                if kind == ST and self.la(2).kind in (FLAG, FFLAG, LP, GP, DSL, MID):
                    self.sub(doc, "macro", _DOC_FOLLOW, "doc")
                else:
                    self.take(doc)
            if self.la(1).kind == EOF or self.la(2).kind == EOF:
                return
            while self.la(1).kind not in _DOC_FOLLOW:   # stray tokens: skipped up to a document item
                if self.la(1).kind == EOF:
                    return
                self.i += 1

    def _macro(self, node: Node, ctx: str) -> None:
        self.take(node)
        while self.la(1).kind in (FLAG, FFLAG):
            tok = self.take(node)
            node.flags.append(self.text[tok.start])
        kind = self.la(1).kind
        if kind in (LP, GP):
            self.sub(node, "variableExpr", frozenset({END}))
        elif kind in (DSL, MID):
            self.sub(node, "macroBody", frozenset({END}))
        else:
            raise _Fail()
        if self.la(1).kind == END:
            node.end = self.take(node)
        elif self.la(1).kind in _END_FOLLOWS[ctx]:
            node.end = Tok(END, -1, -1, inserted=True)
        elif self.la(2).kind == END:
            self.i += 1
            node.end = self.take(node)
        else:
            raise _Fail()

    def _macroBody(self, node: Node, _ctx: str) -> None:
        tok = self.take(node)
        node.name = self.text[tok.start:tok.end]
        if self.la(1).kind in (DC, CO, ST, ID, UNK, EQ, QU):
            self.sub(node, "arguments", frozenset())

    def _arguments(self, node: Node, _ctx: str) -> None:
        if self.la(1).kind == DC:
            self.take(node)
            self.sub(node, "argument", frozenset({DC}), "arg")
            while self.la(1).kind == DC:
                self.take(node)
                self.sub(node, "argument", frozenset({DC}), "arg")
            return
        if self.la(1).kind == CO:
            self.take(node)
        self.sub(node, "argumentAllowingColons", frozenset(), "aac")

    def _argument(self, node: Node, ctx: str) -> None:
        allowed = _AAC_TOKS if ctx == "aac" else _ARG_TOKS
        if ctx == "aac" and self.la(1).kind not in allowed:
            raise _Fail()
        while self.la(1).kind in allowed:
            if self.la(1).kind == ST:
                self.sub(node, "macro", _MACRO_RESYNC[ctx], ctx)
            else:
                self.take(node)

    _argumentAllowingColons = _argument

    def _variableExpr(self, node: Node, _ctx: str) -> None:
        node.var = True
        self.take(node)
        if self.la(1).kind == VID:
            self.take(node)
        elif self.la(1).kind not in _VID_FOLLOWS:
            if self.la(2).kind != VID:
                raise _Fail()
            self.i += 1
            self.take(node)
        if self.la(1).kind in (INC, DEC, OPV):
            self.sub(node, "variableOperator", frozenset())

    def _variableOperator(self, node: Node, _ctx: str) -> None:
        if self.take(node).kind == OPV:
            self.sub(node, "variableValue", frozenset())

    def _variableValue(self, node: Node, _ctx: str) -> None:
        while self.la(1).kind in (ST, ID, UNK):
            if self.la(1).kind == ST:
                self.sub(node, "macro", _MACRO_RESYNC["val"], "val")
            else:
                self.take(node)


def parse(text: str) -> Node:
    """The document node of ``text``: its macros (complete or not) under ``macros``."""
    return _Parser(text, lex(text)).document()

