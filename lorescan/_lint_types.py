"""Lint entry values of the wrong JSON type, saying what SillyTavern does with each.

Entries keep their raw values (SillyTavern reads them raw, with JavaScript's rules), so a string
where a number or a flag belongs loads fine and then behaves in ways the file does not show:
``constant: "false"`` is true, ``order: "high"`` sorts as NaN, a string ``groupWeight`` is joined
rather than added. :func:`type_findings` reports each such value with its real consequence. Fields
other checks already judge by value (``position``, ``selectiveLogic``, a probability that never
passes, ``disable`` when it disables) are left to them. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal

from . import _js
from ._model import Entry

Severity = Literal["error", "warning", "info"]
#: (code, field, message, fix, severity)
TypeFinding = tuple[str, str, str, str, Severity]

CODES: dict[str, tuple[Severity, str]] = {
    "not-a-boolean": ("warning", "a flag holds a string or number: SillyTavern reads it with JavaScript "
                                 "truthiness (every non-empty string is true)"),
    "not-a-number": ("warning", "a number field holds a string, boolean or null: SillyTavern converts it "
                                "with JavaScript's rules, or gets NaN"),
    "not-a-string": ("error", "group is not a string: SillyTavern's group code throws on it"),
}

#: Flags read with JavaScript truthiness: what the entry does when the flag is true / false.
_FLAGS: dict[str, tuple[str, str]] = {
    "constant": ("is constant: it activates on every generation without keys", "is not constant"),
    "selective": ("uses its secondary keys", "ignores its secondary keys"),
    "excludeRecursion": ("cannot be activated by recursion", "can be activated by recursion"),
    "preventRecursion": ("never adds its content to the recursion text", "adds its content to the recursion text"),
    "useProbability": ("rolls its probability", "never rolls: it always passes"),
    "groupOverride": ("takes priority in its inclusion groups", "has no priority in its inclusion groups"),
    "caseSensitive": ("matches case-sensitively, whatever the global setting",
                      "matches ignoring case, whatever the global setting"),
    "matchWholeWords": ("matches whole words only, whatever the global setting",
                        "matches inside words too, whatever the global setting"),
    "useGroupScoring": ("uses group scoring, whatever the global setting",
                        "does not use group scoring, whatever the global setting"),
}
#: 1.18 flags (1.12 ignores them).
_FLAGS_118: dict[str, tuple[str, str]] = {
    "ignoreBudget": ("ignores the budget", "counts against the budget"),
    "matchPersonaDescription": ("also scans the persona description", "does not scan the persona description"),
    "matchCharacterDescription": ("also scans the character's description", "does not scan the description"),
    "matchCharacterPersonality": ("also scans the character's personality", "does not scan the personality"),
    "matchCharacterDepthPrompt": ("also scans the character's depth prompt", "does not scan the depth prompt"),
    "matchScenario": ("also scans the scenario", "does not scan the scenario"),
    "matchCreatorNotes": ("also scans the creator notes", "does not scan the creator notes"),
}
_FALSE_WORDS = frozenset(("false", "0", "no", "off", ""))
_TRUE_WORDS = frozenset(("true", "1", "yes", "on"))


_j = _js.json_text      # a value in the lorebook's own notation


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _meant(value: Any) -> bool | None:
    """What a human most likely meant by a non-boolean flag value (``None``: unclear)."""
    if isinstance(value, str):
        word = _js.lower(_js.trim(value))
        return False if word in _FALSE_WORDS else True if word in _TRUE_WORDS else None
    if _is_number(value):
        return False if value == 0 else True if value == 1 else None
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else "a boolean" if isinstance(value, bool) else \
        "a string" if isinstance(value, str) else "a number" if _is_number(value) else type(value).__name__


def _what(field: str, value: Any) -> str:
    """``order "50" is a string`` (``order null`` for null, which needs no more words)."""
    return f"{field} null" if value is None else f"{field} {_j(value)} is {_kind(value)}"


def _number_text(n: float) -> str:
    return _js.number_string(n)


def type_findings(entry: Entry, v118: bool) -> Iterator[TypeFinding]:
    """Every value of ``entry`` whose JSON type is not the one SillyTavern expects (given fields only)."""
    given = entry.model_fields_set
    flags = {**_FLAGS, **(_FLAGS_118 if v118 else {})}
    for field, (on, off) in flags.items():
        value = getattr(entry, field) if field in given else None
        if value is None or isinstance(value, bool):
            continue
        js = _js.truthy(value)
        meant = _meant(value)
        yield ("not-a-boolean", field,
               f"{field} {_j(value)} is {_kind(value)}, not true or false: SillyTavern reads it with JavaScript "
               f"truthiness as {'true' if js else 'false'}, so the entry {on if js else off}",
               f"write {field}: {'true' if js else 'false'} (or the value you meant) without quotes",
               "info" if meant is js else "warning")
    if "disable" in given:
        yield from _disable(entry.disable)
    yield from _numbers(entry, given)
    group = entry.group if "group" in given else ""
    if not isinstance(group, str) and group is not None and _js.truthy(group):
        yield ("not-a-string", "group",
               f"group {_j(group)} is {_kind(group)}, not a string: SillyTavern's inclusion-group code calls "
               "group.split(), which throws a TypeError, so a generation stops with an error whenever this "
               "entry is a candidate (lorescan treats it as no group)",
               f"write the group name as a string: group: {_j(str(group))}", "error")


def _disable(value: Any) -> Iterator[TypeFinding]:
    """``disable`` is tested with ``== true``: only ``true``, ``1`` and ``"1"`` disable (callers skip those)."""
    if value is None or isinstance(value, bool) or _js.loose_eq_true(value):
        return
    meant = _meant(value)
    yield ("not-a-boolean", "disable",
           f"disable {_j(value)} is {_kind(value)}: SillyTavern tests disable == true, which is false for it, "
           "so the entry is enabled" + (" although the value reads as disabled" if meant is not False else ""),
           "write disable: true to disable the entry, or disable: false", "info" if meant is False else "warning")


def _numbers(entry: Entry, given: set[str]) -> Iterator[TypeFinding]:
    """``order``, ``depth``/``role`` at depth, ``scanDepth``, timed effects, ``groupWeight``, ``probability``."""
    def value(field: str) -> Any:
        return getattr(entry, field)          # the template default when the file leaves it out

    order = value("order")
    if not _is_number(order):
        n = _js.sort_key_number(order) if order is not None else 0.0
        bad = isinstance(order, str) and math.isnan(_js.to_number(order))
        yield ("not-a-number", "order",
               f"order {_j(order)} is not a number: SillyTavern sorts with b.order - a.order, which is NaN for it, "
               "so the entry's place in the priority and prompt order is left to the browser's sort "
               "(lorescan sorts as V8, Chrome's and Node's engine, does)" if bad else
               f"{_what('order', order)}: SillyTavern's sort (b.order - a.order) reads it as {_number_text(n)}",
               "write order as a number, e.g. order: 100", "warning" if bad else "info")
    if _is_number(entry.position) and entry.position == 4:
        yield from _depth_role(value("depth"), value("role"), "depth" in given, "role" in given)
    yield from _scan_and_timed(entry)
    group = value("group")
    weight = value("groupWeight")
    if isinstance(group, str) and group and weight is not None and not _is_number(weight):
        yield ("not-a-number", "groupWeight",
               f"groupWeight {_j(weight)} is {_kind(weight)}: SillyTavern adds the group's weights with +, "
               + ("which joins strings (\"100\" + \"50\" gives \"10050\"), so the weighted roll runs on a "
                  "garbled total and can pick the wrong member (lorescan does the same)"
                  if isinstance(weight, str) else
                  f"which counts it as {_number_text(_js.to_number(weight))}"),
               "write groupWeight as a number, e.g. groupWeight: 100",
               "warning" if isinstance(weight, str) else "info")
    p = value("probability")
    if _js.truthy(value("useProbability")) and (isinstance(p, str) or isinstance(p, bool)):
        n = _js.to_number(p)
        if n == n and n > 0:          # NaN and <= 0 never pass: probability-zero reports those
            yield ("not-a-number", "probability",
                   f"probability {_j(p)} is {_kind(p)}: SillyTavern rolls for it (only the number 100 skips the "
                   f"roll) and passes when the roll is at most {_number_text(n)} %",
                   "write probability as a number from 0 to 100", "warning" if isinstance(p, bool) else "info")


def _depth_role(depth: Any, role: Any, has_depth: bool, has_role: bool) -> Iterator[TypeFinding]:
    """At-depth entries: SillyTavern groups them with ``===`` and injects ``Number(depth)`` / ``Number(role)``."""
    if has_depth and not _is_number(depth):
        if depth is None:
            yield ("not-a-number", "depth",
                   "depth null at position 4: SillyTavern joins a depth-4 group of the same role if one came "
                   "first, else starts a group whose depth is null, which is injected at depth 0 (Number(null))",
                   "write depth as a number, e.g. depth: 4", "warning")
        else:
            yield _slot("depth", depth, "depth")
    if has_role and role is not None and not _is_number(role):
        yield _slot("role", role, "role")


def _slot(field: str, value: Any, what: str) -> TypeFinding:
    n = _js.to_number(value)
    if n != n:
        return ("not-a-number", field,
                f"{field} {_j(value)} at position 4 is not a number: SillyTavern injects the entry with "
                f"{what} Number({_j(value)}) = NaN, which matches no {what}, so it is activated and budgeted "
                "but never reaches the prompt", f"write {field} as a number", "warning")
    return ("not-a-number", field,
            f"{field} {_j(value)} at position 4 is {_kind(value)}: SillyTavern injects it at {what} "
            f"{_number_text(n)}, but groups at-depth entries by comparing {what} with ===, so it gets a group "
            f"of its own; when another entry uses the number {_number_text(n)}, both groups take the same "
            "prompt slot and the later one replaces the other", f"write {field} as a number", "warning")


def _scan_and_timed(entry: Entry) -> Iterator[TypeFinding]:
    """``scanDepth`` (slice and compare) and the timed effects (truthiness, then ``Number`` or ``<``)."""
    sd = entry.scanDepth
    if sd is not None and not _is_number(sd):
        n = _js.to_number(sd)
        yield ("not-a-number", "scanDepth",
               f"scanDepth {_j(sd)} is not a number: SillyTavern takes slice(0, NaN) of the chat, no message at "
               "all, so the keys see only injected texts and the recursion text" if n != n else
               f"scanDepth {_j(sd)} is {_kind(sd)}: SillyTavern converts it to {_number_text(n)} "
               f"({'no message is scanned' if n <= 0 else 'messages scanned'})",
               "write scanDepth as a number, or null for the global depth", "warning" if n != n or n <= 0 else "info")
    for field in ("sticky", "cooldown", "delay"):
        v = getattr(entry, field)
        if v is None or _is_number(v) or not _js.truthy(v):
            continue
        n = _js.to_number(v)
        if n == n:
            msg = f"{field} {_j(v)} is {_kind(v)}: SillyTavern converts it to {_number_text(n)}"
        elif field == "delay":
            msg = (f"delay {_j(v)} is not a number: SillyTavern delays the entry while the chat length is less than "
                   "it, which is never true for NaN, so the entry is never delayed")
        else:
            msg = (f"{field} {_j(v)} is not a number: the effect starts (a non-empty string is true) but its end "
                   f"is the chat length + NaN, so it never ends")
        yield ("not-a-number", field, msg, f"write {field} as a number of messages, or null",
               "info" if n == n else "warning")
