"""The key automata under the unicode word rule (``word_boundaries="unicode"``).

The same Aho-Corasick fast path as SillyTavern's rule (:class:`~lorescan._keys.Needles`), with
three differences, all made when keys are prepared: needle texts are in comparison form (NFC, and
full case folding for case-insensitive keys; :func:`~lorescan._match.key_form`), keys with spaces
are whole words too (phrases found through their longest word, as before, then checked at their
edges), and a whole-word needle records which of its edges the rule checks
(:func:`~lorescan._match.edge_checks`) in place of ``True``. The text a scan gives the automata is
in the same comparison form (see :class:`lorescan._index.UnicodeBoundIndex`), so an occurrence's
neighbours are read from that form: folding never turns a word character into a non-word one or
back, so the form's neighbours decide as the original's would.
"""

from __future__ import annotations

import ahocorasick

from ._keys import KeyItem, Needles
from ._match import UNICODE, WORD, edge_checks, fold, key_form, nfc, unicode_find_word, unicode_word_class


class UnicodeNeedles(Needles):
    """:class:`~lorescan._keys.Needles` for the unicode word rule; ``word`` holds each needle's
    checked edges (1 start, 2 end; 0: a substring needle)."""

    rule = UNICODE
    whole_phrases = True

    def __init__(self, base: int = 0) -> None:
        super().__init__(base)
        #: regex keys' prefilter needles: ids of their own, looked for in the text as written too
        self.literals: set[int] = set()

    def add_literal(self, text: str) -> int:
        """A regex key's prefilter needle, apart from the plain keys' needles of the same text
        (it is looked for in the text's SillyTavern form, where a plain key is not)."""
        nid = super().add(text, False, None)  # type: ignore[arg-type]  # an id space of its own
        self.literals.add(nid)
        return nid

    def key_text(self, text: str, cs: bool) -> str:
        return key_form(text, cs)

    def _key_texts(self, raws: list[str], cs: bool) -> list[str]:
        if "".join(raws).isascii():     # the usual book: ASCII keys are their own NFC; lower is fold
            return raws if cs else list(map(str.lower, raws))
        return list(map(nfc if cs else fold, raws))

    def _add_phrase_keys(self, phrases: list[str], cs: bool, ww: bool, cache: dict[object, KeyItem]) -> list[str]:
        """Keys of words and single spaces, found through their longest word as SillyTavern's are (out
        of the trie); a whole-word one is a phrase needle of its own whose edges are checked (see
        :meth:`find_phrases`)."""
        return self._add_bulk(phrases, cs, ww, cache, phrases=True)

    def find_phrases(self, text: str, lowered: str, found: set[int]) -> None:
        """:meth:`Needles.find_phrases`, a whole-word phrase only where its checked edges do not
        continue a word."""
        on, phrase, cs, word, base = self.phrase_on, self.phrase_text, self.phrase_cs, self.word, self.base
        for tid in found & self.phrase_triggers:
            pids = on[tid]
            for pid in ((pids,) if type(pids) is int else pids):  # type: ignore[union-attr]
                hay = text if pid in cs else lowered
                checks = word[pid - base]
                if unicode_find_word(hay, phrase[pid], checks) if checks else phrase[pid] in hay:
                    found.add(pid)

    def add(self, needle: str, cs: bool, word: bool) -> int:
        nid = super().add(needle, cs, word)
        if word:
            self.word[nid - self.base] = edge_checks(needle)  # type: ignore[call-overload]
        return nid

    def _add_bulk(self, raws: list[str], cs: bool, word: bool, cache: dict[object, KeyItem],
                  phrases: bool = False) -> list[str]:
        start = self.base + len(self.word)
        too_long = super()._add_bulk(raws, cs, word, cache, phrases)
        if word:
            marks = self.word
            for text, nid in reversed(self.ids.get((cs, True), {}).items()):   # the new ones are last
                if nid < start:
                    break
                marks[nid - self.base] = (3 if text.isascii() and text[0].isalnum() and text[-1].isalnum()  # type: ignore[call-overload]
                                          else edge_checks(text))
        return too_long

    def _collect(self, auto: ahocorasick.Automaton, text: str, found: set[int]) -> None:
        """Needles found in ``text`` (in comparison form): a whole-word needle only where no checked
        edge has a word character of a spaced script beside it."""
        n = len(text)
        base, word, length = self.base, self.word, self.length
        wclass = unicode_word_class
        for end, value in auto.iter(text):
            for nid in ((value,) if type(value) is int else value):
                if nid in found:
                    continue
                checks = word[nid - base]
                if checks:
                    start = end - length[nid - base] + 1
                    if checks & 1 and start > 0 and wclass(text[start - 1]) == WORD:
                        continue
                    if checks & 2 and end + 1 < n and wclass(text[end + 1]) == WORD:
                        continue
                found.add(nid)
