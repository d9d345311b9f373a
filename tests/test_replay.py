"""Replay and sessions: incremental evaluation equals a fresh evaluation every time."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._replay import Session, generation_points, replay

ENTRIES = [
    {"uid": 0, "key": ["dragon"], "content": "Dragons hoard gold.", "sticky": 3},
    {"uid": 1, "key": ["gold"], "content": "Gold is scarce.", "cooldown": 2},
    {"uid": 2, "key": ["castle"], "content": "The castle is old.", "group": "place", "probability": 60},
    {"uid": 3, "key": ["castle"], "content": "The castle is new.", "group": "place"},
    {"uid": 4, "key": ["/kni+ght/i"], "content": "Knights guard the gold.", "delay": 4},
]
WORDS = ["dragon", "gold", "castle", "knight", "road", "rain", "KNIIGHT", "tea"]


def _chat(n: int, seed: int) -> list[ChatMessage]:
    rng = random.Random(seed)
    return [ChatMessage(name="U" if i % 2 else "C", is_user=bool(i % 2),
                        mes=" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))) for i in range(n)]


def test_session_equals_fresh_evaluations() -> None:
    settings = Settings(world_info_recursive=True, world_info_depth=3)
    chat = _chat(40, 3)
    lore = lorescan.compile([Lorebook.from_entries("w", ENTRIES)], tokenizer="words")
    session = Session(lore, settings=settings, rng=random.Random(5))
    fresh_rng, state = random.Random(5), None
    for i, message in enumerate(chat):
        session.append(message)
        if message.is_user:
            continue
        got = session.activate()
        fresh = lorescan.compile([Lorebook.from_entries("w", ENTRIES)], tokenizer="words")
        want = fresh.activate(chat[: i + 1], settings=settings, timed=state, rng=fresh_rng)
        state = want.timed
        assert got.model_dump() == want.model_dump(), f"message {i}"
    assert session.timed == state


def test_replay_generations_and_changes() -> None:
    chat = _chat(12, 1)
    lore = lorescan.compile([Lorebook.from_entries("w", ENTRIES)], tokenizer="words")
    gens = list(replay(lore, chat, settings=Settings(world_info_depth=3), rng=random.Random(0)))
    assert [g.index for g in gens] == generation_points(chat) == [2, 4, 6, 8, 10]
    assert [g.result.activated_keys() for g in gens] == [
        ["w.1"], ["w.0", "w.1", "w.4"], ["w.0", "w.1", "w.4"], ["w.0", "w.4"], ["w.0", "w.4"]]
    assert [(g.new, g.gone) for g in gens] == [
        (["w.1"], []), (["w.0", "w.4"], []), ([], []), ([], ["w.1"]), ([], [])]
    # gold's cooldown ends at 6 and restarts; dragon's sticky ends at 7 and restarts at 8
    assert gens[2].result.timed.to_json()["cooldown"] == {"w.1": {"start": 6, "end": 8, "protected": False}}
    assert gens[3].result.timed.to_json() == {
        "sticky": {"w.0": {"start": 8, "end": 11, "protected": False}}, "cooldown": {}}


@hsettings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["append", "append_system", "append_dict", "activate", "replace"]),
                          st.one_of(st.none(), st.integers(-6, 30)), st.booleans()), max_size=25))
def test_session_chat_equals_the_list_it_stands_for(steps) -> None:
    """A session reads whether messages are system messages once, as they are reached; whatever
    is appended (objects or dicts), evaluated up to where, swiped or not, or a list replaced, each
    evaluation equals one of the same messages given as a plain list."""
    settings = Settings(world_info_depth=4, world_info_include_names=False)
    lore = lorescan.compile([Lorebook.from_entries("w", ENTRIES)], tokenizer="words")
    session = Session(lore, settings=settings)
    words = iter(WORDS * 20)
    for what, upto, swipe in steps:
        if what == "append":
            session.append(ChatMessage(name="C", mes=next(words)))
        elif what == "append_system":
            session.append(ChatMessage(name="S", mes=next(words), is_system=True))
        elif what == "append_dict":
            session.messages.append({"name": "U", "mes": next(words), "is_user": True})
        elif what == "replace":
            session.messages = list(session.messages[: len(session.messages) // 2])
        else:
            kind = "swipe" if swipe else "normal"
            session.rng = random.Random(1)
            got = session.activate(upto=upto, generation_type=kind, dry_run=True)
            plain = list(session.messages if upto is None else session.messages[:upto])
            want = lore.activate(plain, settings=settings, generation_type=kind, dry_run=True,
                                 rng=random.Random(1))
            assert got.model_dump() == want.model_dump()


def test_session_reads_each_message_once(monkeypatch) -> None:
    """A generation reads only the messages appended since the last one (not the whole chat)."""
    from lorescan import _replay as replay_module

    calls = []
    real = replay_module.kept_indexes

    def counted(chat, start=0, stop=None):
        calls.append((start, stop))
        return real(chat, start, stop)

    monkeypatch.setattr(replay_module, "kept_indexes", counted)
    lore = lorescan.compile([Lorebook.from_entries("w", ENTRIES)], tokenizer="words")
    session = Session(lore, settings=Settings(world_info_include_names=False))
    session.append(*_chat(30, 2))
    first = session.activate(upto=20, dry_run=True)
    assert session.activate(upto=10, dry_run=True) is not first
    session.activate()
    session.activate()
    session.append(ChatMessage(name="C", mes="dragon"), ChatMessage(name="S", mes="x", is_system=True))
    assert "w.0" in session.activate().activated_keys()
    assert calls == [(0, 20), (20, 30), (30, 32)]
