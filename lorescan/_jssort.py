"""``Array.prototype.sort`` with a comparator, step for step as V8 runs it (TimSort).

SillyTavern sorts entries with ``(a, b) => b.order - a.order``. For numbers that is a consistent
comparator and any stable sort gives V8's result; lorescan then sorts by key. An order that is not
a number makes the comparator answer ``NaN``, which is neither below nor at or above zero, and the
result depends on which comparisons the sort makes and how it reads each answer. V8's TimSort,
derived from CPython's ``list.sort``, tests ``order < 0`` in some places and ``order >= 0`` in
others (where CPython always asks ``<``), so Python's sort cannot stand in for it: this module
makes the same comparisons in the same order and reads them the same way. It is used only when a
sort meets such a key; ``tests/fixtures/v8_sort.json`` holds results of V8 itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
Compare = Callable[[T, T], float]

_MIN_GALLOP = 7


def v8_sort(items: list[T], compare: Compare[T]) -> list[T]:
    """A sorted copy of ``items``, as ``items.sort(compare)`` leaves the array in V8."""
    a = list(items)
    if len(a) >= 2:
        _TimSort(a, compare).run()
    return a


class _TimSort:
    """One sort's state: the array, the comparator, the pending runs and the gallop threshold."""

    def __init__(self, a: list, compare: Compare) -> None:
        self.a = a
        self.cmp = compare
        self.runs: list[list[int]] = []     # [base, length]
        self.min_gallop = _MIN_GALLOP

    def run(self) -> None:
        low, remaining = 0, len(self.a)
        min_run = _min_run_length(remaining)
        while remaining:
            n = self._count_and_make_run(low, low + remaining)
            if n < min_run:
                forced = min(min_run, remaining)
                self._binary_insertion_sort(low, low + n, low + forced)
                n = forced
            self.runs.append([low, n])
            self._merge_collapse()
            low += n
            remaining -= n
        while len(self.runs) > 1:
            n = len(self.runs) - 2
            if n > 0 and self.runs[n - 1][1] < self.runs[n + 1][1]:
                n -= 1
            self._merge_at(n)

    def _binary_insertion_sort(self, low: int, start: int, high: int) -> None:
        a, cmp = self.a, self.cmp
        for i in range(start + 1 if low == start else start, high):
            left, right = low, i
            pivot = a[right]
            while left < right:
                mid = left + ((right - left) >> 1)
                if cmp(pivot, a[mid]) < 0:
                    right = mid
                else:
                    left = mid + 1
            a[left + 1:i + 1] = a[left:i]
            a[left] = pivot

    def _count_and_make_run(self, low_arg: int, high: int) -> int:
        a, cmp = self.a, self.cmp
        low = low_arg + 1
        if low == high:
            return 1
        length = 2
        descending = cmp(a[low], a[low - 1]) < 0
        previous = a[low]
        for idx in range(low + 1, high):
            order = cmp(a[idx], previous)
            if (order >= 0) if descending else (order < 0):
                break
            previous = a[idx]
            length += 1
        if descending:
            a[low_arg:low_arg + length] = a[low_arg:low_arg + length][::-1]
        return length

    def _merge_collapse(self) -> None:
        runs = self.runs
        while len(runs) > 1:
            n = len(runs) - 2
            if not _invariant(runs, n + 1) or not _invariant(runs, n):
                if runs[n - 1][1] < runs[n + 1][1]:
                    n -= 1
                self._merge_at(n)
            elif runs[n][1] <= runs[n + 1][1]:
                self._merge_at(n)
            else:
                break

    def _merge_at(self, i: int) -> None:
        runs, a = self.runs, self.a
        base_a, length_a = runs[i]
        base_b, length_b = runs[i + 1]
        runs[i][1] = length_a + length_b
        del runs[i + 1]
        # where the first element of run B goes in run A: elements before it are in place
        k = _gallop_right(self.cmp, a, a[base_b], base_a, length_a, 0)
        base_a += k
        length_a -= k
        if length_a == 0:
            return
        # where the last element of run A goes in run B: elements after it are in place
        length_b = _gallop_left(self.cmp, a, a[base_a + length_a - 1], base_b, length_b, length_b - 1)
        if length_b == 0:
            return
        if length_a <= length_b:
            self._merge_low(base_a, length_a, base_b, length_b)
        else:
            self._merge_high(base_a, length_a, base_b, length_b)

    def _merge_low(self, base_a: int, length_a: int, base_b: int, length_b: int) -> None:
        """Merge run A (copied aside) and the following run B, from the left."""
        a = self.a
        m = _Merge(a[base_a:base_a + length_a], base_a, 0, base_b, length_a, length_b)
        a[m.dest] = a[m.cx]
        m.dest += 1
        m.cx += 1
        m.lb -= 1
        end = _DONE if m.lb == 0 else _COPY if m.la == 1 else self._merging(m, self._low_steps, self._low_gallop)
        if end == _COPY:    # the last element of run A goes after what is left of run B
            a[m.dest:m.dest + m.lb] = a[m.cx:m.cx + m.lb]
            a[m.dest + m.lb] = m.temp[m.ct]
        elif m.la > 0:
            a[m.dest:m.dest + m.la] = m.temp[m.ct:m.ct + m.la]

    def _merge_high(self, base_a: int, length_a: int, base_b: int, length_b: int) -> None:
        """Merge run A and the following run B (copied aside), from the right."""
        a = self.a
        m = _Merge(a[base_b:base_b + length_b], base_b + length_b - 1, length_b - 1, base_a + length_a - 1,
                   length_a, length_b)
        a[m.dest] = a[m.cx]
        m.dest -= 1
        m.cx -= 1
        m.la -= 1
        end = _DONE if m.la == 0 else _COPY if m.lb == 1 else self._merging(m, self._high_steps, self._high_gallop)
        if end == _COPY:    # the first element of run B goes before what is left of run A
            m.dest -= m.la
            m.cx -= m.la
            a[m.dest + 1:m.dest + 1 + m.la] = a[m.cx + 1:m.cx + 1 + m.la]
            a[m.dest] = m.temp[m.ct]
        elif m.lb > 0:
            a[m.dest - (m.lb - 1):m.dest + 1] = m.temp[0:m.lb]

    def _merging(self, m: _Merge, steps: Callable[[_Merge, int], int],
                 gallop: Callable[[_Merge, int], tuple[int, int]]) -> int:
        """A merge's loop: one element at a time until a run keeps winning, then galloping while
        it pays (each gallop lowers the threshold, leaving raises it); how the merge ended."""
        min_gallop = self.min_gallop
        while True:
            end = steps(m, min_gallop)
            if end:
                return end
            end, min_gallop = gallop(m, min_gallop + 1)
            if end:
                return end
            min_gallop += 1
            self.min_gallop = min_gallop

    def _low_steps(self, m: _Merge, min_gallop: int) -> int:
        a, cmp, temp = self.a, self.cmp, m.temp
        m.wins_a = m.wins_b = 0
        while True:
            if cmp(a[m.cx], temp[m.ct]) < 0:
                a[m.dest] = a[m.cx]
                m.dest += 1
                m.cx += 1
                m.wins_b += 1
                m.lb -= 1
                m.wins_a = 0
                if m.lb == 0:
                    return _DONE
                if m.wins_b >= min_gallop:
                    return 0
            else:
                a[m.dest] = temp[m.ct]
                m.dest += 1
                m.ct += 1
                m.wins_a += 1
                m.la -= 1
                m.wins_b = 0
                if m.la == 1:
                    return _COPY
                if m.wins_a >= min_gallop:
                    return 0

    def _low_gallop(self, m: _Merge, min_gallop: int) -> tuple[int, int]:
        a, cmp, temp = self.a, self.cmp, m.temp
        first = True
        while m.wins_a >= _MIN_GALLOP or m.wins_b >= _MIN_GALLOP or first:
            first = False
            min_gallop = max(1, min_gallop - 1)
            self.min_gallop = min_gallop
            k = m.wins_a = _gallop_right(cmp, temp, a[m.cx], m.ct, m.la, 0)
            if k > 0:
                a[m.dest:m.dest + k] = temp[m.ct:m.ct + k]
                m.dest += k
                m.ct += k
                m.la -= k
                if m.la == 1:
                    return _COPY, min_gallop
                if m.la == 0:   # only an inconsistent comparator gets here
                    return _DONE, min_gallop
            a[m.dest] = a[m.cx]
            m.dest += 1
            m.cx += 1
            m.lb -= 1
            if m.lb == 0:
                return _DONE, min_gallop
            k = m.wins_b = _gallop_left(cmp, a, temp[m.ct], m.cx, m.lb, 0)
            if k > 0:
                a[m.dest:m.dest + k] = a[m.cx:m.cx + k]
                m.dest += k
                m.cx += k
                m.lb -= k
                if m.lb == 0:
                    return _DONE, min_gallop
            a[m.dest] = temp[m.ct]
            m.dest += 1
            m.ct += 1
            m.la -= 1
            if m.la == 1:
                return _COPY, min_gallop
        return 0, min_gallop

    def _high_steps(self, m: _Merge, min_gallop: int) -> int:
        a, cmp, temp = self.a, self.cmp, m.temp
        m.wins_a = m.wins_b = 0
        while True:
            if cmp(temp[m.ct], a[m.cx]) < 0:
                a[m.dest] = a[m.cx]
                m.dest -= 1
                m.cx -= 1
                m.wins_a += 1
                m.la -= 1
                m.wins_b = 0
                if m.la == 0:
                    return _DONE
                if m.wins_a >= min_gallop:
                    return 0
            else:
                a[m.dest] = temp[m.ct]
                m.dest -= 1
                m.ct -= 1
                m.wins_b += 1
                m.lb -= 1
                m.wins_a = 0
                if m.lb == 1:
                    return _COPY
                if m.wins_b >= min_gallop:
                    return 0

    def _high_gallop(self, m: _Merge, min_gallop: int) -> tuple[int, int]:
        a, cmp, temp = self.a, self.cmp, m.temp
        first = True
        while m.wins_a >= _MIN_GALLOP or m.wins_b >= _MIN_GALLOP or first:
            first = False
            min_gallop = max(1, min_gallop - 1)
            self.min_gallop = min_gallop
            k = m.wins_a = m.la - _gallop_right(cmp, a, temp[m.ct], m.cx - m.la + 1, m.la, m.la - 1)
            if k > 0:
                m.dest -= k
                m.cx -= k
                a[m.dest + 1:m.dest + 1 + k] = a[m.cx + 1:m.cx + 1 + k]
                m.la -= k
                if m.la == 0:
                    return _DONE, min_gallop
            a[m.dest] = temp[m.ct]
            m.dest -= 1
            m.ct -= 1
            m.lb -= 1
            if m.lb == 1:
                return _COPY, min_gallop
            k = m.wins_b = m.lb - _gallop_left(cmp, temp, a[m.cx], 0, m.lb, m.lb - 1)
            if k > 0:
                m.dest -= k
                m.ct -= k
                a[m.dest + 1:m.dest + 1 + k] = temp[m.ct + 1:m.ct + 1 + k]
                m.lb -= k
                if m.lb == 1:
                    return _COPY, min_gallop
                if m.lb == 0:   # only an inconsistent comparator gets here
                    return _DONE, min_gallop
            a[m.dest] = a[m.cx]
            m.dest -= 1
            m.cx -= 1
            m.la -= 1
            if m.la == 0:
                return _DONE, min_gallop
        return 0, min_gallop


