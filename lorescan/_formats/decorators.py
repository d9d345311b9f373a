"""Character Card V3 decorators (``@@depth 4``, ``@@activate`` …) at the start of a card book
entry's content, mapped to entry settings when asked for (``--v3-decorators``)."""

from __future__ import annotations

from typing import Any

V3_ROLES = {"system": 0, "user": 1, "assistant": 2}
V3_POSITIONS = {"before_desc": 0, "after_desc": 1}


def apply_v3_decorators(wi: dict[str, Any]) -> list[str]:
    """Turn an entry's leading V3 decorators into entry settings, in place; returns notes.

    ``@@depth N`` → position 4 (at depth) with depth N (ignored when ``@@position`` is given),
    ``@@position before_desc|after_desc`` → 0|1, ``@@role`` → role, ``@@scan_depth N`` →
    ``scanDepth``, ``@@activate`` → constant, ``@@dont_activate`` → disabled (unless
    ``@@activate`` too). Mapped lines are removed; other decorator lines stay in place, where
    SillyTavern's own parser strips them. First occurrence of a name wins; a ``@@@`` line is
    tried only when the line before it was not understood. SillyTavern itself only honours
    ``@@activate``/``@@dont_activate``, so this is off unless asked for."""
    content = wi.get("content")
    if not isinstance(content, str) or not content.startswith("@@"):
        return []
    lines = content.split("\n")
    count = 0
    while count < len(lines) and lines[count].startswith("@@"):
        count += 1
    found: dict[str, Any] = {}
    kept: list[str] = []
    notes: list[str] = []
    previous_ok = True
    for line in lines[:count]:
        fallback = line.startswith("@@@")
        if fallback and previous_ok:
            continue
        body = line[3:] if fallback else line[2:]
        name, _, value = body.strip().partition(" ")
        value = value.strip()
        ok = _decorator_value(name, value)
        if ok is None:
            kept.append(line)
            previous_ok = False
            notes.append(f"entry {wi.get('uid')}: decorator {line.strip()!r} has no SillyTavern "
                         "setting; left in the content")
            continue
        previous_ok = True
        found.setdefault(name, ok[0])
    if "position" in found:
        wi["position"] = found["position"]
    elif "depth" in found:
        wi["position"], wi["depth"] = 4, found["depth"]
    if "role" in found:
        wi["role"] = found["role"]
    if "scan_depth" in found:
        wi["scanDepth"] = found["scan_depth"]
    if "activate" in found:
        wi["constant"] = True
    elif "dont_activate" in found:
        wi["disable"] = True
    wi["content"] = "\n".join(kept + lines[count:])
    return notes


def _decorator_value(name: str, value: str) -> tuple[Any] | None:
    """``(setting,)`` for a decorator lorescan maps, ``None`` when it does not apply."""
    if name in ("depth", "scan_depth"):
        # ASCII digits only (str.isdigit also takes '²', which int() refuses), as many as int() reads
        return (int(value),) if value.isascii() and value.isdigit() and len(value) <= 4300 else None
    if name == "position":
        return (V3_POSITIONS[value],) if value in V3_POSITIONS else None
    if name == "role":
        return (V3_ROLES[value],) if value in V3_ROLES else None
    if name in ("activate", "dont_activate"):
        return (True,) if value == "" else None
    return None
