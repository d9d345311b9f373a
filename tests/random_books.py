"""Small random books built to collide: a vocabulary of near misses (case variants, accents and
their decomposed forms, punctuation at word edges, substrings of other words, scripts without
spaces, blanks and spaces at the ends, the scan text's own separators), regex keys with flags,
lookbehinds and unicode classes, macro keys, secondary logic, inclusion groups, probability, scan
depths, budgets that overflow. Used to compare two ways of evaluating the same generations
(``test_kept_lore.py``, and the baseline in ``benchmarks/test_baseline_agrees.py``).

``full=True`` adds what the baseline does not implement: timed effects, ignored budgets, group
scoring, character filters, decorators, match fields, generation triggers, outlets, minimum
activations and books of every scope.
"""

from __future__ import annotations

import os
import random
from typing import Any

from lorescan import ChatMessage, Settings

#: regex keys JavaScript takes and the regex module refuses (plain text): an unknown script, and 200
#: nested groups, whose literal is in its own text or not (their texts are words of the chats too)
_REFUSED = ["/\\p{Script=Foo}ash/u", "/wombat" + "(?:" * 200 + "x" + ")" * 200 + "/",
            "/wom(?:bat|ble)" + "(?:" * 200 + "x" + ")" * 200 + "/"]
WORDS = ["ash", "Ash", "ASH", "ash-tree", "ashes", "café", "Café", "naïve", "x", "x_y", "42", "tree", "Al",
         "Bo", "dragon", "Dragon", "drag", "on", "fire", "fire!", "ice", "ICE", "ice.", "sea", "seashell", "a",
         "an", "the", "ß", "ẞ", "İstanbul", "istanbul", "東京", "東", "é", "e\u0301", "o'neil", "O'Neil",
         " ash", "ash ", "", "  ", "a\nb", "\x01", "Ash,", "(ash)", "ash's", "ASH!", "東京タワー", "ΣΑΣ", "σας", "ς",
         "a.b", "wombat", "womble", "wom"] + _REFUSED
REGEX_KEYS = ["/as+h/", "/as+h/i", "/\\bcaf/i", "/^Al/m", "/ice\\./", "/dra(g|k)on/i", "/x_?y/", "/\\d+/",
              "/Tree$/im", "/fire!/", "/sea(shell)?/", "/東./", "/[A-Z]sh/", "/(?<=a)sh/", "/\\bash\\b/u",
              "/a.*?e/s", "/^$/m", "/[\\s\\S]/", "/(a|)+b/", "/\\u0301/u", "/x{2,}/i", "/\\p{L}+é/u",
              *_REFUSED]
MACRO_KEYS = ["{{char}}", "{{user}}", "{{char}} ash", "hello {{user}}"]
DECORATORS = ["@@activate\n", "@@dont_activate\n", "@@depth 2\n", "@@dont_activate\n@@activate\n"]


def count(default: int) -> int:
    """How many random books (or regex patterns, ``test_prefilter.py``) a comparison runs:
    ``default``, or ``LORESCAN_RANDOM_BOOKS`` for a longer campaign
    (``LORESCAN_RANDOM_BOOKS=20000 pytest tests/test_kept_lore.py``)."""
    return int(os.environ.get("LORESCAN_RANDOM_BOOKS", default))


#: (user, character) names a generation may use
NAMES = [("Al", "Bo"), ("Bo", "Al"), ("Al", "Al"), ("x", "Café")]


def key(r: random.Random) -> str:
    p = r.random()
    if p < 0.12:
        return r.choice(REGEX_KEYS)
    if p < 0.17:
        return r.choice(MACRO_KEYS)
    if p < 0.30:
        return f"{r.choice(WORDS)} {r.choice(WORDS)}"
    return r.choice(WORDS)


def words(r: random.Random, low: int, high: int) -> str:
    return " ".join(r.choice(WORDS) for _ in range(r.randint(low, high)))


