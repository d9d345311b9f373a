"""Key matching internals: the regex prefilter never hides a match, hits are per piece."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._jsregex import PIECE_MARKED, PIECE_NEWLINE, JsRegex, JsRegexSyntaxError
from lorescan._keys import EMPTY, REGEX
from lorescan._prefilter import required_literals


@pytest.mark.parametrize("source,flags,expected", [
    ("dragon", "", ("dragon",)), ("drag(on|oness)", "i", ("dragon", "dragoness")), ("a|dragon", "", None),
    (r"\bkni+ght\b", "", ("kni",)), ("colou?r", "", ("colo",)), ("x{2}yzw", "", ("yzw",)),
    (r"[abc]def\.ghi", "", ("def",)), ("ab", "", None), ("(?:big)? dragon", "iu", None),
    (r"\bdr(?:ag|agon)\b", "i", ("drag", "dragon")), (r"\b(Dragon|wyrm)s?\b", "", ("dragon", "wyrm")),
    ("dragon|wyrm", "i", ("dragon", "wyrm")), ("(?:ab)?cde", "", ("cde",)), ("(?=abc)x", "", None),
    ("ab(cd)*ef", "", None), ("(?<name>abc|abd)e", "", ("abce", "abde")), ("(?i:abc)d", "", None),
    ("(ab|cd)+xyz", "", ("xyz",)), ("(a|b|c)(d|e|f)(g|h|i)", "", None),
    # a braced or angled escape is one escape: no "=greek" after \p{Script=Greek}
    (r"\p{Script=Greek}x", "u", None), (r"\p{Script=Greek}xyz", "u", ("xyz",)),
    (r"\p{General_Category=Letter}abc", "u", ("abc",)), (r"(?<n>a)\k<n>bcd", "", ("bcd",)),
    (r"\k<a$bcd>", "", None), (r"\u{1F600}abc", "u", ("abc",)),
])
def test_required_literals(source: str, flags: str, expected: tuple[str, ...] | None) -> None:
    assert required_literals(source, flags) == expected


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
    # alternatives as prefilter needles; an invalid pattern still matches as the plain key text
    assert _activated(["/\\bdr(?:ag|agon)s?\\b/i"], "two Dragons") == ["b.0"]
    assert _activated(["/\\bdr(?:ag|agon)s?\\b/i"], "two drags") == ["b.0"]
    assert _activated(["/\\bdr(?:ag|agon)s?\\b/i"], "two drakes") == []
    assert _activated(["/(?:ag|agon)(/"], "see /(?:ag|agon)(/ here") == ["b.0"]
    assert _activated(["/dr(?:ag|agon)\\k/u"], "see /dr(?:ag|agon)\\k/u here") == ["b.0"]   # \k: invalid with u
    # {2,1} is invalid: the key's own text is found through "drag", the start of a literal
    assert _activated(["/drag(?:on|onne)x{2,1}/"], "see /DRAG(?:on|onne)x{2,1}/ here") == ["b.0"]
    assert _activated(["/drag(?:on|onne)x{2,1}/"], "a dragonxx, a drag") == []
    # a property escape with a value: every Greek letter before x, no literal "=greek" needed
    assert _activated(["/\\p{Script=Greek}x/u"], "say αx now") == ["b.0"]
    assert _activated(["/\\p{Script=Greek}xyz/u"], "say βxyz now") == ["b.0"]
    assert _activated(["/\\p{Script=Greek}xyz/u"], "say bxyz now") == []


def test_prepared_keys_by_entry() -> None:
    """An entry's keys are prepared when first read, per its own case mode; keys with macros are
    left to the names; only primary keys list their entry under a needle."""
    entries = [{"uid": 0, "key": ["dragon", "/wyrm(s)?/i", " "], "keysecondary": ["cave"]},
               {"uid": 1, "key": ["{{char}} sword", "blade"], "keysecondary": ["x"]},
               {"uid": 2, "key": [], "keysecondary": ["Dragon"], "caseSensitive": True},
               {"uid": 3, "key": ["Dragon"], "caseSensitive": True}]
    lore = lorescan.compile([Lorebook.from_entries("b", entries)], tokenizer="words")
    index = lore._key_index(Settings())
    dragon, wyrm, blank = index.primary.get(0)
    assert type(dragon) is int and (wyrm.kind, wyrm.text, blank.kind) == (REGEX, "/wyrm(s)?/i", EMPTY)
    (cave,) = index.secondary.get(0)
    assert index.needles.entries[dragon] == (0,) and index.needles.entries[cave] == ()
    assert index.primary.get(1, ()) == () and index.secondary.get(1, ()) == ()   # prepared per names
    (_, macro_prim, macro_sec, _), = index.macro
    assert macro_prim[0] == -1 and type(macro_prim[1]) is int and type(macro_sec[0]) is int
    assert index.primary.get(2, ()) == () and index.primary[3] == index.secondary[2] != (dragon,)
    assert index.needles.entries[index.primary[3][0]] == (3,)
    with pytest.raises(KeyError):
        index.primary[2]


def test_regex_key_sees_other_messages_only_through_the_joiner() -> None:
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["/world\\n\\x01hello/"]}])],
                            tokenizer="words")
    chat = [ChatMessage(name="U", mes="hello"), ChatMessage(name="U", mes="world")]
    assert lore.activate(chat, settings=Settings(world_info_include_names=False)).activated_keys() == ["b.0"]


# -- regex keys searched piece by piece ------------------------------------------------------


from lorescan._macros import MacroEnv  # noqa: E402
from lorescan._scan import ScanBuffer  # noqa: E402


@pytest.mark.parametrize("source,flags,expected", [
    (r"\bdrag(?:on|oness)\b", "i", PIECE_MARKED), ("a.*b", "", PIECE_MARKED), (r"\x01", "", PIECE_MARKED),
    (r"a\s+b", "i", PIECE_NEWLINE), (r"\n", "", PIECE_NEWLINE), ("[^a]b", "", 0), ("a.b", "s", 0),
    ("^x", "m", 0), ("x$", "", 0), ("x(?=y)", "", 0), ("(?<!y)x", "", 0), ("x", "y", 0),
    (r"\p{L}x", "u", 0), (r"[\s\S]", "", 0), (r"\W", "", 0), (r"[\x00-\x1f]", "", 0),
])
def test_piecewise_kind(source: str, flags: str, expected: int) -> None:
    assert JsRegex(source, flags).piecewise == expected


@pytest.mark.parametrize("source,flags,expected", [
    (r"\bdrag(?:on|oness)\b", "i", True), ("abc", "", True), (r"\w+x", "", True), ("a[bc]", "u", True),
    ("a.*b", "", False), (r"\x01", "", False), (r"a\s", "", False), ("[^a]", "", False), ("x$", "", False),
    ("x", "y", False),
])
def test_local_regexes(source: str, flags: str, expected: bool) -> None:
    """A regex that can consume neither "\n" nor "\x01" (and has no anchor or lookaround) is local."""
    assert JsRegex(source, flags).local is expected


def _buffer(key: str, messages: list[str], fields: dict[str, str], injections: list[str],
            recursion: list, depth: int) -> tuple[ScanBuffer, object]:
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": [key]}])], tokenizer="words")
    index = lore._index(MacroEnv(), Settings())
    buf = ScanBuffer(messages, injections, fields, index, depth, False)
    for text in recursion:   # a recursion text, or the contents it joins with "\n"
        if isinstance(text, list):
            buf.add_recursion("\n".join(text), text)
        else:
            buf.add_recursion(text)
    return buf, index.primary[0][0]


def _both(key: str, messages: list[str], fields: dict[str, str], injections: list[str],
          recursion: list, depth: int, with_recursion: bool = True) -> tuple[bool, bool]:
    """(piece by piece, one search of the whole text) for the entry's regex key."""
    buf, k = _buffer(key, messages, fields, injections, recursion, depth)
    names = tuple(fields)
    whole = k.regex.test(buf.text(depth, with_recursion, names))
    return buf.regex_piecewise(k, k.regex, depth, with_recursion, names), whole


