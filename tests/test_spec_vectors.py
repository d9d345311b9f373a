"""The worked vectors of the behaviour notes (§18), each checked against the engine.

Conventions of those vectors: one global book ``B``, module-default settings, max context 1000,
one token per UTF-16 code unit, user ``User``, character ``Alice``, chat given newest first.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import lorescan
from lorescan import Character, ChatMessage, Lorebook, Settings, TimedState
from lorescan._scenario import ListRandom


class CodeUnits:
    name = "code-units"

    def count(self, text: str) -> int:
        return len(text.encode("utf-16-le")) // 2


def run(entries: list[dict[str, Any]], chat_newest_first: list[str], *, version: str = "1.12",
        random: list[float] | None = None, timed: TimedState | None = None, books: list[Lorebook] | None = None,
        character: Character | None = None, quirks: bool = True, **settings: Any):
    settings.setdefault("max_context", 1000)
    settings.setdefault("world_info_include_names", False)
    lore = lorescan.compile(books or [Lorebook.from_entries("B", entries)], compat=version,
                            tokenizer=CodeUnits(), quirks=quirks)
    chat = [ChatMessage(name="X", mes=m) for m in reversed(chat_newest_first)]
    return lore.activate(chat, settings=Settings(**settings), user_name="User", char_name="Alice",
                         character=character, timed=timed, rng=ListRandom(random))


def uids(result) -> list:
    return [a.uid for a in result.activated]


def e(uid: int, **kw: Any) -> dict[str, Any]:
    return {"uid": uid, **kw}


@pytest.mark.parametrize("entries,chat,settings,expected", [
    ([e(0, key=["dragon"], content="D")], ["I saw a Dragon"], {}, [0]),                       # V01
    ([e(0, key=["cat"])], ["concatenate"], {}, [0]),                                        # V02
    ([e(0, key=["cat"])], ["concatenate"], {"world_info_match_whole_words": True}, []),      # V03a
    ([e(0, key=["caf"])], ["un café"], {"world_info_match_whole_words": True}, [0]),          # V04
    ([e(0, key=["ber"])], ["über"], {"world_info_match_whole_words": True}, [0]),            # X9
    ([e(0, key=["new york"])], ["anew yorkshire pudding"], {"world_info_match_whole_words": True}, [0]),  # V05
    ([e(0, key=["a b"])], ["a  b"], {}, []),                                                # X20
    ([e(0, key=["c++"])], ["I like c++ a lot"], {"world_info_match_whole_words": True}, [0]),  # X6
    ([e(0, key=["Dragon"], caseSensitive=True)], ["a dragon"], {}, []),                      # V06
    ([e(0, key=["/dra+gon/"])], ["DRAAGON"], {}, []),                                        # V07a
    ([e(0, key=["/dra+gon/i"])], ["DRAAGON"], {}, [0]),                                      # V07b
    ([e(0, key=["/cat/"])], ["concatenate"], {"world_info_match_whole_words": True}, [0]),   # V07c
    ([e(0, key=["/abc/x"])], ["see /ABC/X here"], {}, [0]),                                  # V08
    ([e(0, key=["/alice/y"])], ["alice"], {}, []),                                           # V08b
    ([e(0, key=["/^alice/"])], ["alice"], {}, []),                                           # V08c
    ([e(0, key=["/\\x01alice/"])], ["bob", "alice"], {}, [0]),                               # V08d
    ([e(0, key=["{{char}}"])], ["alice waves"], {}, [0]),                                    # V44a
    ([e(0, key=["<user>"])], ["hi user"], {}, [0]),                                          # V44b
    ([e(0, key=[" dragon "])], ["a dragon!"], {"world_info_match_whole_words": True}, [0]),  # V45
    ([e(0, key=[" "])], ["anything"], {}, [0]),                                              # V17c
    ([e(0, key=["İstanbul"])], ["istanbul"], {}, []),                                        # X10
    ([e(0, key=["don't"])], ["I don't know"], {"world_info_match_whole_words": True}, [0]),  # X7
    ([e(0, key=["dragon"])], ["a", "b", "dragon"], {}, []),                                  # V09a
    ([e(0, key=["dragon"], scanDepth=3)], ["a", "b", "dragon"], {}, [0]),                    # V09b
    ([e(0, key=["dragon"], scanDepth=0)], ["dragon"], {}, []),                               # V10
    ([e(0, key=["  "])], ["x"], {"world_info_depth": 0}, [0]),                               # V10b
    ([e(0, key=["x"])], ["", "x"], {"world_info_depth": 1}, []),                             # X21
    ([e(0, key=["hello world"])], ["world", "hello"], {}, []),                               # V60
    ([e(0, key=["/^\\x01dragon$/m"])], ["  dragon  \n"], {}, [0]),                           # V61
])
def test_key_matching_and_scan_text(entries, chat, settings, expected) -> None:
    assert uids(run(entries, chat, **settings)) == expected


@pytest.mark.parametrize("logic,chat,expected", [
    (0, "sword ice", [0]), (0, "sword", []), (1, "sword fire ice", []), (1, "sword fire", [0]),
    (2, "sword fire", []), (2, "sword", [0]), (3, "sword fire ice", [0]), (3, "sword fire", []),
    (4, "sword fire ice", []),
])
def test_secondary_logic(logic: int, chat: str, expected: list[int]) -> None:
    entry = e(0, key=["sword"], keysecondary=["fire", "ice"], selectiveLogic=logic)
    assert uids(run([entry], [chat])) == expected


def test_secondary_edge_cases() -> None:
    assert uids(run([e(0, key=["sword"], keysecondary=["fire"], selectiveLogic=3, selective=False)], ["sword"])) == [0]
    assert uids(run([e(0, key=["sword"], keysecondary=[""], selectiveLogic=1)], ["sword"])) == [0]
    assert uids(run([e(0, key=["sword"], keysecondary=["sword", ""], selectiveLogic=3)], ["sword"])) == []
    assert uids(run([e(0, key=["sword"], keysecondary=[" "], selectiveLogic=3)], ["sword"])) == [0]
    assert uids(run([e(0, key=["sword"], keysecondary=[" "], selectiveLogic=2)], ["sword"])) == []


def test_constant_disabled_and_decorators() -> None:
    r = run([e(0, constant=True, content="K"), e(1, constant=True, disable=True)], ["x"])
    assert uids(r) == [0] and r.before == "K"
    assert uids(run([e(0, constant=True, disable="true"), e(1, constant=True, disable=1)], ["x"])) == [0]
    r = run([e(0, content="@@activate\nHello")], ["x"])
    assert uids(r) == [0] and r.before == "Hello"
    assert uids(run([e(0, key=["x"], content="@@dont_activate\nHello")], ["x"])) == []
    assert run([e(0, content="@@activate")], ["x"]).before == "@@activate"
    r = run([e(0, content="@@unknown\n@@@activate\nHi")], ["x"])
    assert uids(r) == [0] and r.before == "Hi"


def test_character_filters() -> None:
    entry = e(0, constant=True, characterFilter={"isExclude": False, "names": ["alice"], "tags": []})
    assert uids(run([entry], ["x"], character=Character(avatar="bob.png"))) == []
    assert uids(run([entry], ["x"], character=Character(avatar="alice.png"))) == [0]
    excl = e(0, constant=True, characterFilter={"isExclude": True, "names": ["alice"], "tags": []})
    assert uids(run([excl], ["x"], character=Character(avatar="alice.png"))) == []
    assert uids(run([excl], ["x"], character=None)) == [0]
    tagged = e(0, constant=True, characterFilter={"isExclude": False, "names": [], "tags": ["t1"]})
    assert uids(run([tagged], ["x"], character=Character(avatar="a.png", tags=["t2"]))) == []
    assert uids(run([tagged], ["x"], character=Character(avatar="a.png", tags=["t1"]))) == [0]
    assert uids(run([tagged], ["x"], character=None)) == [0]


def test_ordering_and_placement() -> None:
    r = run([e(0, constant=True, order=10, content="o10"), e(1, constant=True, order=50, content="o50-u1"),
             e(2, constant=True, order=50, content="o50-u2")], ["x"])
    assert uids(r) == [1, 2, 0] and r.before == "o10\no50-u2\no50-u1"
    r = run([], ["x"], books=[Lorebook.from_entries("B1", [e(0, constant=True, content="X")]),
                               Lorebook.from_entries("B2", [e(0, constant=True, content="Y")])])
    assert r.activated_keys() == ["B1.0", "B2.0"] and r.before == "Y\nX"
    r = run([e(10, constant=True, content="C10"), e(2, constant=True, content="C2")], ["x"])
    assert uids(r) == [2, 10] and r.before == "C10\nC2"
    r = run([e(0, constant=True, position=4, depth=4, role=0, order=1, content="d4s-o1"),
             e(1, constant=True, position=4, depth=4, role=0, order=2, content="d4s-o2"),
             e(2, constant=True, position=4, depth=4, role=1, order=3, content="d4u-o3"),
             e(3, constant=True, position=4, depth=0, role=None, order=0, content="d0s-o0")], ["x"])
    assert [g.model_dump() for g in r.depth] == [
        {"depth": 4, "role": 1, "entries": ["d4u-o3"]},
        {"depth": 4, "role": 0, "entries": ["d4s-o1", "d4s-o2"]},
        {"depth": 0, "role": 0, "entries": ["d0s-o0"]}]
    r = run([e(0, constant=True, position="0")], ["x"])
    assert uids(r) == [0] and r.before == ""
    r = run([e(0, constant=True, position=5, order=1, content="emT1"), e(1, constant=True, position=5, order=2,
             content="emT2"), e(2, constant=True, position=6, order=3, content="emB3")], ["x"])
    assert [(x.position, x.content) for x in r.em] == [("before", "emT1"), ("before", "emT2"), ("after", "emB3")]


@pytest.mark.parametrize("strategy,expected,before", [
    (0, ["G.0"], "G50-xxxxxxxx"),
    (1, ["CHARBOOK.0", "CHARBOOK.1"], "C20\nC30-xxxxxxxx"),
    (2, ["G.0", "G.1"], "G10\nG50-xxxxxxxx"),
])
def test_character_strategy_and_budget_priority(strategy: int, expected: list[str], before: str) -> None:
    books = [Lorebook.from_entries("G", [e(0, constant=True, order=50, content="G50-xxxxxxxx"),
                                         e(1, constant=True, order=10, content="G10")]),
             Lorebook.from_entries("CHARBOOK", [e(0, constant=True, order=30, content="C30-xxxxxxxx"),
                                                e(1, constant=True, order=20, content="C20")], "character")]
    r = run([], ["x"], books=books, character=Character(avatar="a.png"), max_context=100,
            world_info_character_strategy=strategy)
    assert r.activated_keys() == expected and r.before == before


def test_chat_lore_has_budget_priority() -> None:
    books = [Lorebook.from_entries("G", [e(0, constant=True, order=100, content="01234567890123456789")]),
             Lorebook.from_entries("CHAT", [e(0, constant=True, order=1, content="abcdefghij")], "chat")]
    r = run([], ["x"], books=books, max_context=100)
    assert r.activated_keys() == ["CHAT.0"] and r.before == "abcdefghij"


def test_recursion_and_delays() -> None:
    base = [e(0, key=["castle"], order=100, content="The castle has a dragon."),
            e(1, key=["dragon"], order=90, content="Dragons breathe fire.")]
    r = run(base, ["we reach the castle"], world_info_recursive=True)
    assert uids(r) == [0, 1] and r.before == "Dragons breathe fire.\nThe castle has a dragon."
    assert uids(run(base, ["we reach the castle"])) == [0]
    assert uids(run([base[0], {**base[1], "excludeRecursion": True}], ["we reach the castle"],
                    world_info_recursive=True)) == [0]
    assert uids(run([{**base[0], "preventRecursion": True}, base[1]], ["we reach the castle"],
                    world_info_recursive=True)) == [0]
    d = lambda l1, l2: [e(0, key=["castle"], order=100, content="A"),  # noqa: E731
                        e(1, key=["castle"], order=90, delayUntilRecursion=l1, content="B1"),
                        e(2, key=["castle"], order=80, delayUntilRecursion=l2, content="B2")]
    r = run(d(True, False), ["castle"], world_info_recursive=True)
    assert uids(r) == [0, 2, 1] and r.before == "B2\nB1\nA"
    assert uids(run(d(True, False), ["castle"])) == [0, 2]
    assert uids(run(d(1, 2), ["castle"])) == [0, 1, 2]
    assert uids(run(d(1, 2), ["castle"], world_info_recursive=True)) == [0, 1, 2]
    chain = [e(0, key=["alpha"], order=3, content="beta"), e(1, key=["beta"], order=2, content="gamma"),
             e(2, key=["gamma"], order=1, content="delta")]
    assert uids(run(chain, ["alpha"], world_info_recursive=True, world_info_max_recursion_steps=2)) == [0, 1]
    assert uids(run(chain, ["alpha"], world_info_recursive=True)) == [0, 1, 2]
    assert uids(run(chain, ["alpha"], world_info_recursive=True, world_info_max_recursion_steps=1)) == [0]


def test_budget() -> None:
    r = run([e(0, constant=True, order=100, content="0123456789"), e(1, constant=True, order=90, content="abcdefghij"),
             e(2, constant=True, order=80, content="xyz")], ["x"], max_context=100)
    assert uids(r) == [0, 1] and r.before == "abcdefghij\n0123456789" and r.overflowed
    assert uids(run([e(0, constant=True, order=100, content="0123456789"),
                     e(1, constant=True, order=90, content="abcdefghijklm")], ["x"], max_context=100)) == [0]
    assert uids(run([e(0, constant=True, order=100, content="01234567890123456789abc"),
                     e(1, constant=True, order=90, content="a")], ["x"], max_context=100)) == [0]
    assert uids(run([e(0, constant=True, order=100, content="a"), e(1, constant=True, order=50, content="b")],
                    ["x"], max_context=10)) == [0]          # Math.round(2.5) = 3
    assert uids(run([e(0, constant=True, order=100, content=""), e(1, constant=True, order=50, content="b")],
                    ["x"], max_context=1)) == []
    assert uids(run([e(0, constant=True, order=100, content=""), e(1, constant=True, order=50, content="abc")],
                    ["x"], max_context=20)) == [0]
    x1b = [e(0, constant=True, order=100, content="01234567890123456789"),
           e(1, constant=True, order=90, content="abcdefghij", preventRecursion=True),
           e(2, constant=True, order=95, delayUntilRecursion=1, content="c"),
           e(3, constant=True, order=94, delayUntilRecursion=2, content="d")]
    assert uids(run(x1b, ["x"], max_context=100)) == [0, 2]


def test_groups_and_probability() -> None:
    assert uids(run([e(0, constant=True, group="g", groupOverride=True, order=10, content="A"),
                     e(1, constant=True, group="g", groupOverride=True, order=20, content="B"),
                     e(2, constant=True, group="g", order=30, content="C")], ["x"])) == [1]
    weighted = [e(0, constant=True, group="g", groupWeight=100, order=20, content="A"),
                e(1, constant=True, group="g", groupWeight=300, order=10, content="B")]
    assert uids(run(weighted, ["x"], random=[0.2])) == [0]
    assert uids(run(weighted, ["x"], random=[0.3])) == [1]
    assert uids(run([e(0, key=["sword"], group="g", order=20), e(1, key=["sword", "fire"], group="g", order=10)],
                    ["sword fire"], world_info_use_group_scoring=True)) == [1]
    assert uids(run([e(0, key=["{{char}}"], group="g", order=20), e(1, key=["alice"], group="g", order=10)],
                    ["alice"], world_info_use_group_scoring=True)) == [1]
    x5 = [e(0, key=["castle"], group="g", probability=50, order=20, content="A"),
          e(1, key=["castle"], group="g", order=10, content="B"),
          e(2, key=["castle"], order=5, content="trigger again")]
    r = run(x5, ["castle"], random=[0.1, 0.99], world_info_recursive=True)
    assert uids(r) == [2, 1] and r.before == "trigger again\nB" and r.rolls == 2
    assert uids(run([e(0, constant=True, probability=50)], ["x"], random=[0.6])) == []
    assert uids(run([e(0, constant=True, probability=50)], ["x"], random=[0.5])) == [0]
    assert uids(run([e(0, constant=True, probability=None)], ["x"], random=[0.01])) == []
    assert uids(run([e(0, constant=True, probability=0, useProbability=False)], ["x"], random=[0.99])) == [0]
    v34 = [e(0, key=["dragon"], probability=50, order=10, content="P"), e(1, key=["castle"], order=20, content="dragon")]
    assert uids(run(v34, ["castle dragon"], random=[0.99], world_info_recursive=True)) == [1]
    v53 = [e(0, key=["castle"], group="g", order=20, content="dragon"), e(1, key=["dragon"], group="g", order=10, content="B")]
    assert uids(run(v53, ["castle"], world_info_recursive=True)) == [0]
    assert uids(run([{**v53[0], "group": "g,h"}, v53[1]], ["castle"], world_info_recursive=True)) == [0, 1]


OVERLAP = [e(0, constant=True, group="x,y", order=40, content="A"), e(1, constant=True, group="x", order=30, content="B"),
           e(2, constant=True, group="y", order=20, content="C"), e(3, constant=True, order=10, content="D")]


def test_group_overlap_quirk_reproduced_by_default() -> None:
    r = run(OVERLAP, ["x"], random=[0.75, 0.75])
    assert uids(r) == [1, 2] and r.before == "C\nB"       # D lost to SillyTavern's splice(-1) bug
    r = run(OVERLAP, ["x"], random=[0.25, 0.75])
    assert uids(r) == [2, 3] and r.before == "D\nC"


def test_group_overlap_quirk_corrected() -> None:
    r = run(OVERLAP, ["x"], random=[0.75, 0.75], quirks=False)
    assert uids(r) == [1, 2, 3] and r.before == "D\nC\nB"


def test_min_activations() -> None:
    chat = ["hi", "hi", "dragon"]
    assert uids(run([e(0, key=["dragon"])], chat, world_info_depth=1, world_info_min_activations=1)) == [0]
    assert uids(run([e(0, key=["dragon"])], chat, world_info_depth=1, world_info_min_activations=1,
                    world_info_min_activations_depth_max=2)) == [0]
    assert uids(run([e(0, key=["dragon"])], chat, world_info_depth=1, world_info_min_activations=1,
                    world_info_min_activations_depth_max=1)) == []
    assert uids(run([e(0, key=["dragon"], scanDepth=1)], ["hi", "dragon"], world_info_depth=1,
                    world_info_min_activations=1)) == []
    r = run([e(0, constant=True, content=""), e(1, key=["old"], content="Z")], ["new", "new", "old"],
            world_info_min_activations=1)
    assert uids(r) == [0] and r.before == ""


def _turn(entries, n, hit, timed, dry=False, random=None, version="1.12"):
    chat = ["x"] * (n - 1) + ["dragon" if hit else "x"]
    lore = lorescan.compile([Lorebook.from_entries("B", entries)], compat=version, tokenizer=CodeUnits())
    msgs = [ChatMessage(name="X", mes=m) for m in chat]
    return lore.activate(msgs, settings=Settings(max_context=1000, world_info_include_names=False),
                         timed=timed, dry_run=dry, rng=ListRandom(random))


def _effects(r, kind):
    return {k: (v.start, v.end, v.protected) for k, v in getattr(r.timed, kind).items()}


def test_timed_sticky_and_cooldown() -> None:
    sticky = [e(0, key=["dragon"], sticky=2)]
    r = _turn(sticky, 3, True, None)
    assert uids(r) == [0] and _effects(r, "sticky") == {"B.0": (3, 5, False)}
    r = _turn(sticky, 4, False, r.timed)
    assert uids(r) == [0]
    r = _turn(sticky, 5, False, r.timed)
    assert uids(r) == [] and _effects(r, "sticky") == {}
    both = [e(0, key=["dragon"], sticky=2, cooldown=2)]
    r = _turn(both, 3, True, None)
    assert _effects(r, "sticky") == {"B.0": (3, 5, False)} and _effects(r, "cooldown") == {"B.0": (3, 5, False)}
    r = _turn(both, 4, False, r.timed)
    assert uids(r) == [0]
    r = _turn(both, 5, True, r.timed)
    assert uids(r) == [] and _effects(r, "cooldown") == {"B.0": (5, 7, True)}
    r = _turn(both, 6, True, r.timed)
    assert uids(r) == []
    r = _turn(both, 7, True, r.timed)
    assert uids(r) == [0] and _effects(r, "sticky") == {"B.0": (7, 9, False)}


def test_timed_delay_swipe_and_dry_runs() -> None:
    assert uids(_turn([e(0, key=["dragon"], delay=3)], 2, True, None)) == []
    assert uids(_turn([e(0, key=["dragon"], delay=3)], 3, True, None)) == [0]
    r = _turn([e(0, key=["dragon"], sticky=3)], 3, True, None)
    r = _turn([e(0, key=["dragon"], sticky=3)], 3, False, r.timed)     # regenerate: chat did not advance
    assert uids(r) == [] and _effects(r, "sticky") == {}
    t6 = [e(0, key=["dragon"], sticky=3, delay=5)]
    assert uids(_turn(t6, 2, True, None, dry=True, version="1.12")) == [0]     # 1.12: no delay in dry runs
    assert uids(_turn(t6, 2, True, None, dry=True, version="1.18")) == []      # 1.18 applies delay
    assert _effects(_turn(t6, 2, True, None, dry=True, version="1.12"), "sticky") == {}


def test_sticky_entry_skips_rolls_and_wipes_its_group_on_cooldown() -> None:
    t8 = [e(0, key=["dragon"], sticky=3, probability=10)]
    r = _turn(t8, 2, True, None, random=[0.05])
    assert uids(r) == [0]
    r = _turn(t8, 3, False, r.timed, random=[0.99])
    assert uids(r) == [0] and r.rolls == 0
    t7 = [e(0, key=["dragon"], sticky=3, cooldown=5, group="g", order=20, content="A"),
          e(1, key=["dragon"], group="g", order=10, content="B")]
    r = _turn(t7, 2, True, None, random=[0.1])
    assert uids(r) == [0]
    assert _effects(r, "sticky") == {"B.0": (2, 5, False)} and _effects(r, "cooldown") == {"B.0": (2, 7, False)}
    assert uids(_turn(t7, 3, True, r.timed)) == []


def test_sillytavern_hash_matches_a_javascript_computation() -> None:
    from lorescan._compile import cyrb53

    # getStringHash("") and getStringHash("hello") as SillyTavern's utils.js computes them.
    assert cyrb53("") == 3338908027751811
    assert cyrb53("hello") == 4625896200565286
    assert cyrb53("héllo 🐉") == 6528569269730877


def test_group_field_equality_quirk_both_ways() -> None:
    v53b = [e(0, key=["castle"], group="g,h", order=20, content="dragon"),
            e(1, key=["dragon"], group="g", order=10, content="B")]
    assert uids(run(v53b, ["castle"], world_info_recursive=True)) == [0, 1]
    assert uids(run(v53b, ["castle"], world_info_recursive=True, quirks=False)) == [0]


def test_sticky_cooldown_group_wipe_quirk_both_ways() -> None:
    t7 = [e(0, key=["dragon"], sticky=3, cooldown=5, group="g", order=20, content="A"),
          e(1, key=["dragon"], group="g", order=10, content="B")]
    for quirks, expected in ((True, []), (False, [0])):
        lore = lorescan.compile([Lorebook.from_entries("B", t7)], compat="1.12", tokenizer=CodeUnits(), quirks=quirks)
        settings = Settings(max_context=1000, world_info_include_names=False)
        first = lore.activate([ChatMessage(name="X", mes="x"), ChatMessage(name="X", mes="dragon")],
                              settings=settings, rng=ListRandom([0.1]))
        assert uids(first) == [0]
        chat = [ChatMessage(name="X", mes=m) for m in ("x", "x", "dragon")]
        assert uids(lore.activate(chat, settings=settings, timed=first.timed)) == expected


def test_min_activations_depth_overshoot_quirk_both_ways() -> None:
    chat = ["hi", "hi", "dragon"]
    kwargs = dict(world_info_depth=1, world_info_min_activations=1, world_info_min_activations_depth_max=2)
    assert uids(run([e(0, key=["dragon"])], chat, **kwargs)) == [0]              # scans 3 messages
    assert uids(run([e(0, key=["dragon"])], chat, quirks=False, **kwargs)) == []  # stops at 2


def test_duplicate_book_uid_activations_by_version() -> None:
    dup = [e(1, key=["a"], content="one", order=20), e(1, key=["a"], content="two", order=10)]
    r = run(dup, ["a"], version="1.12")                 # a Set of entry objects: both activate
    assert r.activated_keys() == ["B.1", "B.1"] and r.before == "two\none"
    r = run(dup, ["a"], version="1.18")                 # a Map by "<book>.<uid>": the second replaces
    assert r.activated_keys() == ["B.1"] and r.before == "two"


def _js_strict_equal(a: Any, b: Any) -> bool:
    """JavaScript ``===`` between two JSON scalars (the reference for the depth groups below)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and a == b


