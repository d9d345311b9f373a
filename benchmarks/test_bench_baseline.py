"""The straightforward per-entry, per-key algorithm on the same inputs as ``test_bench_activate``
(1k and 10k entries; 100k in full mode only, it takes seconds). Compare with ``test_activate``."""

from __future__ import annotations

import benchdata as bd
import pytest


@pytest.fixture(scope="module", params=bd.sizes(1000, 10_000))
def n(request) -> int:
    bd.base(request.param)
    bd.lore(request.param)
    return request.param


@pytest.mark.parametrize("recursive", [False, True], ids=["flat", "recursive"])
def test_baseline(benchmark, n: int, recursive: bool) -> None:
    keys = benchmark.pedantic(bd.run_baseline, args=(n, recursive), rounds=3 if bd.FULL else 1)
    assert tuple(keys) == tuple(bd.run_lorescan(n, recursive).activated_keys())
    benchmark.extra_info.update(entries=n, activated=len(keys))
