"""How a key matches text, described once: case, whole words, the word rule and regex-key syntax.

A :class:`MatchMode` is what an entry's keys are matched with: the global case and whole-word
settings, or the entry's own ``caseSensitive`` / ``matchWholeWords``. The word rule and the
``/pattern/flags`` syntax live here only; the key index, ``explain`` and ``lint`` all use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

#: the word rules a mode can use: SillyTavern's (ASCII ``\w``, as its whole-word regex has it)
WORD_RULES = ("sillytavern",)


@dataclass(frozen=True, slots=True)
class MatchMode:
    """Case sensitivity, whole-word matching and the word rule that decides a word's edges.

    Hashable and interned (:meth:`of`): the key index groups entries by mode and caches per mode.
    """

    case_sensitive: bool = False
    whole_words: bool = True
    word_rule: str = "sillytavern"

    _interned: ClassVar[dict[tuple[bool, bool, str], MatchMode]] = {}

    @classmethod
    def of(cls, case_sensitive: bool, whole_words: bool, word_rule: str = "sillytavern") -> MatchMode:
        """The one mode with these values."""
        k = (case_sensitive, whole_words, word_rule)
        got = cls._interned.get(k)
        if got is None:
            if word_rule not in WORD_RULES:
                raise ValueError(f"unknown word rule {word_rule!r} (known: {', '.join(WORD_RULES)})")
            got = cls._interned.setdefault(k, cls(case_sensitive, whole_words, word_rule))
        return got


# -- the word rule --------------------------------------------------------------------------------

def is_word_char(ch: str) -> bool:
    """SillyTavern's word character: ASCII ``\\w`` (JavaScript regexes without the ``u`` flag)."""
    return ch.isascii() and (ch.isalnum() or ch == "_")


def continues_word(text: str, start: int, end: int) -> bool:
    """Whether the occurrence ``text[start:end]`` touches a word character on either side (so a
    whole-word key does not match there)."""
    return (start > 0 and is_word_char(text[start - 1])) or (end < len(text) and is_word_char(text[end]))


def word_around(text: str, start: int, end: int) -> str:
    """The word holding ``text[start:end]``, for showing an author where a key occurred (letters of
    any script count here, so the word shown is the one a reader sees)."""
    def wordy(ch: str) -> bool:
        return is_word_char(ch) or (not ch.isascii() and ch.isalnum())

    a, b = start, end
    while a > 0 and wordy(text[a - 1]):
        a -= 1
    while b < len(text) and wordy(text[b]):
        b += 1
    return text[a:b]


def find_word(haystack: str, needle: str) -> bool:
    """Whether ``needle`` occurs in ``haystack`` as a whole word: SillyTavern's
    ``(?:^|\\W)(<needle>)(?:$|\\W)`` (no flags, so ASCII ``\\W``), without building a regex (a
    key may be far longer than any pattern should be)."""
    n, m = len(haystack), len(needle)
    i = haystack.find(needle)
    while i >= 0:
        if (i == 0 or not is_word_char(haystack[i - 1])) and (i + m == n or not is_word_char(haystack[i + m])):
            return True
        i = haystack.find(needle, i + 1)
    return False


# -- regex-key syntax -----------------------------------------------------------------------------

#: ``/pattern/flags`` as SillyTavern's ``parseRegexFromString`` reads it (flags JavaScript knows)
REGEX_KEY = re.compile(r"/([\s\S]+?)/([gimsuy]*)")
#: anything shaped like ``/pattern/flags``, whatever the flags (what an author may have meant)
LOOKS_LIKE_REGEX = re.compile(r"/([\s\S]+)/([A-Za-z]*)")
_UNESCAPED_SLASH = re.compile(r"(?:^|[^\\])/")


def regex_key_source(text: str) -> tuple[str, str] | None:
    """(raw pattern, flags) of a key written as a regex, before any unescaping, or ``None``: what the
    key index reads to find literals every match contains."""
    m = REGEX_KEY.fullmatch(text)
    if m is None or _UNESCAPED_SLASH.search(m.group(1)):
        return None
    return m.group(1), m.group(2)


def split_regex_key(text: str) -> tuple[str, str] | None:
    """(pattern, flags) of a trimmed key written as a regex, or ``None`` when SillyTavern reads it as
    plain text by its syntax alone (an unescaped ``/`` inside, or unknown flags). The pattern keeps
    its escapes but its first ``\\/`` becomes ``/``, as SillyTavern's ``replace`` does; whether
    JavaScript accepts the pattern is :func:`lorescan._jsregex.parse_regex_key`'s question."""
    parts = regex_key_source(text)
    return None if parts is None else (parts[0].replace("\\/", "/", 1), parts[1])
