"""The token budget: what the entries of a pass may add on top of the text already activated.

SillyTavern tests ``tokens(allActivatedText) + tokens(newContent) >= budget`` after adding each
entry's ``content + "\\n"`` to ``newContent``. Counters whose counts add up over such pieces
(``chars4`` by length, ``words`` by runs) are counted incrementally; any other counter is run on
the exact text, so the result is always the one SillyTavern computes.
"""

from __future__ import annotations

import math

from . import _index
from ._js import utf16_len
from ._tokens import Chars4, TokenCounter, Words


class BudgetMeter:
    """Budget bookkeeping for one evaluation."""

    def __init__(self, counter: TokenCounter, budget: int) -> None:
        self.counter = counter
        self.budget = budget
        self.overflowed = False
        self.overflow_entry: str | None = None
        self._activated_text = ""
        self._activated_tokens: int | None = 0
        self.used = 0

    def activated_tokens(self) -> int:
        """``tokens(allActivatedText)``: recursion text of earlier passes."""
        if self._activated_tokens is None:
            self._activated_tokens = self.counter.count(self._activated_text)
        return self._activated_tokens

    def add_activated_text(self, text: str, lines: list[str] | None = None) -> None:
        """``allActivatedText = text + "\\n" + allActivatedText``; ``lines`` are the contents that
        ``text`` joins with "\\n", when known, so the new count can be summed from counts of them."""
        old, old_tokens = self._activated_text, self._activated_tokens
        self._activated_text = text + "\n" + old
        self._activated_tokens = None
        if lines is None or old_tokens is None or (old and old[0].isspace()):
            return
        counter = self.counter
        if isinstance(counter, Words):
            self._activated_tokens = sum(map(counter.count, lines)) + old_tokens
        elif getattr(counter, "additive_at_line_starts", False):
            self._activated_tokens = count_lines(counter, lines) + old_tokens

    def new_pass(self) -> PassContent:
        """``newContent`` of a new pass, counted as this meter's counter allows."""
        counter = self.counter
        kind = (_Chars4Pass if isinstance(counter, Chars4) else _WordsPass if isinstance(counter, Words)
                else _LinesPass if getattr(counter, "additive_at_line_starts", False) else _TextPass)
        return kind(self)


class PassContent:
    """``newContent`` of one pass, with its running token count.

    ``add(content, ignore, base)`` appends ``content + "\n"`` and tells whether the entry fits on
    top of ``base`` tokens (always, for ``ignoreBudget``); each kind of counter has its own class
    (:meth:`BudgetMeter.new_pass` picks it), so that an evaluation, which calls it for every entry
    it activates, makes no choice per entry and no reference cycle.
    """

    def __init__(self, meter: BudgetMeter) -> None:
        self.meter = meter
        self.tokens = 0

    def add(self, content: str, ignore: bool, base: int) -> bool:
        raise NotImplementedError

    def _fits(self, total: int, ignore: bool) -> bool:
        meter = self.meter
        if not ignore and total >= meter.budget:
            return False
        if total > meter.used:
            meter.used = total
        return True


class _LinesPass(PassContent):
    """For counters whose counts add up at line starts (see :class:`_LineTally`)."""

    def __init__(self, meter: BudgetMeter) -> None:
        super().__init__(meter)
        self.tally = _LineTally(meter.counter)

    def add(self, content: str, ignore: bool, base: int) -> bool:
        # _LineTally.add and _fits inlined for the common case (a line that starts a safe piece
        # and whose count is remembered): this runs for every entry an evaluation activates
        # (``spend_lines`` in _csrc/budget.c does the same for a run of such entries)
        tally = self.tally
        first = content[:1]
        n = tally.memo.get(content) if first and not first.isspace() else None
        if n is None:
            total = tally.add(content)
        else:
            tally.safe += tally.tail_tokens
            tally.tail = [content]
            tally.tail_tokens = n
            total = tally.safe + n
        self.tokens = total
        total += base
        meter = self.meter
        if not ignore and total >= meter.budget:
            return False
        if total > meter.used:
            meter.used = total
        return True


class _Chars4Pass(PassContent):
    """``chars4``: a quarter of the UTF-16 length, rounded up."""

    def __init__(self, meter: BudgetMeter) -> None:
        super().__init__(meter)
        self._length = 0

    def add(self, content: str, ignore: bool, base: int) -> bool:
        self._length += utf16_len(content) + 1
        self.tokens = math.ceil(self._length / 4)
        return self._fits(base + self.tokens, ignore)


class _WordsPass(PassContent):
    """``words``: runs of non-space characters (the "\n" adds no word)."""

    def add(self, content: str, ignore: bool, base: int) -> bool:
        self.tokens += self.meter.counter.count(content)
        return self._fits(base + self.tokens, ignore)


class _TextPass(PassContent):
    """Any other counter: run on the exact text so far."""

    def __init__(self, meter: BudgetMeter) -> None:
        super().__init__(meter)
        self.parts: list[str] = []

    def add(self, content: str, ignore: bool, base: int) -> bool:
        self.parts.append(content)
        self.tokens = self.meter.counter.count("".join(c + "\n" for c in self.parts))
        return self._fits(base + self.tokens, ignore)


class _LineTally:
    """The running count of ``line + "\\n"`` pieces for a counter whose counts add up across a "\\n"
    followed by a non-space character (BPE pre-tokens never cross one): the text up to such a
    boundary is final, so only the tail since then is counted, usually one line whose count is
    remembered across evaluations."""

    __slots__ = ("counter", "count_line", "memo", "safe", "tail", "tail_tokens")

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.count_line = getattr(counter, "count_line", None) or (lambda line: counter.count(line + "\n"))
        memo = getattr(counter, "line_counts", None)     # line -> count_line(line), when the counter keeps it
        self.memo: dict[str, int] = memo if memo is not None else {}
        self.safe = 0
        self.tail: list[str] = []      # the lines since the last safe boundary
        self.tail_tokens = 0

    def add(self, line: str) -> int:
        """Append ``line + "\\n"``; the tokens of everything so far."""
        first = line[:1]
        if first and not first.isspace() or not self.tail:
            self.safe += self.tail_tokens
            self.tail = [line]
            n = self.memo.get(line)
            self.tail_tokens = n if n is not None else self.count_line(line)
        else:
            self.tail.append(line)
            self.tail_tokens = self.counter.count("".join(t + "\n" for t in self.tail))
        return self.safe + self.tail_tokens


def count_lines(counter: TokenCounter, lines: list[str]) -> int:
    """Tokens of ``"".join(line + "\\n" for line in lines)`` (one empty line for none), for a counter
    whose counts add up at line starts (see :class:`_LineTally`)."""
    memo = getattr(counter, "line_counts", None)
    if memo is not None and lines:
        # every line remembered and each after the first starting a safe piece: a sum
        if _index.native is not None and type(lines) is list and type(memo) is dict:    # the same in C
            got = _index.native.sum_line_counts(lines, memo)
            if got is not None:
                return got
        else:
            counts = list(map(memo.get, lines))
            if None not in counts and all(line[:1] and not line[:1].isspace() for line in lines[1:]):
                return sum(counts)
    tally = _LineTally(counter)
    total = 0
    for line in lines or [""]:
        total = tally.add(line)
    return total
