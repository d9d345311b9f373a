"""One activation: a 40-message window (``world_info_depth`` 40) of a 100-message chat, recursion
off and on; 10k entries in quick mode, 100k in full mode. Each result must equal the baseline's."""

from __future__ import annotations

import benchdata as bd
import pytest

import lorescan

RECURSION = pytest.mark.parametrize("recursive", [False, True], ids=["flat", "recursive"])


@pytest.fixture(scope="module", params=bd.sizes(10_000))
def n(request) -> int:
    bd.lore(request.param)                       # compile outside the timings
    return request.param


@RECURSION
def test_activate(benchmark, n: int, recursive: bool) -> None:
    """Steady state: the compiled book has served this chat before (caches warm)."""
    bd.run_lorescan(n, recursive)
    result = benchmark(bd.run_lorescan, n, recursive)
    keys = tuple(result.activated_keys())
    assert keys == bd.expected(n, recursive)
    benchmark.extra_info.update(entries=n, activated=len(keys), overflowed=result.overflowed,
                                passes=max((a.pass_index for a in result.activated), default=0))


@RECURSION
def test_activate_first_after_compile(benchmark, n: int, recursive: bool) -> None:
    """The first activation of a freshly compiled book (name binding, message scan, lazy fields)."""
    book, s = bd.book(n), bd.settings(recursive)
    chat = bd.chat(n)[:bd.ACTIVATE_AT]

    def setup():
        return (lorescan.compile([book], settings=bd.settings(True)),), {}

    def first(lore: lorescan.Lore) -> lorescan.ActivationResult:
        return lore.activate(chat, settings=s, user_name=bd.gen.USER_NAME, char_name=bd.gen.CHAR_NAME,
                             rng=bd.rng(bd.ACTIVATE_AT))

    result = benchmark.pedantic(first, setup=setup, rounds=3 if bd.FULL else 1)
    assert tuple(result.activated_keys()) == bd.expected(n, recursive)
