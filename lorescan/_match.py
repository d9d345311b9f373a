"""How a key matches text, described once: case, whole words, the word rule and regex-key syntax.

A :class:`MatchMode` is what an entry's keys are matched with: the global case and whole-word
settings, or the entry's own ``caseSensitive`` / ``matchWholeWords``. The word rule and the
``/pattern/flags`` syntax live here only; the key index, ``explain`` and ``lint`` all use them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

#: the word rules a mode can use: SillyTavern's (ASCII ``\w``, as its whole-word regex has it) and
#: ``"unicode"`` (words of every script; see :func:`unicode_word_class`)
WORD_RULES = ("sillytavern", "unicode")
SILLYTAVERN, UNICODE = WORD_RULES


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


# -- the unicode word rule -----------------------------------------------------------------------

#: scripts written without spaces between words: a key's edge in one of them is not checked
#: (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar). Hangul is not among them: Korean puts
#: spaces between words.
NO_SPACE_RANGES = (
    (0x0E00, 0x0E7F),    # Thai
    (0x0E80, 0x0EFF),    # Lao
    (0x1000, 0x109F),    # Myanmar
    (0x1780, 0x17FF),    # Khmer
    (0x19E0, 0x19FF),    # Khmer symbols
    (0x2E80, 0x2FDF),    # CJK and Kangxi radicals
    (0x3005, 0x3007),    # 々 〆 〇
    (0x3021, 0x3029),    # Hangzhou numerals
    (0x3038, 0x303B),
    (0x3040, 0x30FF),    # Hiragana, Katakana (with ー)
    (0x31F0, 0x31FF),    # Katakana phonetic extensions
    (0x3400, 0x4DBF),    # CJK extension A
    (0x4E00, 0x9FFF),    # CJK unified ideographs
    (0xA9E0, 0xA9FF),    # Myanmar extended-B
    (0xAA60, 0xAA7F),    # Myanmar extended-A
    (0xF900, 0xFAFF),    # CJK compatibility ideographs
    (0xFF66, 0xFF9F),    # halfwidth Katakana
    (0x1B000, 0x1B16F),  # Kana supplement and extensions
    (0x20000, 0x323AF),  # CJK extensions B to H
)
NOT_WORD, WORD, NO_SPACE_WORD = 0, 1, 2
_WORD_CATEGORIES = frozenset(("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "Pc"))


@lru_cache(maxsize=4096)
def unicode_word_class(ch: str) -> int:
    """The unicode word rule's class of one character: :data:`NOT_WORD`, :data:`WORD` or
    :data:`NO_SPACE_WORD` (a word character of a script written without spaces).

    Word characters are Unicode's (UTS #18 ``\\w``, by general category): letters (L*), marks
    (M*), decimal digits (Nd), letter numbers (Nl, like Ⅻ), connector punctuation (Pc, like
    ``_``) and the joiners ZWNJ/ZWJ (inside Indic words and emoji sequences). Other numbers (No:
    ², ½, ①), symbols (emoji included) and the variation selectors (which pick an emoji's or a
    glyph's form, so ``❤`` is ``❤️``) are not.
    """
    cp = ord(ch)
    if cp < 0x80:
        return WORD if ch.isalnum() or ch == "_" else NOT_WORD
    if 0xFE00 <= cp <= 0xFE0F or 0xE0100 <= cp <= 0xE01EF:
        return NOT_WORD
    if cp in (0x200C, 0x200D):
        return WORD
    if unicodedata.category(ch) not in _WORD_CATEGORIES:
        return NOT_WORD
    for lo, hi in NO_SPACE_RANGES:
        if lo <= cp <= hi:
            return NO_SPACE_WORD
    return WORD


def spaced_word_char(ch: str) -> bool:
    """Whether ``ch`` continues a word under the unicode rule: a word character of a script that
    separates words with spaces (a character of Han, kana, Thai, … never does)."""
    return unicode_word_class(ch) == WORD


def edge_checks(key: str) -> int:
    """Which edges of a whole-word key the unicode rule checks: 1 its start, 2 its end (3 both).
    An edge is checked when the key's character there is a word character of a spaced script: a
    key edge in Han, kana, Thai, … or one that is not a word character (``#``, an emoji) has no
    word to continue."""
    if not key:
        return 0
    return (1 if spaced_word_char(key[0]) else 0) | (2 if spaced_word_char(key[-1]) else 0)


def unicode_continues_word(text: str, start: int, end: int, key: str | None = None) -> bool:
    """Whether ``text[start:end]`` continues a word under the unicode rule: at an edge the rule
    checks (see :func:`edge_checks`; ``key`` defaults to the occurrence itself), the text beside
    it is a word character of a spaced script."""
    checks = edge_checks(text[start:end] if key is None else key)
    return bool((checks & 1 and start > 0 and spaced_word_char(text[start - 1]))
                or (checks & 2 and end < len(text) and spaced_word_char(text[end])))


def unicode_find_word(haystack: str, needle: str, checks: int | None = None) -> bool:
    """Whether ``needle`` occurs in ``haystack`` (both in comparison form) as a whole word under
    the unicode rule, keys with spaces included (``checks``: its :func:`edge_checks`, if known)."""
    if checks is None:
        checks = edge_checks(needle)
    n, m = len(haystack), len(needle)
    i = haystack.find(needle)
    while i >= 0:
        if not ((checks & 1 and i > 0 and spaced_word_char(haystack[i - 1]))
                or (checks & 2 and i + m < n and spaced_word_char(haystack[i + m]))):
            return True
        i = haystack.find(needle, i + 1)
    return False


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C (composed ``é`` and ``e`` + U+0301 become one)."""
    return text if text.isascii() or unicodedata.is_normalized("NFC", text) else unicodedata.normalize("NFC", text)


def fold(text: str) -> str:
    """``text`` for case-insensitive comparison under the unicode rule: NFC, full case folding
    (``ß`` → ``ss``, ``ς`` → ``σ``), NFC again (folding may decompose: ``ǰ``). Turkish ``I``
    folds to ``i`` and ``İ`` to ``i`` + U+0307, while ``ı`` stays ``ı``: the default (not the
    Turkish) folding, as JavaScript's ``toLowerCase`` does."""
    if text.isascii():
        return text.lower()
    return nfc(nfc(text).casefold())


def key_form(text: str, case_sensitive: bool) -> str:
    """A key's or a text's form for comparison under the unicode rule."""
    return nfc(text) if case_sensitive else fold(text)


def folded_spans(text: str, case_sensitive: bool) -> tuple[str, list[int]]:
    """``text`` in its comparison form (:func:`key_form`) and, for each of its characters plus
    its end, the offset in ``text`` it comes from: what maps a match found in the form back to
    the text an author wrote."""
    out: list[str] = []
    where: list[int] = []
    i, n = 0, len(text)
    while i < n:
        j = i + 1
        while j < n and (unicodedata.combining(text[j]) or 0x1160 <= ord(text[j]) <= 0x11FF
                         or 0xD7B0 <= ord(text[j]) <= 0xD7FF):   # with its marks, or jamo with vowels
            j += 1
        piece = key_form(text[i:j], case_sensitive)
        out.append(piece)
        where.extend([i] * len(piece))
        i = j
    where.append(n)
    return "".join(out), where


def word_rule_words(rule: str) -> str:
    """How explain and lint name a word rule."""
    return ("the unicode word rule (letters, marks and digits of every script)" if rule == UNICODE
            else "SillyTavern's word rule (ASCII letters, digits and _)")


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
