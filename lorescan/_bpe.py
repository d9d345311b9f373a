"""cl100k token counts of short ASCII texts in Python, before tiktoken's tokenizer is needed.

Building tiktoken's tokenizer (its Rust ``CoreBPE``: the rank table hashed, the split pattern
compiled) costs a small job more than the rest of its work. For ASCII text the split pattern is
exactly expressible with ASCII classes (a letter is ``[A-Za-z]``, a number ``[0-9]``, a space one of
the six ASCII ``White_Space`` characters), and the byte-pair merge is tiktoken's own: the lowest
rank first, the leftmost of equal ones, until no pair has a rank. The counts equal tiktoken's
(tests compare them on many texts); :class:`lorescan._tokens.Cl100k` uses this only for its first
few thousand characters of ASCII text, then tiktoken for everything.
"""

from __future__ import annotations

import re
from typing import Protocol


class Ranks(Protocol):
    """A token -> rank table: a dict, or :class:`lorescan._rank_cache.RankTable`."""

    def get(self, token: bytes, default: int, /) -> int: ...

    def __contains__(self, token: object) -> bool: ...


_S = r"\t\n\x0b\x0c\r "
#: cl100k_base's split pattern for ASCII text (``$`` there is the end of the text: ``\Z`` here)
_SPLIT = re.compile(
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?+[A-Za-z]++|[0-9]{1,3}+| ?[^" + _S + r"A-Za-z0-9]++[\r\n]*+"
    r"|[" + _S + r"]++\Z|[" + _S + r"]*[\r\n]|[" + _S + r"]+(?![^" + _S + r"])|[" + _S + r"]")
_NONE = 1 << 62


def count_ascii(text: str, ranks: Ranks) -> int:
    """The number of cl100k tokens of ``text`` (ASCII only), ``ranks`` being the encoding's table."""
    n = 0
    for piece in _SPLIT.findall(text):
        b = piece.encode("ascii")
        n += 1 if b in ranks else _merged_parts(b, ranks)
    return n


def _merged_parts(piece: bytes, ranks: Ranks) -> int:
    """How many tokens tiktoken's ``byte_pair_merge`` leaves of ``piece``."""
    get = ranks.get
    bounds = list(range(len(piece) + 1))
    pair = [get(piece[i:i + 2], _NONE) for i in range(len(piece) - 1)]   # part i with part i + 1
    while pair:
        low = min(pair)
        if low == _NONE:
            break
        i = pair.index(low)
        del bounds[i + 1], pair[i]
        if i > 0:
            pair[i - 1] = get(piece[bounds[i - 1]:bounds[i + 1]], _NONE)
        if i < len(pair):
            pair[i] = get(piece[bounds[i]:bounds[i + 2]], _NONE)
    return len(bounds) - 1