_DEPTH_VALUES = [0, 4, 4.0, 2, -0.0, float("nan"), None, True, False, "4", "", 1]


@hsettings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_DEPTH_VALUES), st.sampled_from(_DEPTH_VALUES),
                          st.integers(0, 3)), max_size=8))
def test_depth_groups_follow_strict_equality(specs) -> None:
    """Entries at a depth join the first group whose depth and role are ``===`` to theirs (``?? 4``
    and ``?? 0``); a new group keeps the entry's own depth, so an unset one is never joined."""
    entries = [e(i, constant=True, position=4, depth=d, role=r, order=o, content=f"c{i}")
               for i, (d, r, o) in enumerate(specs)]
    got = run(entries, ["x"], version="1.18").depth
    want: list[dict[str, Any]] = []
    order = sorted(range(len(specs)), key=lambda i: -specs[i][2])
    for i in order:
        d, r, _ = specs[i]
        wd, wr = (4 if d is None else d), (0 if r is None else r)
        for g in want:
            if _js_strict_equal(g["depth"], wd) and _js_strict_equal(g["role"], wr):
                g["entries"].insert(0, f"c{i}")
                break
        else:
            want.append({"depth": d, "role": wr, "entries": [f"c{i}"]})
    assert [g.entries for g in got] == [g["entries"] for g in want]
    assert [(repr(g.depth), repr(g.role)) for g in got] == [(repr(g["depth"]), repr(g["role"])) for g in want]