@pytest.mark.parametrize("key,messages,fields,injections,recursion,expected", [
    # the joiner's "\n" follows every piece but the text's last one
    (r"/a\s/", ["xa", "b"], {}, [], [], True), (r"/a\s/", ["b", "xa"], {}, [], [], False),
    (r"/a\s/", ["b", "xa"], {}, [], ["r"], True), (r"/a\s/", ["b"], {}, [], ["xa"], False),
    (r"/a\s/", ["b", "xa"], {"personaDescription": "p"}, [], [], True),
    # the marker before every piece
    (r"/.abc/", ["abc"], {}, [], [], True), (r"/.abc/", ["b"], {}, ["abc"], [], True),
    (r"/x.abc/", ["abc", "x"], {}, [], [], False),
    # recursed contents: only the first follows a marker
    (r"/.abc/", ["b"], {}, [], [["x", "abc"]], False), (r"/.abc/", ["b"], {}, [], [["x", "yabc"]], True), (r"/\x01abc/", ["b"], {}, [], [["x", "abc"]], False),
    (r"/\x01abc/", ["b"], {}, [], [["abc", "x"]], True), (r"/abc\s/", ["b"], {}, [], [["abc", "x"]], True),
    # an empty-matching regex matches even the empty text of no messages
    (r"/q*/", [], {}, [], [], True),
])
def test_regex_piecewise_cases(key, messages, fields, injections, recursion, expected) -> None:
    assert _both(key, messages, fields, injections, recursion, 5) == (expected, expected)


