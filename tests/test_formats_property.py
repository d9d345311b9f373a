"""Property tests: random entries survive model → each format → model for the fields that format
can carry, and random chats survive each chat format."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lorescan._formats.chats import Chat
from lorescan._load import Loaded, load_bytes, render
from lorescan._model import GENERATION_TYPES, ChatMessage, Entry, Lorebook

WORD = st.text(alphabet=string.ascii_letters + "éüß", min_size=1, max_size=8)
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=40)
FLAG = st.booleans()
MAYBE_FLAG = st.none() | st.booleans()
MAYBE_INT = st.none() | st.integers(0, 50)

CARD_FIELDS = ["uid", "key", "keysecondary", "comment", "content", "constant", "selective", "order", "position",
               "disable", "displayIndex", "excludeRecursion", "preventRecursion", "delayUntilRecursion",
               "probability", "useProbability", "depth", "selectiveLogic", "outletName", "group",
               "groupOverride", "groupWeight", "scanDepth", "caseSensitive", "matchWholeWords",
               "useGroupScoring", "automationId", "role", "vectorized", "sticky", "cooldown", "delay",
               "matchPersonaDescription", "matchCharacterDescription", "matchCharacterPersonality",
               "matchCharacterDepthPrompt", "matchScenario", "matchCreatorNotes", "triggers", "ignoreBudget"]
#: target → fields it carries exactly.
CARRIED: dict[str, list[str]] = {
    "lorebook_v3": CARD_FIELDS, "charbook": CARD_FIELDS, "png": CARD_FIELDS, "charx": CARD_FIELDS,
    "ccv2": CARD_FIELDS, "ccv3": CARD_FIELDS,
    "novelai": ["uid", "key", "content", "comment", "order", "disable"],
    "agnai": ["uid", "key", "content", "comment", "order", "disable"],
    "risu": ["uid", "key", "keysecondary", "comment", "content", "constant", "selective", "order"],
    "kobold": ["uid", "key", "keysecondary", "content", "comment", "constant", "selective"],
    "kobold-lite": ["uid", "key", "content", "comment", "constant", "selective", "probability", "group", "disable"],
}


@st.composite
def entries(draw: Any) -> list[dict[str, Any]]:
    count = draw(st.integers(1, 5))
    out = []
    for uid in range(count):
        out.append({
            "uid": uid, "key": draw(st.lists(WORD, min_size=1, max_size=3)),
            "keysecondary": draw(st.lists(WORD, max_size=2)), "comment": draw(TEXT), "content": draw(TEXT),
            "constant": draw(FLAG), "vectorized": draw(FLAG), "selective": draw(FLAG),
            "selectiveLogic": draw(st.integers(0, 3)), "addMemo": draw(FLAG), "order": draw(st.integers(0, 1000)),
            "position": draw(st.integers(0, 7)), "disable": draw(FLAG), "excludeRecursion": draw(FLAG),
            "preventRecursion": draw(FLAG), "delayUntilRecursion": draw(st.booleans() | st.integers(0, 3)),
            "probability": draw(st.integers(1, 100)), "useProbability": draw(FLAG),
            "depth": draw(st.integers(0, 20)), "group": draw(WORD | st.just("")), "groupOverride": draw(FLAG),
            "groupWeight": draw(st.integers(1, 200)), "scanDepth": draw(MAYBE_INT),
            "caseSensitive": draw(MAYBE_FLAG), "matchWholeWords": draw(MAYBE_FLAG),
            "useGroupScoring": draw(MAYBE_FLAG), "automationId": draw(WORD | st.just("")),
            "role": draw(st.integers(0, 2)), "sticky": draw(MAYBE_INT), "cooldown": draw(MAYBE_INT),
            "delay": draw(MAYBE_INT), "ignoreBudget": draw(FLAG),
            "triggers": draw(st.lists(st.sampled_from(GENERATION_TYPES), unique=True, max_size=3)),
            "outletName": draw(WORD | st.just("")), "matchPersonaDescription": draw(FLAG),
            "matchCharacterDescription": draw(FLAG), "matchCharacterPersonality": draw(FLAG),
            "matchCharacterDepthPrompt": draw(FLAG), "matchScenario": draw(FLAG), "matchCreatorNotes": draw(FLAG),
            "displayIndex": draw(st.integers(0, 99)),
            "lorescanUnknown": draw(st.dictionaries(WORD, st.integers() | TEXT, max_size=2)),
        })
    return out


def _book(items: list[dict[str, Any]]) -> Lorebook:
    return Lorebook(name="Random", entries=[Entry.from_json(e) for e in items],
                    entry_keys=[str(e["uid"]) for e in items])


def _card_loaded(book: Lorebook) -> Loaded:
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Rand", "description": "d"}}
    loaded = load_bytes(json.dumps(card).encode(), "rand.json")
    loaded.books = [book]
    return loaded


def _reload(loaded: Loaded, target: str) -> list[Entry]:
    data, _ = render(loaded, target)
    suffix = {"png": "png", "charx": "charx", "novelai": "lorebook"}.get(target, "json")
    return load_bytes(data, f"back.{suffix}").books[0].scan_order()


SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(entries())
def test_world_info_carries_everything(items: list[dict[str, Any]]) -> None:
    loaded = Loaded(format="st", path="mem.json", books=[_book(items)])
    back = _reload(loaded, "st")
    assert [e.to_json() for e in back] == items


@pytest.mark.parametrize("target", sorted(CARRIED))
@SETTINGS
@given(items=entries())
def test_each_format_carries_its_fields(target: str, items: list[dict[str, Any]]) -> None:
    book = _book(items)
    loaded = _card_loaded(book) if target in ("png", "charx", "ccv2", "ccv3") else \
        Loaded(format="st", path="mem.json", books=[book])
    back = _reload(loaded, target)
    assert len(back) == len(items)
    for original, entry in zip(items, back):
        got = entry.to_json()
        for field in CARRIED[target]:
            assert got[field] == original[field], (target, field)
        if target == "risu":
            effective = original["probability"] if original["useProbability"] else 100
            assert (got["probability"] if got["useProbability"] else 100) == effective
        if target == "kobold-lite":
            logic = original["selectiveLogic"]
            if logic in (0, 2) and (original["selective"] or logic == 0) and original["keysecondary"]:
                assert (got["keysecondary"], got["selectiveLogic"]) == (original["keysecondary"], logic)


MESSAGE = st.builds(
    lambda kind, text: (kind, text),
    st.sampled_from(["user", "char", "system"]),
    st.text(alphabet=string.ascii_letters + " .,!?é", min_size=1, max_size=30).map(str.strip).filter(bool),
)


@pytest.mark.parametrize("target", ["st-chat", "openai", "openai-jsonl", "glm", "transcript", "tavernai-chat"])
@SETTINGS
@given(turns=st.lists(MESSAGE, min_size=1, max_size=6))
def test_chats_survive_each_format(target: str, turns: list[tuple[str, str]]) -> None:
    if target in ("transcript", "tavernai-chat"):
        turns = [("char", "greeting")] + [(k if k != "system" else "user", t) for k, t in turns]
    messages = [ChatMessage(name={"user": "Tomas", "char": "Ilse", "system": "system"}[k],
                            is_user=k == "user", is_system=k == "system", mes=t) for k, t in turns]
    chat = Chat(format="st-chat", user_name="Tomas", character_name="Ilse", messages=messages)
    loaded = Loaded(format="st-chat", path="mem.jsonl", chat=chat)
    data, _ = render(loaded, target)
    suffix = {"st-chat": "jsonl", "openai-jsonl": "jsonl", "transcript": "txt"}.get(target, "json")
    back = load_bytes(data, f"back.{suffix}").chat
    assert back is not None
    assert [(m.is_user, m.is_system, m.mes) for m in back.messages] == [
        (m.is_user, m.is_system, m.mes) for m in messages]
    if target in ("st-chat", "transcript", "tavernai-chat"):
        assert [m.name for m in back.messages] == [m.name for m in messages]
