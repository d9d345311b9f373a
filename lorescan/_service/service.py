"""What one running service holds: the store, the compiled-book cache, the metrics, its thread
pools and the per-session locks.

Concurrency model: the event loop parses requests, looks things up in memory and runs the short
activations itself. An activation holds the lock of the compiled books it uses (a ``Lore`` mutates
its memos while it activates), taken on the event loop in arrival order, so activations of one set
of books run one at a time, first come first served. An untraced evaluation on books whose recent
evaluations took under ``INLINE_SECONDS`` (a few ms for a 20,000-entry book) runs on the loop: the
engine's work is pure Python, so a thread would only take the interpreter lock from the loop and
hand it back, which costs more than the evaluation saves. Traced requests, multi-turn requests
whose turns together would take longer, and books whose evaluations are slow (or not measured yet)
run in a pool of ``--workers`` threads, so the loop keeps answering other requests meanwhile (the
interpreter switches threads every few ms); a waiting request never holds a thread. Compiles run
in a pool of their own, so a large book compiling never delays activations of books already
compiled. Reading and linting sent books, rendering them and the store's reads and writes outside
an activation run in an I/O pool.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import json
import math
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

from fastapi import Response

from .. import _index
from .._errors import LorescanError
from .._mode import Mode, mode_for, with_options
from .cache import Compiled, CompiledCache
from .config import ServiceConfig
from .errors import ServiceError
from .metrics import Metrics
from .store import Store

T = TypeVar("T")

#: json's own C encoder (None without the _json accelerator)
c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
#: the extension's JSON string escaper and its whole-value encoder, or None (no extension, or
#: LORESCAN_NATIVE=0)
_native_string = _index.native.json_string if _index.native is not None else None
_native_dump = _index.native.json_dump if _index.native is not None else None
DEFAULT_VERSION = "1.18"
DEFAULT_TOKENIZER = "chars4"
#: the longest a request's evaluations may be expected to take and still run on the event loop
INLINE_SECONDS = 0.02
#: glibc malloc's heaps in a process the service owns (its pools' threads would otherwise get one
#: each): 9 MB less RSS after 1,000 generations of the load benchmark, at no measurable cost
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8


class SessionLocks:
    """One lock per session id in use, so requests on one chat run in order; a lock is dropped
    when no request holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def busy(self, session: str | None) -> bool:
        """Whether a request on ``session`` is running or waiting."""
        return session is not None and session in self._locks

    @asynccontextmanager
    async def hold(self, session: str | None) -> AsyncIterator[None]:
        if session is None:
            yield
            return
        lock, users = self._locks.get(session, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[session] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session]
            if users == 1:
                del self._locks[session]
            else:
                self._locks[session] = (lock, users - 1)


class Service:
    """The state of one running service (see the module docstring)."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        if config.owns_process:
            limit_malloc_arenas(MALLOC_ARENAS)
        self.store = Store(config.store_path)
        self.metrics = Metrics(sessions=self.store.session_count)
        self.activation_pool = ThreadPoolExecutor(max(1, config.workers), thread_name_prefix="lorescan-activate")
        self.compile_pool = ThreadPoolExecutor(2, thread_name_prefix="lorescan-compile")
        self.io_pool = ThreadPoolExecutor(4, thread_name_prefix="lorescan-io")
        self.cache = CompiledCache(config.cache_bytes, self.compile_pool, self.metrics,
                                   freeze=config.owns_process)
        self.session_locks = SessionLocks()
        self._modes: dict[tuple[str, str | None, bool | None, str | None], Mode] = {}

    def mode(self, version: str, word_boundaries: str | None = None, card_book_settings: bool | None = None,
             macro_engine: str | None = None) -> Mode:
        """The mode for a request's ``st_version``, matching options and macro engine (``None``: the
        service's setting); 422 naming the field for an unknown value."""
        ck = (version, word_boundaries, card_book_settings, macro_engine)
        got = self._modes.get(ck)
        if got is None:
            cfg = self.config
            try:
                base = mode_for(version)
                engine = macro_engine or cfg.macro_engine
                if engine == "new" and base.version == "1.12" and macro_engine is None:
                    engine = None   # the service's default engine: what 1.12.6 has
                got = with_options(base, word_boundaries or cfg.word_boundaries,
                                   cfg.card_book_settings if card_book_settings is None else card_book_settings,
                                   engine)
            except LorescanError as exc:
                field = exc.field if exc.field in ("word_boundaries", "macro_engine") else "st_version"
                raise ServiceError(422, "invalid_request", exc.message, field) from None
            self._modes[ck] = got
        return got

    async def run_io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.io_pool, partial(fn, *args, **kwargs))

    @staticmethod
    def runs_inline(compiled: Compiled, trace: bool, turns: int) -> bool:
        """Whether a request's evaluations run on the event loop (see the module docstring): not
        traced, and expected to take under ``INLINE_SECONDS`` from the books' recent evaluations."""
        recent = compiled.seconds
        return not trace and recent is not None and recent * max(1, turns) < INLINE_SECONDS

    async def run_activation(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.activation_pool, partial(fn, *args, **kwargs))

    @staticmethod
    def json_response(body: Any, status: int = 200) -> Response:
        return Response(json_bytes(body), status_code=status, media_type="application/json")

    def close(self) -> None:
        """Let work in progress finish, then checkpoint and close the store."""
        for pool in (self.activation_pool, self.compile_pool, self.io_pool):
            pool.shutdown(wait=True)
        self.store.close()


def limit_malloc_arenas(arenas: int) -> bool:
    """At most ``arenas`` heaps for glibc's ``malloc`` (``M_ARENA_MAX``; elsewhere nothing), set
    before the service's threads first allocate: by default each thread that allocates may get a
    heap of its own (up to eight per core), whose freed memory the others never reuse. Whether
    it was set."""
    try:
        return bool(ctypes.CDLL(None).mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        return False


def release_memory() -> None:
    """Hand freed heap memory back to the system (glibc's ``malloc_trim``; elsewhere nothing): reading
    and linting a large book leaves its garbage spread over the heap, tens of MB at 20,000 entries."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass


def json_bytes(body: Any) -> bytes:
    """JSON as JavaScript's ``JSON.stringify`` reads it back: NaN and infinities as ``null``, and
    everything beyond ASCII escaped (the fastest of Python's encoders, and safe for lone surrogates).
    The bytes are ``json.dumps(body, separators=(",", ":"), allow_nan=False)``'s. With the C
    extension, a body of plain JSON values (every reply's) is written in one buffer by
    ``json_dump``; any other goes to json's encoder, whose long strings the extension escapes."""
    if _native_dump is not None:
        data = _native_dump(body)
        if data is not None:
            return data
    try:
        text = _dumps(body)
    except ValueError:
        text = _dumps(_finite(body))
    return text.encode("ascii")


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps(body: Any) -> str:
    encoder = _native_string
    if encoder is None or c_make_encoder is None:
        return json.dumps(body, separators=(",", ":"), allow_nan=False)
    # json.dumps's own C encoder (circular check on, keys as they are, NaN refused), strings
    # escaped by the extension's json_string, which gives encode_basestring_ascii's text
    encode = c_make_encoder({}, _refuse, encoder, None, ":", ",", False, False, False)
    return "".join(encode(body, 0))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
