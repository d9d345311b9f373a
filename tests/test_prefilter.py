"""The regex prefilter is conservative: every text a regex key matches holds one of its literals.

Patterns are built together with a text each matches (literals, escapes of every form, classes,
groups, named groups, alternations, quantifiers, flags), so the property is checked on texts the
regex really matches: a literal that is not in such a text would keep the key from ever matching
there, where SillyTavern's JavaScript matches it.
"""

from __future__ import annotations

import random

import pytest

from lorescan._jsregex import parse_regex_key
from lorescan._prefilter import required_literals
from tests.random_books import count

#: (pattern piece, a text it matches, needs the u flag)
_ATOMS: list[tuple[str, str, bool]] = [
    ("a", "a", False), ("B", "B", False), ("x", "x", False), ("-", "-", False), ("=", "=", False), (" ", " ", False),
    ("_", "_", False), ("7", "7", False), ("\\.", ".", False), ("\\d", "4", False), ("\\w", "k", False),
    ("\\s", " ", False), ("\\W", "!", False), (".", "q", False), ("[a-c]", "b", False), ("[^xyz]", "m", False),
    ("\\x41", "A", False), ("\\u0042", "B", False), ("\\cJ", "\n", False), ("\\t", "\t", False),
    ("\\u{43}", "C", True), ("\\p{L}", "é", True), ("\\p{Script=Greek}", "α", True), ("\\P{L}", "3", True),
    ("\\p{General_Category=Letter}", "ж", True), ("\\p{sc=Han}", "東", True), ("\\p{Lu}", "Q", True),
    ("é", "é", False), ("東", "東", False),
]


def _piece(r: random.Random, depth: int) -> tuple[str, str, bool]:
    """A pattern piece, a text it matches, and whether it needs the u flag."""
    p = r.random()
    if depth < 3 and p < 0.12:          # a group of alternatives: the text follows one of them
        alts = [_sequence(r, depth + 1) for _ in range(r.randint(1, 3))]
        chosen = r.choice(alts)
        opener = r.choice(["(?:", "(", f"(?<g{depth}{r.randrange(99)}>"])
        pattern, text, u = opener + "|".join(a[0] for a in alts) + ")", chosen[1], any(a[2] for a in alts)
    elif p < 0.45:                      # a run of plain letters: where literals come from
        pattern = "".join(r.choice("abcdwxyzAB") for _ in range(r.randint(2, 5)))
        text, u = pattern, False
    else:
        pattern, text, u = r.choice(_ATOMS)
    q = r.random()
    if q < 0.1:
        return f"(?:{pattern})?", (text if r.random() < 0.5 else ""), u
    if q < 0.17:
        return f"(?:{pattern})*", text * r.randint(0, 2), u
    if q < 0.24:
        return f"(?:{pattern})+", text * r.randint(1, 2), u
    if q < 0.3:
        n = r.randint(1, 3)
        return f"(?:{pattern}){{{n}}}", text * n, u
    if q < 0.34:
        return f"(?:{pattern}){{1,3}}", text * r.randint(1, 3), u
    return pattern, text, u


def _sequence(r: random.Random, depth: int = 0) -> tuple[str, str, bool]:
    parts = [_piece(r, depth) for _ in range(r.randint(1, 6))]
    return "".join(p[0] for p in parts), "".join(p[1] for p in parts), any(p[2] for p in parts)


def _check(seed: int) -> bool:
    """One random pattern: whether it had literals (and the check ran)."""
    r = random.Random(seed)
    pattern, text, u = _sequence(r)
    if r.random() < 0.3:            # a top-level alternation: the text follows one branch
        other = _sequence(r)
        pattern, u = f"{pattern}|{other[0]}", u or other[2]
        if r.random() < 0.5:
            text = other[1]
    flags = "".join(f for f in "imsu" if r.random() < 0.3) if not u else "u" + ("m" if r.random() < 0.3 else "")
    rx = parse_regex_key(f"/{pattern}/{flags}")
    if rx is None or not rx.test(text):
        return False            # not a pattern JavaScript takes, or a piece the texts do not model
    literals = required_literals(pattern, flags)
    if literals is None:
        return False
    haystack = text.lower()
    assert any(lit in haystack for lit in literals), (pattern, flags, text, literals)
    return True


def test_every_text_a_regex_key_matches_holds_one_of_its_literals() -> None:
    checked = sum(_check(seed) for seed in range(count(3000)))
    assert checked > count(3000) // 3      # many patterns have literals, and every text matches


@pytest.mark.parametrize("pattern,flags,text", [
    (r"\p{Script=Greek}xyz", "u", "αxyz"), (r"\p{General_Category=Letter}abc", "u", "жabc"),
    (r"(?<n>abc)\k<n>def", "", "abcabcdef"), (r"\u{1F600}abc", "u", "\U0001F600abc"),
])
def test_braced_and_angled_escapes_hold_no_literal(pattern: str, flags: str, text: str) -> None:
    rx = parse_regex_key(f"/{pattern}/{flags}")
    assert rx is not None and rx.test(text)
    literals = required_literals(pattern, flags)
    assert literals is not None and any(lit in text.lower() for lit in literals)


#: pieces that can reach into the scan text's joiner ("\n\x01") or across it
_REACHING = [("[^a]", "\n"), ("\\W", "\x01"), ("\\s", "\n"), ("[\\s\\S]", "\x01"), ("\\x01", "\x01"), ("\\n", "\n"),
             ("\\u0001", "\x01"), (".", "\x01"), ("\\D", "\n"), ("[^\\n]", "\x01")]


def _local_check(seed: int) -> bool:
    """One random pattern that :attr:`JsRegex.local` says stays within a piece: whether it was
    local (and the check ran). Such a regex matches the scan text (pieces joined as SillyTavern
    joins them) exactly when it matches one of the pieces on its own."""
    from lorescan._scan import JOINER, MARKER

    r = random.Random(seed)
    pattern, text, u = _sequence(r)
    if r.random() < 0.5:
        reach, sample = r.choice(_REACHING)
        at = r.randint(0, len(pattern))
        pattern = pattern[:at] + reach + pattern[at:] if pattern[:at].count("(") == pattern[:at].count(")") \
            else pattern + reach
        text += sample
    flags = "".join(f for f in "ims" if r.random() < 0.3) + ("u" if u else "")
    rx = parse_regex_key(f"/{pattern}/{flags}")
    if rx is None or not rx.local:
        return False
    words = [text, text[: len(text) // 2], text[len(text) // 2:], "plain words", ""]
    pieces = [r.choice(words) + r.choice(["", " x", "\n"]) for _ in range(r.randint(1, 4))]
    joined = MARKER + JOINER.join(pieces)
    assert rx.test(joined) == any(rx.test(p) for p in pieces), (pattern, flags, pieces)
    return True


def test_a_local_regex_matches_the_scan_text_where_it_matches_a_piece() -> None:
    checked = sum(_local_check(seed) for seed in range(count(3000)))
    assert checked > count(3000) // 8      # about a sixth of the patterns are local