_ATOMS = ["a", "b", "c", "A", " ", ".", r"\s", r"\S", r"\w", r"\W", r"\b", r"\B", r"\n", r"\x01",
          "[^a]", r"[\s\S]", r"[a\n]", r"[b\x01]", "^", "$", "(?=a)", "(?<=a)", r"(?:a|\n)", "(a)",
          r"\1", "abc", "ab?c"]
_QUANT = ["", "", "", "*", "+", "?", "{2}"]
#: a scan text's pieces: messages, a card field, injections and recursion texts (or their contents)
_SCAN_PIECES = dict(
    messages=st.lists(st.text("abcA \n\x01", max_size=6), max_size=4),
    field=st.text("abc \n\x01", max_size=4), injections=st.lists(st.text("abc\n ", max_size=4), max_size=2),
    recursion=st.lists(st.one_of(st.text("abc\n\x01 ", max_size=5),
                                 st.lists(st.text("abc\n\x01 ", max_size=4), max_size=3)), max_size=2),
    depth=st.integers(1, 5), with_recursion=st.booleans(),
)


@hsettings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    atoms=st.lists(st.tuples(st.sampled_from(_ATOMS), st.sampled_from(_QUANT)), min_size=1, max_size=5),
    alt=st.booleans(), flags=st.sampled_from(["", "i", "m", "s", "u", "im", "is", "iu", "y"]),
    **_SCAN_PIECES,
)
def test_regex_piecewise_equals_one_search(atoms, alt, flags, messages, field, injections, recursion,
                                           depth, with_recursion) -> None:
    source = "".join(a + q for a, q in atoms)
    if alt:
        source = f"{source}|c"
    try:
        rx = JsRegex(source, flags)
    except JsRegexSyntaxError:
        assume(False)
    assume(rx.piecewise)
    fields = {"personaDescription": field} if field else {}
    got, want = _both(f"/{source}/{flags}", messages, fields, injections, recursion, depth, with_recursion)
    assert got == want


_LOCAL_ATOMS = ["a", "b", "c", "A", " ", "abc", "ab?c", "bc", r"\w", r"\b", r"\B", "[bc]", "(a)", r"\1",
                "(?:a|bc)", r"[^\n\x01a]", r"\s", "."]


