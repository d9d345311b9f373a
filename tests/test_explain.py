"""Plain-word explanations of one entry: where each key matched (message, recursed content,
character field), every gate, roll and budget step in words, and the regression-case checks."""

from __future__ import annotations

import lorescan
from lorescan import Character, ChatMessage, Lorebook, Settings
from lorescan._cases import Expect, check
from lorescan._explain import explain, message_range
from lorescan._scenario import ListRandom

BOOK = Lorebook.from_entries("elves", [
    {"uid": 0, "key": ["elf"], "content": "Elves live long."},
    {"uid": 1, "key": ["orc"], "content": "Orcs.", "disable": True},
    {"uid": 2, "key": ["dwarf"], "content": "Dwarves dig.", "probability": 10},
    {"uid": 3, "key": ["ship"], "content": "Ships.", "matchWholeWords": True},
    {"uid": 4, "key": ["troll"], "content": "Trolls."},
])


def _explain(text: str, key: str, settings: Settings | None = None, rng_values=(0.5,)):
    settings = settings or Settings(world_info_include_names=False)
    lore = lorescan.compile([BOOK], tokenizer="words")
    chat = [ChatMessage(name="U", is_user=True, mes="the troll sleeps"), ChatMessage(name="C", mes=text)]
    result = lore.activate(chat, settings=settings, trace=True, rng=ListRandom(list(rng_values)))
    return explain(lore, result, key, chat, settings=settings, user_name="User", char_name="Character")


def test_substring_match_inside_a_word_is_explained() -> None:
    exp = _explain("it hid itself", "elves.0")
    assert exp.activated
    # messages count from the start of the chat: the newest of two is #2
    assert exp.verdict == "activated in pass 1: primary key 'elf' matched in message #2 (C)"
    assert exp.lines == ["primary key 'elf' matched inside the word 'itself' in message #2 (C); "
                         "whole-word matching is off"]
    assert exp.steps == ["pass 1 (the chat): a candidate: primary key 'elf' matched in message #2 (C)",
                         "pass 1 (the chat): fits the budget: 3 of 1,024 tokens used after it",
                         "pass 1 (the chat): activated"]
    assert [(m.message, m.offset, m.word, m.inside_word) for m in exp.matches] == [(2, 10, "itself", True)]


def test_whole_word_miss_is_explained() -> None:
    exp = _explain("the shipwright", "elves.3")
    assert not exp.activated
    assert exp.lines == ["primary key 'ship' occurs only inside the word 'shipwright', in message #2 (C); "
                         "whole-word matching is on, so it does not match"]
    assert exp.verdict == "not activated: no primary key matched"
    assert [m.counts for m in exp.matches] == [False]


def test_gates_rolls_and_depth_are_explained() -> None:
    assert _explain("an orc", "elves.1").verdict == "not activated: disabled"
    exp = _explain("a dwarf", "elves.2", rng_values=(0.5,))
    assert exp.verdict == "not activated: failed its probability roll (rolled 50.0; it needs 10 or less)"
    exp = _explain("nothing here", "elves.4", settings=Settings(world_info_include_names=False,
                                                                 world_info_depth=1))
    assert exp.lines == ["primary key 'troll' occurs only in message #1 (U), beyond the scan depth of 1 "
                         "(pass 1 scanned message #2)"]
    assert _explain("nothing", "elves.0").lines == [
        "primary key 'elf' does not occur in the text pass 1 scanned (messages #1 to #2)"]


SALT = Lorebook.from_entries("w", [
    {"uid": 0, "key": ["harbour"], "content": "The harbour hides smugglers."},
    {"uid": 1, "key": ["smugglers"], "content": "Smugglers pay in rum."},
    {"uid": 2, "key": ["cliff"], "content": "Cliffs.", "matchCharacterDescription": True},
    {"uid": 3, "key": ["gold"], "content": "x " * 50, "order": 1},
    {"uid": 4, "key": ["/RUM/"], "content": "Rum.", "caseSensitive": True},
])


