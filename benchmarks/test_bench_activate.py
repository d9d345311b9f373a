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


@pytest.fixture(scope="module", params=bd.sizes(10_000))
def n_scripts(request) -> int:
    for script, rule in (("latin", "sillytavern"), ("latin", "unicode"), ("cyrillic", "unicode"),
                         ("cyrillic", "sillytavern")):
        bd.script_lore(request.param, script, rule)      # compile outside the timings
    return request.param


@RECURSION
@pytest.mark.parametrize("script, rule", [("latin", "sillytavern"), ("latin", "unicode"),
                                          ("cyrillic", "unicode"), ("cyrillic", "sillytavern")],
                         ids=["latin-sillytavern", "latin-unicode", "cyrillic-unicode", "cyrillic-sillytavern"])
def test_activate_word_rule(benchmark, n_scripts: int, recursive: bool, script: str, rule: str) -> None:
    """One activation under each word rule, on the book (regex keys left out) in Latin letters and
    in Cyrillic ones. The unicode rule gives the same entries in both scripts, and on this book the
    same as SillyTavern's rule in Latin (its keys with spaces are always met as whole words). So
    does SillyTavern's rule in Cyrillic here, though it sees no word characters there: the chat
    never has one generated word inside another."""
    n = n_scripts
    bd.run_script(n, script, rule, recursive)
    result = benchmark(bd.run_script, n, script, rule, recursive)
    keys = tuple(result.activated_keys())
    latin = tuple(bd.run_script(n, "latin", "sillytavern", recursive).activated_keys())
    assert keys == latin
    benchmark.extra_info.update(entries=n, activated=len(keys), script=script, rule=rule)