def entry(r: random.Random, uid: int, full: bool = False) -> dict[str, Any]:
    """One SillyTavern entry with random keys, placement and gates."""
    e: dict[str, Any] = {
        "uid": uid, "key": [key(r) for _ in range(r.randint(1, 3))], "keysecondary": [], "content": words(r, 0, 6),
        "order": r.randint(0, 4), "position": r.choice([0, 0, 1, 1, 2, 3, 4, 5, 6]), "selective": True,
        "selectiveLogic": 0, "constant": r.random() < 0.06, "disable": r.random() < 0.05, "probability": 100,
        "useProbability": True, "depth": r.randint(0, 3), "role": r.randint(0, 2), "group": "",
        "groupOverride": False, "groupWeight": 100, "excludeRecursion": r.random() < 0.1,
        "preventRecursion": r.random() < 0.1, "delayUntilRecursion": 0, "scanDepth": None,
        "caseSensitive": r.choice([None, None, True, False]), "matchWholeWords": r.choice([None, None, True, False])}
    if r.random() < 0.35:
        e["keysecondary"] = [key(r) for _ in range(r.randint(1, 2))]
        e["selectiveLogic"] = r.randint(0, 3)
        e["selective"] = r.random() < 0.85
    if r.random() < 0.15:
        e["probability"] = r.choice([0, 30, 50, 99])
        e["useProbability"] = r.random() < 0.8
    if r.random() < 0.25:
        e["group"] = r.choice(["g1", "g2", "g1,g2", "g1, g2", "G1"])
        e["groupOverride"] = r.random() < 0.3
        e["groupWeight"] = r.choice([100, 50, 1, 300])
    if r.random() < 0.1:
        e["delayUntilRecursion"] = r.choice([True, 1, 2])
    if r.random() < 0.12:
        e["scanDepth"] = r.randint(0, 5)
    if r.random() < 0.05:
        e["content"] = ""
    elif r.random() < 0.05:
        e["content"] = "{{user}} " + e["content"]
    if full:
        _more(r, e)
    return e


def _more(r: random.Random, e: dict[str, Any]) -> None:
    """The features beyond the baseline's."""
    if r.random() < 0.15:
        e["sticky"] = r.randint(1, 3)
    if r.random() < 0.15:
        e["cooldown"] = r.randint(1, 3)
    if r.random() < 0.1:
        e["delay"] = r.randint(1, 4)
    if r.random() < 0.08:
        e["ignoreBudget"] = True
    if r.random() < 0.1:
        e["useGroupScoring"] = r.choice([True, False])
    if r.random() < 0.08:
        e["characterFilter"] = {"names": r.choice([["Bo"], ["Al"], ["Café"]]), "tags": r.choice([[], ["t1"]]),
                                "isExclude": r.random() < 0.5}
    if r.random() < 0.06:
        e["content"] = r.choice(DECORATORS) + e["content"]
    for name in ("matchPersonaDescription", "matchCharacterDescription", "matchScenario"):
        if r.random() < 0.05:
            e[name] = True
    if r.random() < 0.06:
        e["triggers"] = r.choice([["normal"], ["swipe"], ["continue", "swipe"]])
    if r.random() < 0.05:
        e["outletName"] = r.choice(["o1", "o2"])
        e["position"] = 7


def settings(r: random.Random, full: bool = False) -> Settings:
    """Small windows, budgets that overflow, recursion limits; ``full``: minimum activations, group
    scoring and the character book strategy too."""
    more: dict[str, Any] = {}
    if full:
        more = {"world_info_min_activations": r.choice([0, 0, 1, 3]),
                "world_info_min_activations_depth_max": r.choice([0, 3]),
                "world_info_use_group_scoring": r.random() < 0.3, "world_info_character_strategy": r.randint(0, 2)}
    return Settings(world_info_depth=r.randint(1, 6), world_info_recursive=r.random() < 0.6,
                    world_info_case_sensitive=r.random() < 0.3, world_info_match_whole_words=r.random() < 0.6,
                    world_info_include_names=r.random() < 0.8,
                    world_info_max_recursion_steps=r.choice([0, 0, 1, 2, 3]),
                    max_context=r.choice([100, 200, 400, 4000]), world_info_budget=r.choice([5, 25, 50]),
                    world_info_budget_cap=r.choice([0, 0, 10, 30]), **more)


def message(r: random.Random, chat: list[ChatMessage]) -> ChatMessage:
    """The chat's next message: user and character in turn, under one of several names, now and
    then a system message, and now and then an earlier message's text again (under another name)."""
    turn = len(chat)
    said = chat[r.randrange(turn)].mes if chat and r.random() < 0.2 else words(r, 0, 7)
    return ChatMessage(name=r.choice(["Al", "Bo", "x", "Café"]), is_user=bool(turn % 2),
                       is_system=r.random() < 0.08, mes=said)