_DONE, _COPY = 1, 2     # how a merge ended: run B (low) or A (high) used up, or one element left


class _Merge:
    """The cursors of one merge: where the next element goes, the run copied aside (``temp``,
    cursor ``ct``), the other run's cursor ``cx``, the elements left in runs A and B, and the
    wins in a row of each."""

    __slots__ = ("temp", "dest", "ct", "cx", "la", "lb", "wins_a", "wins_b")

    def __init__(self, temp: list, dest: int, ct: int, cx: int, la: int, lb: int) -> None:
        self.temp, self.dest, self.ct, self.cx, self.la, self.lb = temp, dest, ct, cx, la, lb
        self.wins_a = self.wins_b = 0


def _min_run_length(n: int) -> int:
    r = 0
    while n >= 64:
        r |= n & 1
        n >>= 1
    return n + r


def _invariant(runs: list[list[int]], n: int) -> bool:
    if n < 2:
        return True
    return runs[n - 2][1] > runs[n - 1][1] + runs[n][1]


def _gallop_left(cmp: Compare, array: list, key: object, base: int, length: int, hint: int) -> int:
    """Where ``key`` goes in the sorted ``array[base:base + length]``: before the elements equal
    to it, starting from ``hint``."""
    last, offset = 0, 1
    if cmp(array[base + hint], key) < 0:
        limit = length - hint
        while offset < limit:
            if cmp(array[base + hint + offset], key) >= 0:
                break
            last = offset
            offset = (offset << 1) + 1
        offset = min(offset, limit)
        last += hint
        offset += hint
    else:
        limit = hint + 1
        while offset < limit:
            if cmp(array[base + hint - offset], key) < 0:
                break
            last = offset
            offset = (offset << 1) + 1
        offset = min(offset, limit)
        last, offset = hint - offset, hint - last
    last += 1
    while last < offset:
        m = last + ((offset - last) >> 1)
        if cmp(array[base + m], key) < 0:
            last = m + 1
        else:
            offset = m
    return offset


def _gallop_right(cmp: Compare, array: list, key: object, base: int, length: int, hint: int) -> int:
    """Where ``key`` goes in the sorted ``array[base:base + length]``: after the elements equal
    to it, starting from ``hint``."""
    last, offset = 0, 1
    if cmp(key, array[base + hint]) < 0:
        limit = hint + 1
        while offset < limit:
            if cmp(key, array[base + hint - offset]) >= 0:
                break
            last = offset
            offset = (offset << 1) + 1
        offset = min(offset, limit)
        last, offset = hint - offset, hint - last
    else:
        limit = length - hint
        while offset < limit:
            if cmp(key, array[base + hint + offset]) < 0:
                break
            last = offset
            offset = (offset << 1) + 1
        offset = min(offset, limit)
        last += hint
        offset += hint
    last += 1
    while last < offset:
        m = last + ((offset - last) >> 1)
        if cmp(key, array[base + m]) < 0:
            offset = m
        else:
            last = m + 1
    return offset
