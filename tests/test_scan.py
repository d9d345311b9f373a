"""Key matching internals: the regex prefilter never hides a match, hits are per piece."""

from __future__ import annotations

import pytest

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan.scan import required_literal


@pytest.mark.parametrize("source,flags,expected", [
    ("dragon", "", "dragon"), ("drag(on|oness)", "i", "drag"), ("a|dragon", "", None),
    (r"\bkni+ght\b", "", "kni"), ("colou?r", "", "colo"), ("x{2}yzw", "", "yzw"),
    (r"[abc]def\.ghi", "", "def"), ("ab", "", None), ("(?:big)? dragon", "iu", None),
])
def test_required_literal(source: str, flags: str, expected: str | None) -> None:
    assert required_literal(source, flags) == expected


def _activated(keys: list[str], text: str, **settings) -> list[str]:
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": keys}])], tokenizer="words")
    return lore.activate([ChatMessage(name="U", mes=text)],
                         settings=Settings(world_info_include_names=False, **settings)).activated_keys()


def test_regex_keys_with_a_required_literal() -> None:
    assert _activated(["/Dragon(ess)?/"], "a Dragoness") == ["b.0"]
    assert _activated(["/Dragon/"], "a dragon") == []
    assert _activated(["/Dragon/i"], "a DRAGON") == ["b.0"]
    # Not a valid JavaScript regex: matched as plain text, case-insensitively, slashes included.
    assert _activated(["/Dragon(/"], "see /dragon(/ here") == ["b.0"]
    assert _activated(["/Dragon(/"], "see dragon here") == []


def test_regex_key_sees_other_messages_only_through_the_joiner() -> None:
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["/world\\n\\x01hello/"]}])],
                            tokenizer="words")
    chat = [ChatMessage(name="U", mes="hello"), ChatMessage(name="U", mes="world")]
    assert lore.activate(chat, settings=Settings(world_info_include_names=False)).activated_keys() == ["b.0"]
