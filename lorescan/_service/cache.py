"""Compiled books kept in memory, by content hash, within a size bound.

A key is the hash of everything a compile reads: each book's content hash, name and scope, the
SillyTavern version and the token counter. Requests that name the same books with the same
content share one :class:`Lore`, whatever they call them in the store, and a changed book is a new
key (the old one ages out).

Compiling runs in its own thread pool, never on the event loop, and at most once per key: requests
that arrive while a key compiles wait for that compile (single flight). A compiled ``Lore``
mutates its memos (key hits per message, macro-bound indexes, scan orders) while it activates, so
each cached entry carries a lock that every activation on it holds while it runs (see ``api``):
activations of different books run side by side, activations of one book one at a time, in the
order they arrived. The lock is taken on the event loop before the activation runs there or a
worker thread is asked for, so a thread is only ever busy with an activation that can run.

Sizes are estimates from the books' text (a compiled book of 20,000 generated entries takes about
63 MB, ~3,100 bytes per entry), plus the key indexes a book binds to more pairs of user and
character names as its chats arrive (about 1.4 MB a pair at 20,000 entries when its keys hold
macros; counted when the book is next asked for); least recently used entries are evicted beyond
the bound, and the newest is always kept, however large.
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Executor
from dataclasses import dataclass, field

from .._construct import freeze_long_lived
from .._engine import OWNED_GC_THRESHOLDS, Lore
from .._mode import Mode
from .._model import Lorebook, Settings
from .metrics import Metrics

#: bytes per entry, and per character of its content and keys (fitted on generated books)
ENTRY_BYTES = 1600
CHAR_BYTES = 3
#: the cyclic collector's thresholds once books are compiled, in a process the service owns (see
#: ``_engine.OWNED_GC_THRESHOLDS``); raised after the first compile, not before: reading and
#: linting a book under them left 5 MB more heap
GC_THRESHOLDS = OWNED_GC_THRESHOLDS
#: what a miss calls (in the compile thread): the books, and the settings to prepare their index for
Build = Callable[[], tuple[list[Lorebook], Settings | None]]


def estimate_bytes(books: Iterable[Lorebook]) -> int:
    """About how much memory the compiled books take, from their entry count and text."""
    total = 0
    for book in books:
        for e in book.entries:
            text = len(e.content) if isinstance(e.content, str) else 0
            for keys in (e.key, e.keysecondary):
                if isinstance(keys, list):
                    text += sum(len(k) for k in keys if isinstance(k, str))
            total += ENTRY_BYTES + CHAR_BYTES * text
    return total


#: weight of the newest evaluation in :attr:`Compiled.seconds`
RECENT_WEIGHT = 0.2


@dataclass
class Compiled:
    """A compiled set of books, its estimated size, the lock its activations hold (first come,
    first served), and how long one untraced evaluation on it takes lately (``None`` before the
    first), which decides where the next one runs (see ``service.Service.runs_inline``)."""

    lore: Lore
    #: the estimate from the books' text
    base: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    seconds: float | None = None
    #: ``base`` plus the key indexes bound to further pairs of names, as last counted
    size: int = field(init=False)

    def __post_init__(self) -> None:
        self.size = self.base

    def recount(self) -> int:
        """Set :attr:`size` to the estimate now (the bound key indexes change as chats come);
        the change."""
        old, self.size = self.size, self.base + self.lore._bound_bytes()
        return self.size - old

    def note(self, seconds: float) -> None:
        """Fold one evaluation's time into :attr:`seconds` (a moving average)."""
        old = self.seconds
        self.seconds = seconds if old is None else old + RECENT_WEIGHT * (seconds - old)


class CompiledCache:
    """Compiled books by key (see the module docstring), at most ``max_bytes`` of them."""

    def __init__(self, max_bytes: int, executor: Executor, metrics: Metrics, freeze: bool = False) -> None:
        self.max_bytes = max_bytes
        self._freeze = freeze
        self.bytes = 0
        self._executor = executor
        self._metrics = metrics
        self._items: OrderedDict[str, Compiled] = OrderedDict()
        self._pending: dict[str, asyncio.Task[Compiled]] = {}

    def __len__(self) -> int:
        return len(self._items)

    async def get(self, key: str, build: Build, compat: Mode, tokenizer: str) -> Compiled:
        """The compiled books for ``key``; on a miss ``build()`` gives the books (read in the
        compile thread) and the settings whose key index to build with them (the first request's),
        compiled for ``compat`` and ``tokenizer``."""
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
            self._metrics.cache_hits.inc()
            grown = item.recount()
            if grown:
                self.bytes += grown
                self._evict()
            return item
        task = self._pending.get(key)
        if task is None:
            self._metrics.cache_misses.inc()
            task = asyncio.ensure_future(self._compile(key, build, compat, tokenizer))
            self._pending[key] = task
        else:
            self._metrics.cache_hits.inc()       # compiled once, for every request that waited
        return await asyncio.shield(task)

    async def _compile(self, key: str, build: Build, compat: Mode, tokenizer: str) -> Compiled:
        loop = asyncio.get_running_loop()
        try:
            item = await loop.run_in_executor(self._executor, _compile, build, compat, tokenizer, self._metrics)
            self._insert(key, item)
            # Out of the cyclic collector's reach: a full collection would walk every object of the
            # compiled books (~150 ms at 20,000 entries), in the middle of someone's request. A book
            # dropped from the cache is still freed (a Lore holds no reference cycles). Then the
            # collector's thresholds go up (see GC_THRESHOLDS). Only when the service owns the
            # process: both are process-wide.
            if self._freeze:
                freeze_long_lived()
                gc.set_threshold(*GC_THRESHOLDS)
            return item
        finally:
            del self._pending[key]

    def _insert(self, key: str, item: Compiled) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.bytes -= old.size
        self._items[key] = item
        self.bytes += item.size
        self._evict()

    def _evict(self) -> None:
        """The least recently used entries out while the cache is over its bound (the newest stays)."""
        while self.bytes > self.max_bytes and len(self._items) > 1:
            _, evicted = self._items.popitem(last=False)
            self.bytes -= evicted.size
            self._metrics.cache_evictions.inc()
        self._metrics.cache_bytes.set(self.bytes)
        self._metrics.cache_books.set(len(self._items))


def _compile(build: Build, compat: Mode, tokenizer: str, metrics: Metrics) -> Compiled:
    """Read and compile the books (in a compile thread), timing the compile."""
    books, prepare = build()
    started = time.perf_counter()
    lore = Lore(books, compat=compat, tokenizer=tokenizer, prepare=prepare)
    metrics.compile_seconds.observe(time.perf_counter() - started)
    return Compiled(lore, estimate_bytes(books))
