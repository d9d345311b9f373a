"""Macro substitution in keys, contents, the first chat message and the author's note.

SillyTavern replaces the legacy tokens ``<USER>``, ``<BOT>``, ``<CHAR>``, ``<CHARIFNOTGROUP>`` and
``<GROUP>`` (any case, even without ``{{``), then the ``{{…}}`` macros. lorescan implements the
macros that do not depend on the live UI: names, card fields, ``{{newline}}``, ``{{trim}}``,
``{{noop}}`` and ``{{// comments}}``. Unknown macros are left as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import partial

_LEGACY = [
    (re.compile(r"<USER>", re.I), "user"),
    (re.compile(r"<BOT>", re.I), "char"),
    (re.compile(r"<CHAR>", re.I), "char"),
    (re.compile(r"<CHARIFNOTGROUP>", re.I), "group"),
    (re.compile(r"<GROUP>", re.I), "group"),
]
_NEWLINE = re.compile(r"\{\{newline\}\}", re.I)
_TRIM = re.compile(r"(?:\r?\n)*\{\{trim\}\}(?:\r?\n)*", re.I)
_NOOP = re.compile(r"\{\{noop\}\}", re.I)
_COMMENT = re.compile(r"\{\{//[\s\S]*?\}\}")


@dataclass(frozen=True)
class MacroEnv:
    """Values the macros expand to. ``group`` defaults to the character's name (no group chat)."""

    user: str = "User"
    char: str = "Character"
    group: str | None = None
    variables: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    def value(self, name: str) -> str:
        if name == "user":
            return self.user
        if name == "char":
            return self.char
        if name == "group":
            return self.group if self.group is not None else self.char
        return dict(self.variables).get(name, "")

    def pattern(self) -> re.Pattern[str]:
        names = ["user", "char", "group", "charIfNotGroup"] + [k for k, _ in self.variables]
        return _env_pattern(tuple(names))

    def lookup(self, name: str) -> str:
        low = name.lower()
        if low in ("user", "char", "group"):
            return self.value(low)
        if low == "charifnotgroup":
            return self.value("group")
        for key, value in self.variables:
            if key.lower() == low:
                return value
        return ""


_PATTERNS: dict[tuple[str, ...], re.Pattern[str]] = {}


def _env_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    pat = _PATTERNS.get(names)
    if pat is None:
        pat = re.compile(r"\{\{(" + "|".join(re.escape(n) for n in names) + r")\}\}", re.I)
        _PATTERNS[names] = pat
    return pat


def substitute(text: str | None, env: MacroEnv) -> str:
    """``substituteParams(text)`` for the macros lorescan knows; ``''`` for empty or missing text."""
    if not text:
        return ""
    if "<" not in text and "{{" not in text:   # most contents: nothing to substitute
        return text
    for pat, name in _LEGACY:
        if "<" in text:
            text = pat.sub(partial(_legacy_value, env, name), text)
    if "{{" not in text:
        return text
    text = _NEWLINE.sub("\n", text)
    text = _TRIM.sub("", text)
    text = _NOOP.sub("", text)
    text = env.pattern().sub(lambda m: env.lookup(m.group(1)), text)
    text = _COMMENT.sub("", text)
    return text


def _legacy_value(env: MacroEnv, name: str, _match: re.Match[str]) -> str:
    """A legacy ``<USER>``-style macro's value (``re.sub``'s replacement for one match)."""
    return env.value(name)