def _salt(budget: int, key: str, messages: tuple[str, ...] = ("To the harbour! gold",)):
    lore = lorescan.compile([SALT], tokenizer="words")
    chat = [ChatMessage(name="Ines", mes="Welcome.")] + [ChatMessage(name="Rowan", is_user=True, mes=m)
                                                         for m in messages]
    settings = Settings(world_info_recursive=True, world_info_budget=budget, max_context=4000)
    card = Character(name="Ines", description="She lives on the cliff.")
    result = lore.activate(chat, settings=settings, character=card, trace=True, user_name="Rowan",
                           char_name="Ines")
    return explain(lore, result, key, chat, settings=settings, user_name="Rowan", char_name="Ines",
                   character=card)


def test_a_match_in_recursed_content_names_the_entry_and_the_pass() -> None:
    exp = _salt(100, "w.1")
    assert exp.activated
    assert exp.verdict == ("activated in pass 2: primary key 'smugglers' matched in the content of w.0, "
                           "recursed after pass 1")
    assert exp.lines == ["primary key 'smugglers' matched in the content of w.0, recursed after pass 1"]
    assert exp.steps[0] == "pass 1 (the chat): not a candidate: no primary key matched"
    assert exp.steps[1].startswith("pass 2 (recursion): a candidate: primary key 'smugglers' matched in the "
                                   "content of w.0")
    match = exp.matches[0]
    assert (match.piece, match.source, match.scan_pass, match.message) == ("recursion", "w.0", 2, None)
    # a regex key, case-sensitive, that never matches: said in words, with what was scanned
    exp = _salt(100, "w.4")
    assert exp.lines == ["primary key '/RUM/' does not occur in the text pass 3 scanned (messages #1 to #2 "
                         "and the contents recursed after passes 1 and 2)"]


def test_a_match_in_a_character_field_and_a_budget_overflow() -> None:
    exp = _salt(100, "w.2")
    assert exp.verdict == "activated in pass 1: primary key 'cliff' matched in the character's description"
    exp = _salt(1, "w.3")        # 1 % of 4,000 tokens: 40
    assert exp.verdict == ("not activated: does not fit the budget: with it, 55 tokens would be used, "
                           "over the budget of 40")
    assert not any("{" in line for line in exp.lines + exp.steps)


def test_message_ranges() -> None:
    assert message_range([6, 5, 4, 3]) == "messages #3 to #6"
    assert message_range([2]) == "message #2"
    assert message_range([]) == "no messages"


def test_case_checks() -> None:
    lore = lorescan.compile([BOOK], tokenizer="words")
    result = lore.activate([ChatMessage(name="U", mes="an elf and a troll")],
                           settings=Settings(world_info_include_names=False))
    assert check(result, Expect(activated=["elves.0", "elves.4"], not_activated=["elves.1"],
                                position={"elves.0": "before"}, within_budget=True)) == []
    problems = check(result, Expect(activated=["elves.2"], not_activated=["elves.0"],
                                    position={"elves.4": "after"}, activated_exactly=["elves.4"]))
    assert problems == [
        "expected elves.2 to be activated; activated: elves.0, elves.4",
        "expected exactly elves.4; got elves.0, elves.4",
        "expected elves.0 not to be activated",
        "expected elves.4 at position after; it is at position 0",
    ]


def test_triggers_are_named_as_the_book_writes_them() -> None:
    """A trigger list that keeps out the generation type is named in the book's own spelling:
    strings as they are, other JSON values as JSON (SillyTavern compares them with ``includes``,
    so they never match a type, yet the list still filters)."""
    book = Lorebook.from_entries("t", [{"uid": 0, "key": ["elf"], "content": "Elves.",
                                        "triggers": ["continue", 5, None, {"a": True}]}])
    lore = lorescan.compile([book], tokenizer="words")
    chat = [ChatMessage(name="U", is_user=True, mes="an elf")]
    settings = Settings(world_info_include_names=False)
    result = lore.activate(chat, settings=settings, trace=True)
    exp = explain(lore, result, "t.0", chat, settings=settings, user_name="User", char_name="Character")
    assert exp.verdict == ("not activated: the generation type 'normal' is not among its triggers "
                           '(continue, 5, null, {"a": true})')