@hsettings(max_examples=400, deadline=None,
           suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(
    # a literal long enough for a prefilter (3 characters) among the atoms: without one, nine in ten
    # sources were not needles, and their rejections were most of the test's time
    atoms=st.tuples(st.lists(st.tuples(st.sampled_from(_LOCAL_ATOMS), st.sampled_from(_QUANT)), max_size=2),
                    st.sampled_from(["abc", "cab", "bca"]),
                    st.lists(st.tuples(st.sampled_from(_LOCAL_ATOMS), st.sampled_from(_QUANT)), max_size=2)),
    alt=st.booleans(), flags=st.sampled_from(["", "i", "u", "iu"]),
    **_SCAN_PIECES,
)
def test_regex_needle_equals_one_search(atoms, alt, flags, messages, field, injections, recursion,
                                        depth, with_recursion) -> None:
    """A local regex key with a prefilter is looked up as a needle of its own, found piece by piece
    by the scan: the answer is the one search of the whole text gives."""
    before, literal, after = atoms
    source = "".join(a + q for a, q in [*before, (literal, ""), *after]) + ("|abc" if alt else "")
    try:
        JsRegex(source, flags)
    except JsRegexSyntaxError:
        assume(False)
    fields = {"personaDescription": field} if field else {}
    buf, k = _buffer(f"/{source}/{flags}", messages, fields, injections, recursion, depth)
    assume(k.rid >= 0 and buf.index.regex_ready(k))
    buf.ensure_scanned(depth)
    names = tuple(fields)
    want = k.regex.test(buf.text(depth, with_recursion, names))
    assert buf.visible(k.rid, depth, with_recursion, names) == want


def test_a_regex_needle_that_times_out_is_given_up(monkeypatch) -> None:
    """A regex needle whose search times out on a piece is given up: its keys go back to the search
    of the whole text, which takes the timeout as no match without searching that piece again."""
    from lorescan import _jsregex
    from lorescan._jsregex import timeout_count

    monkeypatch.setattr(_jsregex, "REGEX_TIMEOUT_SECONDS", 0.05)
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["/xy(a|aa)+b/"]},
                                                         {"uid": 1, "key": ["ok"]}])], tokenizer="words")
    s = Settings(world_info_include_names=False, world_info_depth=10)
    bad = [ChatMessage(name="U", mes="xy" + "a" * 60 + "!") for _ in range(3)] + [ChatMessage(name="U", mes="ok")]
    index = lore._index(MacroEnv(), s)
    key = index.primary[0][0]
    assert key.rid >= 0 and index.regex_ready(key)
    before = timeout_count()
    assert lore.activate(bad, settings=s).activated_keys() == ["b.1"]
    assert timeout_count() == before + 1
    assert not index.regex_ready(key)
    assert lore.activate(bad, settings=s).activated_keys() == ["b.1"]
    assert timeout_count() == before + 1          # the piece is not searched again
    # a newer message that matches is searched before the piece that timed out
    assert lore.activate(bad + [ChatMessage(name="U", mes="xyaab")], settings=s).activated_keys() == ["b.0", "b.1"]


