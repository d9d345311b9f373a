"""Plain-word explanations of one entry, and the regression-case checks."""

from __future__ import annotations

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._cases import Expect, check
from lorescan._explain import explain

BOOK = Lorebook.from_entries("elves", [
    {"uid": 0, "key": ["elf"], "content": "Elves live long."},
    {"uid": 1, "key": ["orc"], "content": "Orcs.", "disable": True},
    {"uid": 2, "key": ["dwarf"], "content": "Dwarves dig.", "probability": 10},
    {"uid": 3, "key": ["ship"], "content": "Ships.", "matchWholeWords": True},
    {"uid": 4, "key": ["troll"], "content": "Trolls."},
])


def _explain(text: str, key: str, settings: Settings | None = None, rng_values=(0.5,)):
    from lorescan._scenario import ListRandom

    settings = settings or Settings(world_info_include_names=False)
    lore = lorescan.compile([BOOK], tokenizer="words")
    chat = [ChatMessage(name="U", is_user=True, mes="the troll sleeps"), ChatMessage(name="C", mes=text)]
    result = lore.activate(chat, settings=settings, trace=True, rng=ListRandom(list(rng_values)))
    return explain(lore, result, key, chat, settings=settings, user_name="User", char_name="Character")


def test_substring_match_inside_a_word_is_explained() -> None:
    exp = _explain("it hid itself", "elves.0")
    assert exp.activated
    assert exp.verdict == "activated in pass 1: primary key 'elf' matched"
    assert exp.lines == ["key 'elf' matched 'itself' inside a word (message 1, offset 10); whole-word matching is off"]


def test_whole_word_miss_is_explained() -> None:
    exp = _explain("the shipwright", "elves.3")
    assert not exp.activated
    assert exp.lines == ["key 'ship' occurs only inside the word 'shipwright' (message 1); "
                         "whole-word matching is on, so it does not match"]
    assert exp.verdict == "not activated: no primary key matched"


def test_gates_rolls_and_depth_are_explained() -> None:
    assert _explain("an orc", "elves.1").verdict == "not activated: disabled"
    exp = _explain("a dwarf", "elves.2", rng_values=(0.5,))
    assert exp.verdict == "not activated: failed its probability roll (50.0 > 10)"
    exp = _explain("nothing here", "elves.4", settings=Settings(world_info_include_names=False,
                                                                 world_info_depth=1))
    assert exp.lines == ["key 'troll' occurs only in message 2 (newest = 1), beyond the scan depth of 1"]
    assert _explain("nothing", "elves.0").lines == ["key 'elf' does not occur in the chat"]


def test_case_checks() -> None:
    lore = lorescan.compile([BOOK], tokenizer="words")
    result = lore.activate([ChatMessage(name="U", mes="an elf and a troll")],
                           settings=Settings(world_info_include_names=False))
    assert check(result, Expect(activated=["elves.0", "elves.4"], not_activated=["elves.1"],
                                position={"elves.0": "before"}, within_budget=True)) == []
    problems = check(result, Expect(activated=["elves.2"], not_activated=["elves.0"],
                                    position={"elves.4": "after"}, activated_exactly=["elves.4"]))
    assert problems == [
        "expected elves.2 to be activated; activated: ['elves.0', 'elves.4']",
        "expected exactly ['elves.4']; got ['elves.0', 'elves.4']",
        "expected elves.0 not to be activated",
        "expected elves.4 at position after; it is at position 0",
    ]
