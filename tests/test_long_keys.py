"""Keys too long for the Aho-Corasick automata are searched in the scan text, as SillyTavern searches
every key: a substring (or whole-word) match with the usual case rules. The automata never hold
a text longer than ``MAX_NEEDLE``: pyahocorasick frees a trie recursively, and a word of ~550,000
characters overflows the C stack (a segfault when the compiled books are freed)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._keys import MAX_NEEDLE, find_word

_LETTERS = random.Random(3)
#: letters without repeats to speak of (a repeated literal makes the regex module's first search slow)
LONG = "".join(_LETTERS.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(3 * MAX_NEEDLE))


def _activated(keys: list[str], text: str, **settings: object) -> bool:
    book = Lorebook.from_entries("b", [{"uid": 0, "key": keys, "content": "X"}])
    s = Settings(**settings)   # type: ignore[arg-type]
    lore = lorescan.compile([book], settings=s)
    for index in lore._indexes.values():
        for auto in (index.needles._ci, index.needles._cs):
            assert auto is None or auto.get_stats()["longest_word"] <= MAX_NEEDLE
    return lore.activate([ChatMessage(name="U", is_user=True, mes=text)], settings=s).activated_keys() == ["b.0"]


def test_long_plain_key_is_a_substring_match() -> None:
    assert _activated([LONG], "say " + LONG.upper() + "!")                                # case-insensitive
    assert not _activated([LONG], "say " + LONG.upper() + "!", world_info_case_sensitive=True)
    assert _activated([LONG], "say " + LONG + "!", world_info_case_sensitive=True)
    assert _activated([LONG], "x" + LONG + "y")                                           # inside a word
    assert not _activated([LONG], "x" + LONG[:-1] + " " + LONG[-1])
    assert not _activated([LONG], LONG[:MAX_NEEDLE] + " and no more")                     # only its start


def test_long_key_and_whole_words() -> None:
    assert not _activated([LONG], "x" + LONG + " y", world_info_match_whole_words=True)
    assert _activated([LONG], "x " + LONG + ".", world_info_match_whole_words=True)
    assert _activated([LONG], "é" + LONG + "é", world_info_match_whole_words=True)      # ASCII \W
    phrase = " ".join(LONG[i:i + 50] for i in range(0, len(LONG), 50))                    # words: a substring
    assert _activated([phrase], "x" + phrase + "y", world_info_match_whole_words=True)


def test_key_at_the_bound_and_beyond() -> None:
    for n in (MAX_NEEDLE - 1, MAX_NEEDLE, MAX_NEEDLE + 1):
        key = LONG[:n]
        assert _activated([key], "a " + key + " b") and not _activated([key], "a " + key[:-1] + " b"), n
    # a key that lowercases longer: "İ" is two characters once case-folded
    dotted = "İ" * (MAX_NEEDLE // 2 + 10)
    assert _activated([dotted], "<" + dotted + ">") and _activated([dotted], dotted.lower())
    assert not _activated([dotted], dotted.lower(), world_info_case_sensitive=True)


def test_long_key_with_a_macro_and_a_long_regex_literal() -> None:
    assert _activated(["{{user}} " + LONG], "User " + LONG)
    assert _activated(["/" + LONG[:1500] + "/"], "a" + LONG[:1500] + "b")
    assert not _activated(["/" + LONG[:1500] + "/"], "a" + LONG[:1499])


@given(st.text(alphabet="ab_ é.\n", max_size=12), st.text(alphabet="ab_é.", min_size=1, max_size=3))
def test_find_word_is_sillytaverns_word_regex(haystack: str, needle: str) -> None:
    """``find_word`` answers as ``(?:^|\\W)(<needle>)(?:$|\\W)`` (no flags: ASCII ``\\W``)."""
    pattern = r"(?:^|[^A-Za-z0-9_])(" + re.escape(needle) + r")(?:\Z|[^A-Za-z0-9_])"
    assert find_word(haystack, needle) == (re.search(pattern, haystack) is not None)


@pytest.mark.parametrize("length", [600_000])
def test_replay_with_a_huge_key_exits_cleanly(tmp_path: Path, length: int) -> None:
    """A key of 600,000 characters used to crash the process when the compiled books were freed."""
    key = "k" * length
    book = {"entries": {"0": {"uid": 0, "key": [key], "content": "found it"},
                        "1": {"uid": 1, "key": ["hello"], "content": "hi"}}}
    (tmp_path / "book.json").write_text(json.dumps(book))
    lines = [{"user_name": "U", "character_name": "C", "chat_metadata": {}},
             {"name": "C", "is_user": False, "mes": "Welcome."},
             {"name": "U", "is_user": True, "mes": "hello " + key},
             {"name": "C", "is_user": False, "mes": "Indeed."}]
    (tmp_path / "chat.jsonl").write_text("\n".join(map(json.dumps, lines)))
    out = subprocess.run([sys.executable, "-m", "lorescan", "replay", "--book", str(tmp_path / "book.json"),
                          "--chat", str(tmp_path / "chat.jsonl"), "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-500:]
    generation = json.loads(out.stdout.splitlines()[0])
    assert generation["activated"] == ["book.0", "book.1"]