@pytest.mark.parametrize("in_c", [True, False], ids=["c-gates", "python-gates"])
def test_an_entry_gated_by_its_regex_needle_is_read_again_once_the_needle_is_given_up(monkeypatch, in_c) -> None:
    """The engine keeps the needles of simple entries by place; a regex needle given up makes its
    entries' records, and those places, be read again (else the key would never match again)."""
    from lorescan import _index, _jsregex

    if in_c and _index.native is None:
        pytest.skip("the C extension is not built")
    if not in_c:
        monkeypatch.setattr(_index, "native", None)
    monkeypatch.setattr(_jsregex, "REGEX_TIMEOUT_SECONDS", 0.05)
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["/xy(a|aa)+b/"]},
                                                         {"uid": 1, "key": ["ok"]}])], tokenizer="words")
    s = Settings(world_info_include_names=False, world_info_depth=10)
    good = [ChatMessage(name="U", mes="xyaab ok")]
    assert lore.activate(good, settings=s).activated_keys() == ["b.0", "b.1"]     # gated by its needle
    index = lore._index(MacroEnv(), s)
    plan = next(iter(lore._plans.values()))
    tables = index.place_tables(plan, 2)
    assert (tables.gates is not None) == in_c
    assert tables.noted(plan.pos[0]) and tables.noted(plan.pos[1])
    if not in_c:
        assert tables.primary[plan.pos[0]] == (index.primary[0][0].rid,)
    bad = [ChatMessage(name="U", mes="xy" + "a" * 60 + "!") for _ in range(3)] + [ChatMessage(name="U", mes="ok")]
    assert lore.activate(bad, settings=s).activated_keys() == ["b.1"]             # the needle is given up
    assert lore.activate(bad + good, settings=s).activated_keys() == ["b.0", "b.1"]     # the newest matches
    tables = index.place_tables(plan, 2)
    assert not tables.noted(plan.pos[0]) and tables.noted(plan.pos[1])


@pytest.mark.parametrize("key,expected", [
    ("bar", ["b.0", "b.1", "b.2"]),          # hits of each recursed content on its own
    ("foo\nbar", ["b.0", "b.1", "b.2"]),     # a needle that spans two contents: the joined text is scanned
    ("foo bar", ["b.0", "b.1"]),
])
def test_recursion_text_hits(key: str, expected: list[str]) -> None:
    entries = [{"uid": 0, "key": ["start"], "content": "foo", "order": 100},
               {"uid": 1, "key": ["start"], "content": "bar", "order": 90},
               {"uid": 2, "key": [key], "content": "found", "order": 10}]
    lore = lorescan.compile([Lorebook.from_entries("b", entries)], tokenizer="words")
    result = lore.activate([ChatMessage(name="U", mes="start")],
                           settings=Settings(world_info_include_names=False, world_info_recursive=True))
    assert result.activated_keys() == expected
    assert [a.pass_index for a in result.activated] == [1, 1, 2][:len(expected)]


@hsettings(max_examples=200, deadline=None)
@given(flags=st.lists(st.booleans(), max_size=8), swipe=st.booleans(), names=st.booleans())
def test_scan_messages_newest_first_without_system_messages(flags: list[bool], swipe: bool, names: bool) -> None:
    """The lazily built message list equals the whole list built eagerly (what SillyTavern scans)."""
    from lorescan._scan import ScanMessages

    chat = [ChatMessage(name=f"n{i}", mes=f"m{i}", is_system=system) for i, system in enumerate(flags)]
    kept = [m for m in chat if not m.is_system]
    if swipe and kept:
        kept.pop()
    want = [f"{m.name}: {m.mes}" if names else m.mes for m in reversed(kept)]
    got = ScanMessages(chat, "swipe" if swipe else "normal", names, MacroEnv())
    assert len(got) == len(want)
    assert [got[i] for i in range(len(got))] == want
    assert list(got) == want
    assert got[:2] == want[:2]
    if want:
        assert got[-1] == want[-1]


def test_formatted_messages_are_the_same_objects_in_every_evaluation(monkeypatch) -> None:
    """A caller's memo of ``"name: mes"`` gives later evaluations the string object of the first
    (its hash known); the first message is kept by its text with the macros substituted, and chats
    without names stay out of it; the memo keeps at most NAMED_SIZE texts, the newest."""
    from lorescan import _scan
    from lorescan._scan import ScanMessages

    chat = [ChatMessage(name="U", mes="{{user}} opens"), ChatMessage(name="U", mes="hello"),
            ChatMessage(name="C", mes="well met")]
    memo: dict[str, str] = {}
    first = ScanMessages(chat, "normal", True, MacroEnv(user="Ann"), memo)
    again = ScanMessages([ChatMessage(**m.model_dump()) for m in chat], "normal", True, MacroEnv(user="Ann"), memo)
    assert list(first) == list(again) == ["C: well met", "U: hello", "U: Ann opens"]
    assert first[0] is again[0] and first[1] is again[1] and first[2] is again[2]
    assert memo == {"well met": "C: well met", "hello": "U: hello", "Ann opens": "U: Ann opens"}
    assert list(ScanMessages(chat, "normal", False, MacroEnv(user="Ann"), memo)) == ["well met", "hello", "Ann opens"]
    monkeypatch.setattr(_scan, "NAMED_SIZE", 4)
    memo.clear()
    for k in range(9):
        ScanMessages([ChatMessage(name="U", mes="x"), ChatMessage(name="U", mes=f"m{k}")], "normal", True,
                     MacroEnv(), memo)[0]
    assert list(memo) == ["m6", "m7", "m8"]


