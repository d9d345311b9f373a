"""Bounded memos: what the engine remembers across evaluations, kept under a size limit.

A memo past its limit drops its older half (by insertion order) rather than everything: a service
or a long replay then never meets a moment where every message, count and record must be made
again at once, which would hold up the requests in flight.
"""

from __future__ import annotations

from itertools import islice
from typing import Any


def trim_oldest(memo: dict[Any, Any], limit: int) -> None:
    """Drop the older half of ``memo`` when it holds more than ``limit`` entries.

    Safe beside threads that read and add entries (the engine's memos are shared by the threads
    of one compiled book): an entry another thread dropped or added meanwhile is left alone.
    """
    if len(memo) <= limit:
        return
    try:
        old = list(islice(memo, len(memo) // 2))
    except RuntimeError:    # another thread added an entry while the keys were read: next time
        return
    for key in old:
        memo.pop(key, None)
