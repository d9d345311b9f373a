"""Where a key occurs in one piece of scan text, as ``explain`` shows it: the best occurrence (one
that counts, outside a word where it can), its offset and the word around it, under SillyTavern's
word rule or the unicode one."""

from __future__ import annotations

from functools import lru_cache

from . import _js
from ._keys import match_key_text
from ._match import continues_word, folded_spans, key_form, unicode_continues_word, word_around


@lru_cache(maxsize=1024)
def _lowered(text: str) -> str:
    """A scanned piece lowercased once (every key of every explained entry reads the same pieces)."""
    return _js.lower(text)


def plain_occurrence(needle: str, text: str, cs: bool, ww: bool) -> tuple[int, str, bool, bool] | None:
    """(offset, the word around it, inside a word, counted) of the best occurrence, or ``None``."""
    hay, pat = (text, needle) if cs else (_lowered(text), _js.lower(needle))
    counts_inside = not ww or len(_js.split_ws(pat)) > 1
    best: tuple[int, str, bool, bool] | None = None
    start = hay.find(pat)
    while start != -1:
        end = start + len(pat)
        inside = continues_word(hay, start, end)
        found = (start, word_around(text, start, end), inside, counts_inside or not inside)
        if best is None or (not best[3] and found[3]) or (best[2] and not inside and found[3]):
            best = found
        if best[3] and not best[2]:
            break
        start = hay.find(pat, start + 1)
    if best is not None and not best[3] and match_key_text(text, needle, cs, ww):
        best = (best[0], best[1], best[2], True)   # SillyTavern's own rule has the last word
    return best


def unicode_occurrence(needle: str, text: str, cs: bool,
                        ww: bool) -> tuple[int, str, bool, bool, int] | None:
    """:func:`plain_occurrence` under the unicode word rule, with the match's length: looked for in
    the comparison form (NFC, folded), with offsets and words mapped back to the text as written."""
    hay, where = folded_spans(text, cs)
    pat = key_form(needle, cs)
    best: tuple[int, str, bool, bool, int] | None = None
    start = hay.find(pat) if pat else -1
    while start != -1:
        end = start + len(pat)
        inside = unicode_continues_word(hay, start, end, pat)
        s = where[start]
        e = max(where[end], s + 1)
        found = (s, word_around(text, s, e), inside, not ww or not inside, e - s)
        if best is None or (not best[3] and found[3]):
            best = found
        if best[3]:
            break
        start = hay.find(pat, start + 1)
    return best