def test_the_first_message_is_substituted_once_per_macro_values(monkeypatch) -> None:
    """The first message's macros are substituted once for the same values (the caller's memo of
    substituted texts), and again for other values: each evaluation scans its own names."""
    from lorescan import _scan
    from lorescan._scan import ScanMessages

    calls: list[str] = []
    real = _scan.substitute
    monkeypatch.setattr(_scan, "substitute", lambda text, env: calls.append(text) or real(text, env))
    chat = [ChatMessage(name="U", mes="{{user}} opens"), ChatMessage(name="U", mes="{{user}} again")]
    ann, bea = MacroEnv(user="Ann"), MacroEnv(user="Bea")
    memo_ann: dict[str, str] = {}
    assert list(ScanMessages(chat, "normal", True, ann, {}, memo_ann)) == ["U: {{user}} again", "U: Ann opens"]
    assert list(ScanMessages(chat, "normal", True, ann, {}, memo_ann)) == ["U: {{user}} again", "U: Ann opens"]
    assert calls == ["{{user}} opens"] and memo_ann == {"{{user}} opens": "Ann opens"}
    assert list(ScanMessages(chat, "normal", False, bea, None, {})) == ["{{user}} again", "Bea opens"]
    assert calls == ["{{user}} opens", "{{user}} opens"]
    # through the engine: a key on the substituted first message matches for each chat's names
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["Ann opens"], "content": "A"},
                                                          {"uid": 1, "key": ["Bea opens"], "content": "B"}])])
    for user, want in (("Ann", ["b.0"]), ("Bea", ["b.1"]), ("Ann", ["b.0"])):
        assert lore.activate(chat[:1], user_name=user, char_name="C").activated_keys() == want


def test_a_catastrophic_regex_key_times_out_once_per_evaluation(monkeypatch) -> None:
    """Searched piece by piece, a regex that times out stops at its first timeout (no match), as
    one search of the whole text would, instead of paying a timeout per message."""
    from lorescan import _jsregex
    from lorescan._jsregex import timeout_count

    monkeypatch.setattr(_jsregex, "REGEX_TIMEOUT_SECONDS", 0.05)
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["/(a|aa)+b/"]},
                                                         {"uid": 1, "key": ["ok"]}])], tokenizer="words")
    chat = [ChatMessage(name="U", mes="a" * 60 + "!") for _ in range(6)] + [ChatMessage(name="U", mes="ok")]
    before = timeout_count()
    result = lore.activate(chat, settings=Settings(world_info_include_names=False, world_info_depth=10))
    assert result.activated_keys() == ["b.1"]
    assert timeout_count() == before + 1


def test_keys_with_macros_are_prepared_per_pair_of_names() -> None:
    entries = [{"uid": 0, "key": ["{{char}}'s sword", "dragon"], "content": "a"},
               {"uid": 1, "key": ["/<USER>x+/"], "content": "b"},
               {"uid": 2, "key": ["ship"], "keysecondary": ["{{user}}"], "selective": True,
                "selectiveLogic": 0, "content": "c"}]
    lore = lorescan.compile([Lorebook.from_entries("b", entries)], tokenizer="words")
    s = Settings(world_info_include_names=False)

    def run(text: str, user: str, char: str) -> list[str]:
        return lore.activate([ChatMessage(name="U", mes=text)], settings=s, user_name=user,
                             char_name=char).activated_keys()

    assert run("Ann's sword", "Bo", "Ann") == ["b.0"]
    assert run("Ann's sword", "Bo", "Cy") == []
    assert run("a dragon", "Bo", "Cy") == ["b.0"]               # its plain key, whatever the names
    assert run("Boxxx", "Bo", "Ann") == ["b.1"]
    assert run("Boxxx", "Di", "Ann") == []
    assert run("the ship and Di", "Di", "Ann") == ["b.2"]
    assert run("the ship and Di", "Bo", "Ann") == []


