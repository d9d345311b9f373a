"""Prefilter needles for regex keys: literals one of which every match of a pattern contains.

A regex key is only run where one of its literals occurs, so an entry whose regex cannot match the
window costs a set lookup. The analysis is conservative: when in doubt it gives no literal, and the
key is then tried on every evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from . import _js

_QUANT = re.compile(r"\{\d+(?:,\d*)?\}")
_LIT_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-'\",:;!@#%&=~<>`")


_RUN = re.compile("[" + re.escape("".join(sorted(_LIT_OK))) + "]+")
_STRUCTURE = re.compile(r"\\[\s\S]?|\[(?:\\[\s\S]|[^\]\\])*\]?|[()|]")


def _structure(source: str, i: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, group depth after it) for each ``(``, ``)``, ``|`` and class of
    ``source`` from ``i`` that is not escaped (a class shows as its opening ``[``)."""
    depth = 0
    for m in _STRUCTURE.finditer(source, i):
        c = source[m.start()]
        if c == "\\":
            continue
        depth += 1 if c == "(" else -1 if c == ")" else 0
        yield m.start(), c, depth


def _group_end(source: str, i: int) -> int:
    """Index of the ``)`` closing the group opened at ``source[i]`` (``len(source)`` if none)."""
    return next((j for j, c, depth in _structure(source, i) if c == ")" and depth == 0), len(source))


def _split_top(source: str) -> list[str] | None:
    """``source`` split at its top-level ``|`` (None if a group or class is left open)."""
    parts, start, depth = [], 0, 0
    for j, c, depth in _structure(source):
        if c == "|" and depth == 0:
            parts.append(source[start:j])
            start = j + 1
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
    sets = _branch_runs(source, max_alts)
    good = [x for x in sets if min(map(len, x)) >= min_len]
    if not good:
        return None
    best = max(good, key=lambda x: (min(map(len, x)), -len(x)))
    return tuple(sorted({_js.lower(x) for x in best}))


def _branch_runs(source: str, max_alts: int) -> list[set[str]]:
    """The literal runs of a pattern with no top-level ``|``, left to right: each a set of strings
    one of which every match contains at that place (see :func:`required_literals`)."""
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
            # on; taking the characters after those as a run-break is merely conservative). A
            # braced or angled one runs to its closing bracket: \p{Script=Greek} is one escape, and
            # no "=greek" follows it.
            cur, last = close(cur), None
            e = source[i + 1:i + 2]
            i += 2
            if e and e in "ukpP" and source[i:i + 1] in ("{", "<"):
                end = source.find("}" if source[i] == "{" else ">", i)
                if end >= 0:
                    i = end + 1
                    continue
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
            run = _RUN.match(source, i).group()  # type: ignore[union-attr]
            if len(run) > 1:   # the run at once; only its last character may be quantified
                cur = {a + run[:-1] for a in cur}
            last, cur = cur, {a + run[-1] for a in cur}
            i += len(run)
            continue
        else:
            cur, last = close(cur), None
        i += 1
    sets.append(cur)
    return sets
