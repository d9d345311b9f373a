"""One compiled ``Lore`` shared by several threads gives every thread the result a lone caller gets.

Each round compiles a new ``Lore`` (nothing built yet: no scan order, no key index for other
settings, no macro keys bound, no entry prepared) and releases eight threads on it at once, each
running a mix of evaluations: forced activations, sticky and cooldown records to look up, names
that bind macro keys, settings and strategies that build their own index and scan order. Every
result must equal the one a sequential run on another new ``Lore`` gives. The interpreter switches
threads as often as it can meanwhile, so a half-built structure would be seen.
"""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import lorescan
from lorescan import ActivationRequest, ChatMessage, Lorebook, Settings, TimedEffect, TimedState, _jsregex

THREADS = 8
ROUNDS = 4
WORDS = ["harbor", "beacon", "storm", "keeper", "rum", "fog", "tide", "bell", "map", "ghost", "ship", "salt"]


def _books() -> list[Lorebook]:
    """Two books with every kind of entry an evaluation reads lazily: plain, phrase, regex and
    macro keys, groups, rolls, sticky and cooldown, scan depths and delay levels."""
    rng = random.Random(7)
    entries: list[dict[str, Any]] = []
    for uid in range(1000):
        a, b = rng.sample(WORDS, 2)
        keys = [f"{a}{uid % 37}", a if uid % 5 == 0 else f"{a} {b}"]
        if uid % 11 == 0:
            keys.append(f"/{b}\\d*/i")
        if uid % 13 == 0:
            keys.append("{{char}}" if uid % 2 else "<USER>'s " + b)
        entry: dict[str, Any] = {"uid": uid, "key": keys, "content": f"{b} note {uid}",
                                 "order": rng.randint(0, 300), "position": uid % 5}
        if uid % 7 == 0:
            entry.update(group=f"g{uid % 3}", groupWeight=rng.randint(1, 100))
        if uid % 9 == 0:
            entry.update(useProbability=True, probability=rng.randint(10, 90))
        if uid % 17 == 0:
            entry.update(sticky=3, cooldown=2)
        if uid % 19 == 0:
            entry.update(scanDepth=rng.choice([1, 4, 8]))
        if uid % 23 == 0:
            entry.update(delayUntilRecursion=rng.choice([1, 2]))
        if uid % 29 == 0:
            entry.update(selective=True, keysecondary=[b], selectiveLogic=uid % 4)
        entries.append(entry)
    first = Lorebook.from_entries("alpha", entries[:700])
    second = Lorebook.from_entries("beta", [dict(e, uid=e["uid"] - 700) for e in entries[700:]],
                                   scope="character")
    return [first, second]


def _requests(books: list[Lorebook]) -> list[ActivationRequest]:
    """Evaluations covering forced activations, timed records and several settings and names."""
    rng = random.Random(11)
    out: list[ActivationRequest] = []
    for i in range(20):
        chat = [ChatMessage(name="Ann" if j % 2 else "Bo", is_user=bool(j % 2),
                            mes=" ".join(rng.sample(WORDS, 3)) + f" {rng.choice(WORDS)}{rng.randint(0, 40)}")
                for j in range(rng.randint(1, 9))]
        forced = [{"world": books[k % 2].name, "uid": rng.randrange(150)} for k in range(rng.randint(1, 4))]
        if i % 3 == 0:
            forced.append({"world": "alpha", "uid": rng.randrange(250), "content": f"given {i}", "order": 500})
        timed = TimedState(sticky={"alpha.17": TimedEffect(start=0, end=99)},
                           cooldown={"alpha.34": TimedEffect(start=0, end=99, hash=12345)}) if i % 4 == 0 else None
        settings = Settings(world_info_recursive=i % 2 == 0, world_info_case_sensitive=i % 6 == 1,
                            world_info_match_whole_words=i % 6 == 2, world_info_depth=1 + i % 5,
                            world_info_character_strategy=i % 3, world_info_min_activations=(i % 8 == 5) * 10,
                            max_context=8192)
        out.append(ActivationRequest.build(
            chat, settings=settings, user_name=f"Ann{i % 3}", char_name=f"Bo{i % 4}",
            character=lorescan.Character(avatar="Bo.png") if i % 2 else None,
            force_activate=forced, timed=timed))
    return out


def _fresh(request: ActivationRequest, seed: int) -> ActivationRequest:
    """The request with a new random source seeded with ``seed``."""
    return request.model_copy(update={"rng": random.Random(seed)})


def _outcome(result: lorescan.ActivationResult) -> Any:
    return result.model_dump(exclude={"trace"})


@contextmanager
def _switching_often() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def test_threads_sharing_a_new_lore_get_the_sequential_results(monkeypatch: pytest.MonkeyPatch) -> None:
    # Regex keys run under a wall-clock timeout, which threads switching this often could reach.
    monkeypatch.setattr(_jsregex, "REGEX_TIMEOUT_SECONDS", 60.0)
    books = _books()
    requests = _requests(books)
    expected_lore = lorescan.compile(books, tokenizer="chars4")
    expected = [_outcome(expected_lore.activate(_fresh(r, i))) for i, r in enumerate(requests)]
    assert sum(len(e["activated"]) for e in expected) > 200          # the books do activate
    forced_only = [e for e, r in zip(expected, requests) if any(f.overrides for f in r.force_activate)]
    assert any(a["content"].startswith("given") for e in forced_only for a in e["activated"])
    for round_ in range(ROUNDS):
        lore = lorescan.compile(books, tokenizer="chars4")
        barrier = threading.Barrier(THREADS)
        got: dict[tuple[int, int], Any] = {}
        errors: list[BaseException] = []

        def work(t: int, lore: lorescan.Lore = lore, barrier: threading.Barrier = barrier,
                 got: dict = got, errors: list = errors) -> None:
            order = list(range(len(requests)))
            order = order[t % 3:] + order[:t % 3]      # most threads start on the same evaluations
            try:
                barrier.wait()
                for i in order:
                    got[(t, i)] = _outcome(lore.activate(_fresh(requests[i], i)))
            except BaseException as exc:   # reported below, with the thread's result missing
                errors.append(exc)

        with _switching_often():
            threads = [threading.Thread(target=work, args=(t,)) for t in range(THREADS)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
        assert not errors, errors
        wrong = [(t, i) for (t, i), outcome in got.items() if outcome != expected[i]]
        assert len(got) == THREADS * len(requests)
        assert wrong == [], f"round {round_}: {len(wrong)} results differ from the sequential run"