@hsettings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(["iron keep", "Iron Keep", "old  iron", "keep", "the iron", "ir on", "keep iron"]),
                min_size=1, max_size=4, unique=True),
       st.text(alphabet="iron kepthIRONKE d", max_size=40), st.booleans())
def test_phrase_needles_are_found_where_the_phrase_is(keys: list[str], text: str, cs: bool) -> None:
    """Multi-word keys are found through their longest word, then looked for in the piece: an
    entry activates exactly where its phrase occurs (as a substring, with or without case)."""
    entries = [{"uid": i, "key": [k], "caseSensitive": cs} for i, k in enumerate(keys)]
    lore = lorescan.compile([Lorebook.from_entries("b", entries)], tokenizer="words")
    got = lore.activate([ChatMessage(name="U", mes=text)], settings=Settings(world_info_include_names=False))
    want = [f"b.{i}" for i, k in enumerate(keys) if (k in text if cs else k.lower() in text.lower())]
    assert sorted(got.activated_keys()) == want


@given(st.text(alphabet="ab _1é\u00b2\u0663\t-\u00a0", min_size=1, max_size=8))
def test_phrase_keys_are_words_and_single_spaces(key: str) -> None:
    """The phrase test (one C-level regex) is: words (``str.isalnum``) and spaces, no space at
    either end."""
    from lorescan._keys import _PHRASE
    assert bool(_PHRASE(key)) == (key.replace(" ", "").isalnum() and key[0] != " " and key[-1] != " ")


def test_the_hits_memo_forgets_its_older_half(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``HITS_MEMO_SIZE`` pieces, a bound index forgets the older half of what it remembers
    (the pieces of the chats in progress stay), and a forgotten piece is scanned again alike."""
    from lorescan import _index

    monkeypatch.setattr(_index, "HITS_MEMO_SIZE", 4)
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["lamp"]}, {"uid": 1, "key": ["harbor"]}])],
                            tokenizer="words")
    index = lore._index(MacroEnv(), Settings())
    pieces = [f"the lamp {i}" if i % 2 else f"the harbor {i}" for i in range(6)]
    first = [index.hits(p) for p in pieces]
    assert list(index.hits_memo) == pieces[2:]         # at four, the two oldest went; then two more came
    assert index.hits(pieces[0]) == first[0] and index.hits(pieces[1]) == first[1]
    assert list(index.hits_memo) == [*pieces[4:], pieces[0], pieces[1]]
    assert first[0] != first[1] and first[0] == first[2] and len(first[0]) == 1


def test_recursed_contents_are_remembered_apart_from_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Entry contents (recursion text) have a memo of their own: a stream of new messages, as a
    batch replays, forgets older messages but never pushes out the contents, which recur."""
    from lorescan import _index

    monkeypatch.setattr(_index, "HITS_MEMO_SIZE", 4)
    book = Lorebook.from_entries("b", [
        {"uid": 0, "key": ["lamp"], "content": "the harbor light"},
        {"uid": 1, "key": ["harbor"], "content": "a quiet dock"},
    ])
    lore = lorescan.compile([book], tokenizer="words")
    settings = Settings(world_info_recursive=True, world_info_include_names=False)
    for i in range(12):   # twelve new messages, three times the memo's size
        got = lore.activate([ChatMessage(name="U", mes=f"a lamp, night {i}")], settings=settings)
        assert got.activated_keys() == ["b.0", "b.1"]      # the second through recursion
    index = lore._index(MacroEnv(), settings)
    assert sorted(index.content_memo) == ["a quiet dock", "the harbor light"]
    assert list(index.hits_memo) == [f"a lamp, night {i}" for i in range(8, 12)]   # the newest messages
    remembered = index.content_memo["the harbor light"]
    index.content_memo.clear()
    assert index.content_hits("the harbor light") == remembered and len(remembered) == 1


def test_formatted_messages_are_kept_by_text_and_checked_by_name() -> None:
    """The formatted-message memo is keyed by the message's text alone: a kept string serves a
    later message only when it was made with the same name (a name of another length, or of the
    same length, is formatted anew), and the same object comes back while it is kept."""
    from lorescan._scan import _named

    memo: dict[str, str] = {}
    first = _named(memo, "Alex", "hello there")
    assert first == "Alex: hello there" and _named(memo, "Alex", "hello there") is first
    assert _named(memo, "Al", "hello there") == "Al: hello there"       # shorter name
    assert _named(memo, "Alexandra", "hello there") == "Alexandra: hello there"
    assert _named(memo, "Bart", "hello there") == "Bart: hello there"   # same length, other name
    assert _named(memo, "", "hello there") == ": hello there"
    assert _named(memo, "Alex", "hello there") == "Alex: hello there"
    assert list(memo) == ["hello there"]
    chat = [ChatMessage(name=n, is_user=n == "Alex", mes="the lamp") for n in ("Alex", "Bart", "Alex", "Al")]
    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 0, "key": ["Bart: the"]}])], tokenizer="words")
    deep = Settings(world_info_depth=10)
    assert lore.activate(chat, settings=deep).activated_keys() == ["b.0"]
    assert lore.activate(chat[:1] + chat[2:], settings=deep).activated_keys() == []


