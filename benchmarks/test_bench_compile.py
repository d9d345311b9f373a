"""Compiling a book (1k, 10k, 100k entries) and the memory a compiled 100k-entry book takes."""

from __future__ import annotations

import gc
import os
import tracemalloc

import benchdata as bd
import pytest

import lorescan


@pytest.fixture(scope="module", params=bd.sizes(1000, 10_000))
def n(request) -> int:
    bd.book(request.param)                       # generate and parse outside the timings
    return request.param


def test_compile(benchmark, n: int) -> None:
    """Compiling alone: the previous round's compiled book is freed in the setup, outside the timing
    (freeing a 100k-entry book takes ~130 ms of its own)."""
    book, s = bd.book(n), bd.settings(True)
    kept: list[lorescan.Lore] = []

    def setup():
        kept.clear()
        return (), {}

    def once() -> lorescan.Lore:
        kept.append(lorescan.compile([book], settings=s))
        return kept[-1]

    rounds = {1000: 50, 10_000: 10}.get(n, 5) if bd.FULL else 1
    lore = benchmark.pedantic(once, setup=setup, rounds=rounds)
    # the freshly compiled book activates exactly what the straightforward baseline does
    got = lore.activate(bd.chat(n)[:bd.ACTIVATE_AT], settings=s, user_name=bd.gen.USER_NAME,
                        char_name=bd.gen.CHAR_NAME, rng=bd.rng(bd.ACTIVATE_AT))
    assert tuple(got.activated_keys()) == bd.expected(n, True)
    benchmark.extra_info["entries"] = n


def _rss() -> int:
    """Resident set size in bytes (Linux), 0 where ``/proc`` is missing."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 0


@pytest.fixture(scope="module", params=bd.sizes(10_000))
def mem_n(request) -> int:
    bd.book(request.param)
    return request.param


def test_compiled_memory(benchmark, mem_n: int) -> None:
    """Memory of a compiled book (tracemalloc): the parsed Lorebook (pydantic entries, which the
    compiled book keeps), what compiling adds, the peak while compiling and after one activation
    (entry fields are filled lazily); the process RSS growth too (C allocations included).
    Timings of this test are meaningless (tracemalloc slows Python down): read ``extra_info``."""
    n = mem_n
    raw, s = bd.entries(n), bd.settings(True)
    info = benchmark.extra_info
    mb = 2 ** 20

    def measure() -> lorescan.Lore:
        gc.collect()
        rss0 = _rss()
        tracemalloc.start()
        try:
            book = lorescan.Lorebook.from_entries(bd.gen.BOOK_NAME, raw)
            parsed, _ = tracemalloc.get_traced_memory()
            tracemalloc.reset_peak()
            lore = lorescan.compile([book], settings=s)
            compiled, peak = tracemalloc.get_traced_memory()
            result = lore.activate(bd.chat(n)[:bd.ACTIVATE_AT], settings=s, user_name=bd.gen.USER_NAME,
                                   char_name=bd.gen.CHAR_NAME, rng=bd.rng(bd.ACTIVATE_AT))
            after, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        info.update(entries=n, parsed_book_mb=round(parsed / mb, 1),
                    compile_added_mb=round((compiled - parsed) / mb, 1),
                    compiled_total_mb=round(compiled / mb, 1), compile_peak_total_mb=round(peak / mb, 1),
                    after_activation_mb=round(after / mb, 1), rss_growth_mb=round((_rss() - rss0) / mb, 1),
                    activated=len(result.activated))
        return lore

    lore = benchmark.pedantic(measure, rounds=1, iterations=1)
    assert isinstance(lore, lorescan.Lore)
    assert 0 < info["parsed_book_mb"] < info["compiled_total_mb"] <= info["compile_peak_total_mb"]
    assert info["after_activation_mb"] >= info["compiled_total_mb"]
    assert info["activated"] == len(bd.expected(n, True))
