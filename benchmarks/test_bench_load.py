"""Loading a SillyTavern world-info JSON file (10k entries; 100k in full mode) into a Lorebook."""

from __future__ import annotations

import json
import subprocess
import sys

import benchdata as bd
import pytest

import lorescan

try:
    from lorescan._formats.worldinfo import load_worldinfo
except ImportError:  # pragma: no cover - older checkouts: the plain reader below stands in
    load_worldinfo = None


def _plain_load(path) -> lorescan.Lorebook:
    """``json.load`` + ``Lorebook.from_entries`` (what a caller without lorescan's loader does)."""
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    return lorescan.Lorebook.from_entries(path.stem, list(data["entries"].values()))


@pytest.fixture(scope="module", params=bd.sizes(10_000))
def book_file(request, tmp_path_factory):
    n = request.param
    path = bd.gen.write_book(tmp_path_factory.mktemp("wi") / f"{bd.gen.BOOK_NAME}.json", entries=bd.entries(n))
    return n, path


def _check(book: lorescan.Lorebook, n: int) -> None:
    assert book.name == bd.gen.BOOK_NAME
    assert len(book.entries) == n
    want = bd.entries(n)
    got = book.scan_order()
    for i in range(0, n, max(1, n // 500)):               # 500 entries compared field by field
        assert got[i].to_json() == want[i]


@pytest.mark.skipif(load_worldinfo is None, reason="lorescan._formats.worldinfo is not available")
def test_load_worldinfo(benchmark, book_file) -> None:
    n, path = book_file
    book = benchmark.pedantic(load_worldinfo, args=(path,), rounds=3 if bd.FULL else 1)
    _check(book, n)
    benchmark.extra_info.update(entries=n, file_mb=round(path.stat().st_size / 2**20, 1))


def test_load_json_from_entries(benchmark, book_file) -> None:
    n, path = book_file
    book = benchmark.pedantic(_plain_load, args=(path,), rounds=3 if bd.FULL else 1)
    _check(book, n)
    benchmark.extra_info.update(entries=n, file_mb=round(path.stat().st_size / 2**20, 1))


_PEAK = """
import sys, lorescan
def hwm():
    with open('/proc/self/status') as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith('VmHWM')) * 1024
before = hwm()
loaded = lorescan.load(sys.argv[1])
print(before, hwm(), len(loaded.books[0].entries))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_load_peak_memory(benchmark, book_file) -> None:
    """A fresh process's peak resident memory while ``lorescan.load`` reads the file (the kernel's
    high-water mark; its time is a whole process's): the file's bytes, its parsed JSON and the
    entries are alive together, but never a second copy of the text."""
    n, path = book_file

    def run() -> list[int]:
        out = subprocess.run([sys.executable, "-c", _PEAK, str(path)], capture_output=True, text=True, check=True)
        return [int(x) for x in out.stdout.split()]

    before, peak, entries = benchmark.pedantic(run, rounds=1)
    assert entries == n
    mb = 2 ** 20
    benchmark.extra_info.update(entries=n, file_mb=round(path.stat().st_size / mb, 1),
                                peak_mb=round(peak / mb), load_added_mb=round((peak - before) / mb))