_WORDS = ["amber", "birch", "cedar", "delta", "ember", "fjord"]


@hsettings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(st.lists(st.sampled_from(_WORDS), max_size=3).map(" ".join), max_size=12),
       injection=st.lists(st.sampled_from(_WORDS), max_size=2).map(" ".join),
       recursion=st.lists(st.lists(st.sampled_from(_WORDS), max_size=2).map(" ".join), max_size=2),
       depths=st.lists(st.sampled_from([1, 2, 3, 2.5, 5, 8, 40, 1000, 0, -1, float("nan")]), min_size=1, max_size=6),
       scan=st.integers(0, 14))
def test_depth_hits_answer_as_the_joined_set(messages, injection, recursion, depths, scan) -> None:
    """An own-depth entry's needles looked up in place (``depth_hits``) answer ``in`` and
    ``isdisjoint`` exactly as the joined set (``visible_set``), as more messages get scanned too."""
    entries = [{"uid": i, "key": [w], "scanDepth": 3} for i, w in enumerate(_WORDS)]
    lore = lorescan.compile([Lorebook.from_entries("b", entries)], tokenizer="words")
    index = lore._index(MacroEnv(), Settings())
    buf = ScanBuffer(messages, [injection] if injection else [], {}, index, 4, False)
    for text in recursion:
        buf.add_recursion(text, [text])
    every = index.hits(" ".join(_WORDS))
    assert len(set(every)) == len(_WORDS)        # one needle per word
    ids = range(max(every) + 3)                   # and ids no text holds
    buf.ensure_scanned(scan)
    for k, depth in enumerate(depths):
        if k == len(depths) // 2:
            buf.ensure_scanned(1000)        # the rest see every message scanned
        for with_recursion in (True, False):
            joined = buf.visible_set(depth, with_recursion)
            looked = buf.depth_hits(depth, with_recursion)
            assert [n in looked for n in ids] == [n in joined for n in ids]
            for a in ids:
                for b in ids:
                    assert looked.isdisjoint((a, b)) == joined.isdisjoint((a, b))
            assert looked.isdisjoint(()) and looked.isdisjoint(iter(()))
