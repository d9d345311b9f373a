"""The optional C extension (lorescan._native, sources in lorescan/_csrc/) against the Python steps it stands in for."""

from __future__ import annotations

from array import array
from itertools import chain

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lorescan import _index
from lorescan._index import CONSTANT, KEYED, NEVER, PlaceTables, PlainEntry
from lorescan._select import _secondary_hit

native = pytest.importorskip("lorescan._native", reason="the C extension is not built (no C compiler)")

NEEDLES = st.integers(min_value=0, max_value=15)   # few: hits, partial hits and misses alike
IDS = st.lists(NEEDLES, max_size=5).map(tuple)


@st.composite
def records(draw: st.DrawFn) -> PlainEntry:
    kind = draw(st.sampled_from([KEYED, KEYED, KEYED, CONSTANT, NEVER]))
    exclude = draw(st.booleans())
    if kind != KEYED:
        return PlainEntry(kind, exclude_recursion=exclude)
    secondary = draw(st.none() | IDS)
    return PlainEntry(KEYED, draw(IDS), (), secondary, (), draw(st.integers(-1, 4)) if secondary is not None else -1,
                      exclude, draw(st.none() | st.just(4.0)))


def reference(rec: PlainEntry, seen: set[int], excluding: bool) -> bool:
    """The Python gate of a record (pass_candidates' inline cases and plain_gate)."""
    if rec.kind == NEVER or (excluding and rec.exclude_recursion):
        return False
    if rec.kind == CONSTANT:
        return True
    return not seen.isdisjoint(rec.primary) and (rec.secondary is None or
                                                 _secondary_hit(seen, rec.secondary, rec.logic))


@settings(max_examples=300, deadline=None)
@given(st.lists(records(), min_size=1, max_size=40), st.sets(NEEDLES, max_size=30), st.booleans(), st.data())
def test_the_c_gates_agree_with_the_python_gates(recs, seen, excluding, data) -> None:
    size = len(recs)
    tables = PlaceTables(size, list(range(size)), [])
    assert tables.gates is not None
    places = st.sets(st.integers(0, size - 1)) | st.just(set(range(size)))
    noted = data.draw(places)
    for place in noted:
        tables.note(place, recs[place])
    order = sorted(data.draw(places))
    special = data.draw(st.sets(st.integers(0, size - 1), max_size=3))
    entries = [f"entry {i}" for i in range(size)]
    now: list[str] = []
    left = []
    j = 0
    bits = native.bitmap(seen)
    while (j := tables.gates.gate(order, j, bits, special or None, excluding, entries, now)) < len(order):
        left.append(order[j])
        now.append(f"left {order[j]}")
        j += 1
    # the places the C gates take: noted, simple, constant or never, and not special
    taken = {i for i in noted if i not in special and (recs[i].simple or recs[i].kind != KEYED)}
    assert left == [i for i in order if i not in taken]
    assert now == [f"left {i}" if i not in taken else f"entry {i}" for i in order
                   if i not in taken or reference(recs[i], seen, excluding)]


def test_the_engine_leaves_entries_with_a_depth_of_their_own_to_python() -> None:
    """PlaceTables notes simple, constant and never-candidate records; one with a scan depth of its
    own is gated in Python (a bitmap of every needle visible at its depth cost more)."""
    tables = PlaceTables(4, [0, 1, 2, 3], [])
    tables.note(0, PlainEntry(KEYED, (1,)))
    tables.note(1, PlainEntry(KEYED, (1,), depth=4.0))
    tables.note(2, PlainEntry(CONSTANT))
    tables.note(3, PlainEntry(NEVER))
    assert [tables.noted(i) for i in range(4)] == [True, False, True, True]


def test_the_bitmap_holds_exactly_the_ids() -> None:
    assert native.bitmap(set()) == b""
    assert native.bitmap({0}) == b"\x01"
    assert native.bitmap(frozenset({1, 9, 17})) == b"\x02\x02\x02"
    bits = native.bitmap({3, 300})
    assert len(bits) == 38 and [n for n in range(len(bits) * 8) if bits[n >> 3] >> (n & 7) & 1] == [3, 300]
    with pytest.raises(ValueError):
        native.bitmap({-1})
    with pytest.raises(TypeError):
        native.bitmap([1, 2])


def test_a_place_is_noted_once_and_bad_notes_are_refused() -> None:
    gates = native.PlaceGates(3, [0, 1, 2], [])
    gates.note(0, 1, (5,), None, -1, False)
    gates.note(0, 1, (6,), None, -1, False)       # ignored: a place says the same each time
    now: list[str] = []
    assert gates.gate([0], 0, native.bitmap({6}), None, False, ["a", "b", "c"], now) == 1 and now == []
    assert gates.gate([0], 0, native.bitmap({5}), None, False, ["a", "b", "c"], now) == 1 and now == ["a"]
    assert not gates.noted(1)
    with pytest.raises(IndexError):
        gates.note(3, 1, (5,), None, -1, False)
    with pytest.raises(ValueError):
        gates.note(1, 2, (5,), None, 0, False)      # kind 2 needs its secondary needles
    with pytest.raises(ValueError):
        gates.note(1, 1, (-5,), None, -1, False)
    assert not gates.noted(1)
    # a place outside the entries, or not noted, is left to the caller
    assert gates.gate([1, 0], 0, b"", None, False, ["a", "b", "c"], now) == 0
    # packed places (scan_order's) read as the list does
    assert gates.gate(b"", 0, b"", None, False, ["a"], now) == 0
    packed = array("i", [0, 0, 1]).tobytes()
    assert gates.gate(packed, 0, native.bitmap({5}), None, False, ["a", "b", "c"], now) == 2 \
        and now == ["a", "a", "a"]


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 30), st.data())
def test_the_c_order_agrees_with_the_python_order(size, data) -> None:
    """``scan_order``: the places of the added gids and of the gids under the hit needles, less the
    removed gids, ascending (what ``pass_order`` computes with sets)."""
    n_gids = data.draw(st.integers(size, size + 10))
    places = data.draw(st.permutations(list(range(size)) + [-1] * (n_gids - size)))
    lists = data.draw(st.lists(st.lists(st.integers(0, n_gids - 1), max_size=4).map(tuple), max_size=12))
    gids = st.sets(st.integers(0, n_gids - 1), max_size=8)
    adds = tuple(data.draw(st.lists(gids, max_size=4)))
    hits = data.draw(st.sets(st.integers(0, len(lists) - 1), max_size=6)) if lists else set()
    removes = tuple(data.draw(st.lists(gids, max_size=4)))
    gates = native.PlaceGates(size, list(places), list(lists))
    want = set().union(*adds, *(lists[n] for n in hits)) - set().union(*removes)
    expected = sorted(places[g] for g in want if places[g] >= 0)
    for _ in range(2):      # the second time from the kept places of each needle
        got = memoryview(gates.scan_order(adds, hits, removes)).cast("i").tolist()
        assert got == expected


def test_scan_order_refuses_ids_out_of_range() -> None:
    gates = native.PlaceGates(2, [1, 0], [(0,), (5,)])
    assert memoryview(gates.scan_order(({1},), {0}, ())).cast("i").tolist() == [0, 1]
    with pytest.raises(IndexError):
        gates.scan_order(({2},), (), ())
    with pytest.raises(IndexError):
        gates.scan_order((), {1}, ())       # needle 1 lists gid 5, which does not exist
    with pytest.raises(IndexError):
        gates.scan_order((), {2}, ())


def test_python_tables_without_the_extension(monkeypatch) -> None:
    monkeypatch.setattr(_index, "native", None)
    tables = PlaceTables(2, [0, 1], [])
    assert tables.gates is None
    tables.note(1, PlainEntry(KEYED, (4,)))
    tables.note(0, PlainEntry(KEYED, (4,), exclude_recursion=True))     # not kept: the pass checks it
    assert tables.primary == [None, (4,)] and not tables.noted(0) and tables.noted(1)


class _Entry:
    """What ``spend_lines`` reads of an entry."""

    def __init__(self, gid: int, content: str, **fields: object) -> None:
        self.gid, self.key, self.content = gid, f"b.{gid}", content
        self.ignore_budget = self.rolls = self.macros = False
        self.group_names: tuple[str, ...] = ()
        self.group: object = None
        self.__dict__.update(fields)


def _spend(now: list[_Entry], memo: dict[str, int], budget: int, state: list | None = None, skip: bool = True,
           rolls: list[bool] | None = None, failed: set[int] | None = None, cut: set[str] | None = None,
           count: int = 2, contents: dict[int, str] | None = None):
    state = state or [False, 0, 0, 0, None, 0]
    # contents, activated, done, pass_of, group names, group fields
    out = ({} if contents is None else contents, {}, set(), {}, set(), set())
    draws = iter(rolls or [])
    j = native.spend_lines(now, 0, memo, state, budget, 5, skip, True, count, *out, lambda ce: next(draws),
                           lambda ce: ce.content.replace("{{char}}", "C"), set() if failed is None else failed, cut)
    return j, state, out


def test_spend_lines_records_the_common_entries_and_stops_where_python_must_go_on() -> None:
    memo = {"alpha": 3, "beta": 4, " gamma": 1, "C": 2}
    now = [_Entry(0, "alpha", group_names=("g",), group="g"), _Entry(1, "beta"), _Entry(2, "alpha", rolls=True),
           _Entry(3, "beta", rolls=True), _Entry(4, "{{char}}", macros=True), _Entry(5, "delta")]
    failed: set[int] = set()
    j, state, (contents, activated, done, pass_of, names, fields) = _spend(now, memo, 100, rolls=[False, True],
                                                                            failed=failed)
    assert j == 5           # a count not remembered: Python's
    assert failed == {2}    # the failed roll; the passed one activates
    assert state == [False, 3 + 4 + 4, 2, 5 + 13, "C", 13]      # safe, tail tokens, used (base 5 included), last, tokens
    # a content is recorded when macros made it (the others read their own), a pass past the first
    assert contents == {4: "C"} and list(activated) == ["b.0", "b.1", "b.3", "b.4"]
    assert done == {0, 1, 3, 4} and pass_of == {0: 2, 1: 2, 3: 2, 4: 2} and names == {"g"} and fields == {"g"}
    # in the first pass no pass is recorded (readers take 1); a content recorded before is replaced
    _, _, (contents, _, done, pass_of, _, _) = _spend([_Entry(0, "alpha"), _Entry(1, "beta")], memo, 100, count=1,
                                                      contents={1: "stale"})
    assert (contents, done, pass_of) == ({1: "beta"}, {0, 1}, {})
    # left to Python, before any roll: a line starting with a space, a count not remembered, an overflow
    for entry in (_Entry(0, " gamma", rolls=True), _Entry(0, "delta", rolls=True), _Entry(0, "alpha", rolls=True)):
        assert _spend([entry], memo, 8, rolls=[])[0] == 0      # no draw: the roll list is empty
    assert _spend([_Entry(0, "alpha")], memo, 9)[0] == 1                  # 5 + 3 < 9
    assert _spend([_Entry(0, "alpha", ignore_budget=True)], memo, 8)[0] == 1
    # after an overflow, entries that do not ignore the budget are skipped (with skip), or Python's
    assert _spend([_Entry(0, "alpha")], memo, 100, [True, 0, 0, 0, None, 0])[:2] == (1, [True, 0, 0, 0, None, 0])
    assert _spend([_Entry(0, "alpha")], memo, 100, [True, 0, 0, 0, None, 0], skip=False)[0] == 1
    # a tally's budget set gets the keys of the entries skipped after an overflow (not those that
    # ignore the budget, which are recorded)
    cut: set[str] = set()
    j, _, (_, activated, *_) = _spend([_Entry(0, "alpha"), _Entry(1, "beta", ignore_budget=True), _Entry(2, "beta")],
                                      memo, 100, [True, 0, 0, 0, None, 0], cut=cut)
    assert (j, cut, list(activated)) == (3, {"b.0", "b.2"}, ["b.1"])
    # numbers it does not handle: all to the caller
    assert _spend([_Entry(0, "alpha")], memo, 2**70)[0] == 0


# -- the needles found in a piece of scan text (collect_hits) ----------------------------------------

TEXT_CHARS = st.sampled_from(list("ab _-.\nÉé1ß"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(TEXT_CHARS, min_size=1, max_size=4), st.booleans(), st.booleans()), min_size=1,
                max_size=12),
       st.text(TEXT_CHARS, max_size=40), st.sets(st.integers(0, 30), max_size=4), st.integers(0, 3))
def test_the_c_hits_agree_with_the_python_hits(needles, text, found, base) -> None:
    """Needles of either case and word mode (the same text in several modes gives a tuple of ids),
    texts with ASCII and other letters, digits and punctuation at the edges; some ids found already."""
    from lorescan._keys import Needles

    python, c = Needles(base=base), Needles(base=base)
    c.native = native
    for nd in (python, c):
        for text_, cs, word in needles:
            nd.add(text_ if cs else text_.lower(), cs, word)
        nd.build()
    for auto in (python._cs, python._ci):
        if auto is None:
            continue
        want, got = set(found), set(found)
        python._collect(auto, text, want)
        c._collect(c._cs if auto is python._cs else c._ci, text, got)
        assert got == want


def test_collect_hits_refuses_what_is_not_an_automatons_matches() -> None:
    with pytest.raises(TypeError):
        native.collect_hits(iter([(0, "x")]), "a", set(), [False], [1], 0)
    with pytest.raises(IndexError):
        native.collect_hits(iter([(0, 5)]), "a", set(), [False], [1], 0)
    with pytest.raises(TypeError):
        native.collect_hits(iter([(0,)]), "a", set(), [False], [1], 0)
    with pytest.raises(TypeError):
        native.collect_hits([(0, 0)], "a", set(), [False], [1], 0)
    found: set[int] = set()
    native.collect_hits(iter([(0, 0), (2, (1, 0))]), "a b", found, [True, False], [1, 1], 0)
    assert found == {0, 1}
    found = set()
    native.collect_hits(iter([(1, 0)]), "ab", found, [True], [1], 0)       # "b" touches "a": not a whole word
    assert found == set()


# -- the buckets (fill_buckets) ---------------------------------------------------------------------

class _Placed:
    """What ``_Buckets.fill`` reads of an entry (a slots class, as the engine's entries are)."""

    __slots__ = ("gid", "content", "bucket", "depth", "role", "outlet_name")

    def __init__(self, gid: int, content: str, bucket: int | None, depth: int | None, role: int | None,
                 outlet: str) -> None:
        self.gid, self.content, self.bucket, self.depth, self.role, self.outlet_name = \
            gid, content, bucket, depth, role, outlet


#: depths and roles as a book may hold them: ints (exact in JavaScript or not), floats equal to an
#: int, NaN, booleans, strings and unset; only exact ints (and an unset role) are grouped in C
_PLACES = st.none() | st.integers(0, 2) | st.sampled_from([2**53, 2**53 + 1, -(2**53) - 1, 1.0, 0.0, float("nan"),
                                                         True, False, "1", "0"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "a", "b c", "x"]), st.none() | st.integers(-1, 8) | st.just(4),
                          _PLACES, _PLACES, st.sampled_from(["", "o"])),
                max_size=12),
       st.data(), st.booleans())
def test_the_c_buckets_agree_with_the_python_buckets(fields, data, outlets) -> None:
    from lorescan._emit import _Buckets, _depth_groups

    # each text its own (numbered), so that an order that differs shows
    entries = [_Placed(g, f[0] and f"{f[0]}{g}", *f[1:]) for g, f in enumerate(fields)]
    content = {g: data.draw(st.sampled_from(["", "sub", "y"])) for g in data.draw(st.sets(st.integers(0, 12)))}
    content = {g: text and f"{text}{g}" for g, text in content.items()}

    def filled() -> tuple:
        b = _Buckets(outlets)
        b.fill(entries, content)
        groups = [(g.model_dump(), g.model_fields_set, g.__pydantic_extra__) for g in _depth_groups(b.depth)]
        # NaN is unequal to itself: compare the groups' depths by their text
        return (b.before, b.after, b.an_top, b.an_bottom, [(e.model_dump(), e.model_fields_set) for e in b.em],
                repr(groups), b.outlets)

    in_c = filled()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_index, "native", None)
        assert filled() == in_c


def test_the_c_buckets_group_at_depth_entries_as_javascript_compares_them() -> None:
    """Exact ints are grouped in C; an entry the C step cannot key (a float depth, an unset depth)
    goes to Python with every at-depth entry after it, so each group keeps its order."""
    from lorescan._emit import _Buckets

    b = _Buckets(False)
    b.fill([_Placed(0, "a", 4, 2, None, ""), _Placed(1, "b", 4, 2, 0, ""), _Placed(2, "c", 4, 2.0, 0, ""),
            _Placed(3, "d", 4, 2, 0, ""), _Placed(4, "e", 4, None, 1, ""), _Placed(5, "f", 4, None, 1, ""),
            _Placed(6, "g", 4, 2, 1, ""), _Placed(7, "h", 5, None, None, "")], {})
    assert b.depth == [{"depth": 2, "role": 0, "entries": ["d", "c", "b", "a"]},
                       {"depth": None, "role": 1, "entries": ["e"]}, {"depth": None, "role": 1, "entries": ["f"]},
                       {"depth": 2, "role": 1, "entries": ["g"]}]
    assert [e.model_dump() for e in b.em] == [{"position": "before", "content": "h"}]


def test_fill_buckets_refuses_what_it_cannot_fill() -> None:
    from lorescan._model import ExampleEntry

    def fill(entries: list, contents: dict, plain: tuple, rest: list, groups: dict | None = None) -> None:
        native.fill_buckets(entries, contents, plain, [], ExampleEntry, [], {} if groups is None else groups, rest)

    with pytest.raises(TypeError):
        fill([], {}, ([], [], []), [])
    with pytest.raises(TypeError):
        fill([], {}, ([], [], [], ()), [])
    with pytest.raises(TypeError):
        native.fill_buckets([], {}, ([], [], [], []), [], "not a type", [], {}, [])
    with pytest.raises(AttributeError):
        fill([object()], {}, ([], [], [], []), [])
    with pytest.raises(TypeError, match="depth group"):     # a group that is not the engine's dict
        fill([_Placed(0, "a", 4, 1, 0, "")], {}, ([], [], [], []), [], {(1, 0): ["a list"]})
    plain: tuple[list[str], ...] = ([], [], [], [])
    rest: list = []
    entry = _Placed(0, "own", 4, None, None, "")
    outlet = _Placed(3, "o", 7, None, None, "x")
    fill([_Placed(1, "a", 2, None, None, ""), entry, _Placed(2, "", 0, None, None, ""), outlet],
         {0: "given"}, plain, rest)
    assert plain == ([], [], ["a"], []) and rest == [(entry, "given"), (outlet, "o")]


def test_bare_models_are_what_construct_makes() -> None:
    from lorescan._construct import construct
    from lorescan._model import DepthGroup

    d = {"depth": 1, "role": 0, "entries": ["x"]}
    made, = native.bare_models(DepthGroup, [d])
    want = construct(DepthGroup, dict(d))
    assert made == want and made.__dict__ is d and made.model_fields_set == {"depth", "role", "entries"}
    assert made.__pydantic_extra__ is None and made.__pydantic_private__ is None
    assert made.model_copy(update={"role": 2}).role == 2 and made.role == 0
    with pytest.raises(TypeError):
        native.bare_models(DepthGroup, [("depth", 1)])
    with pytest.raises(TypeError):
        native.bare_models("DepthGroup", [])


class _Recursed:
    __slots__ = ("gid", "content", "prevent_recursion")

    def __init__(self, gid: int, content: str, prevent: bool) -> None:
        self.gid, self.content, self.prevent_recursion = gid, content, prevent


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["", "a", "b"]), st.booleans()), max_size=10),
       st.sets(st.integers(0, 10)), st.dictionaries(st.integers(0, 10), st.sampled_from(["", "sub"])))
def test_the_c_recursion_lines_agree_with_the_python_ones(fields, failed, contents) -> None:
    now = [_Recursed(g, *f) for g, f in enumerate(fields)]
    want = [ce for ce in now if ce.gid not in failed and not ce.prevent_recursion]
    entries, lines = native.recursion_lines(now, failed, contents)
    assert entries == want and lines == [contents.get(ce.gid, ce.content) for ce in want]
    with pytest.raises(TypeError):
        native.recursion_lines(now, list(failed), contents)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(["", "a", "b", "c d", " e"]), max_size=8),
       known=st.dictionaries(st.sampled_from(["", "a", "b", "c d", " e"]),
                             st.sampled_from([(), (1,), (1, 2), frozenset({3}), {4, 5}])))
def test_the_c_lines_hits_agree_with_the_python_ones(lines, known) -> None:
    """``add_recursion``'s hits of a recursion text's lines: remembered ones as they are, the others
    found (and remembered) by ``hits``, in order; every id among them in one set."""
    def finder(memo: dict) -> tuple[list, object]:
        calls: list[str] = []

        def hits(line: str) -> tuple[int, ...]:
            calls.append(line)
            memo[line] = got = (len(line) + 10,)
            return got
        return calls, hits

    py_memo, c_memo = dict(known), dict(known)
    py_calls, py_hits = finder(py_memo)
    want = [h if (h := py_memo.get(line)) is not None else py_hits(line) for line in lines]
    c_calls, c_hits = finder(c_memo)
    got, found = native.lines_hits(lines, c_memo, c_hits)
    assert got == want and found == set().union(*want) and c_calls == py_calls and c_memo == py_memo
    assert all(g is known[line] for g, line in zip(got, lines) if line in known)    # the same objects
    with pytest.raises(TypeError):
        native.lines_hits(tuple(lines), c_memo, c_hits)
    with pytest.raises(ZeroDivisionError):
        native.lines_hits(["new line"], {}, lambda line: 1 / 0)


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.sampled_from(["", "a", "b", " c", "\td", "\u00a0e", "中"]), max_size=6),
       counts=st.dictionaries(st.sampled_from(["", "a", "b", " c", "\td", "\u00a0e", "中"]),
                              st.integers(0, 50) | st.just(2**70) | st.just(-1) | st.just(1.5)))
def test_the_c_line_count_sum_agrees_with_the_python_one(lines, counts) -> None:
    """``count_lines``' sum: every line remembered (an int) and each after the first starting with a
    character that is not whitespace, else None (the caller counts the text)."""
    values = [counts.get(line) for line in lines]
    plain = all(type(v) is int and 0 <= v < 2**60 for v in values)
    want = sum(values) if plain and all(line[:1] and not line[:1].isspace() for line in lines[1:]) else None
    assert native.sum_line_counts(lines, counts) == want
    with pytest.raises(TypeError):
        native.sum_line_counts(lines, list(counts))


class _Grouped:
    __slots__ = ("group_names",)

    def __init__(self, names: object) -> None:
        self.group_names = names


class _BadGroups:
    @property
    def group_names(self) -> object:
        raise RuntimeError("unreadable")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([(), ("a",), ("a", "b"), None, [], ["c"], "", "d", 0, 1]), max_size=12))
def test_the_c_group_members_agree_with_the_python_ones(names) -> None:
    """``filter_groups``' first step: the candidates whose ``group_names`` is true, in order."""
    now = [_Grouped(n) for n in names]
    got = native.with_groups(now)
    assert got == [ce for ce in now if ce.group_names] and all(a is b for a, b in zip(got, got))
    with pytest.raises(RuntimeError, match="unreadable"):
        native.with_groups([*now, _BadGroups()])
    with pytest.raises(TypeError):
        native.with_groups(tuple(now))


def test_slot_reads_stay_right_when_many_classes_share_the_attribute_table() -> None:
    """The extension reads slots at offsets it keeps per (class, name) in a table of a few hundred
    places: 600 classes, their slots at different offsets, and classes with the names as plain
    attributes or properties, read in turn (each pair evicted and found again) give every value."""
    classes = []
    for i in range(600):
        pad = tuple(f"pad{k}" for k in range(i % 5))    # the slots at other offsets
        if i % 7 == 0:     # no slots: the names are instance attributes, read the generic way
            cls: type = type(f"Plain{i}", (), {})
        elif i % 11 == 0:  # a property in place of a slot
            cls = type(f"Prop{i}", (), {"__slots__": (*pad, "gid", "_content", "prevent_recursion"),
                                         "content": property(lambda self: self._content.upper())})
        else:
            cls = type(f"Slots{i}", (), {"__slots__": (*pad, "gid", "content", "prevent_recursion")})
        classes.append(cls)
    for _round in range(2):
        now = []
        for g, cls in enumerate(classes):
            ce = cls()
            ce.gid, ce.prevent_recursion = g, g % 3 == 0
            if isinstance(type(ce).__dict__.get("content"), property):
                ce._content = f"c{g}"
            else:
                ce.content = f"c{g}"
            now.append(ce)
        entries, lines = native.recursion_lines(now, {1, 2}, {4: "sub"})
        want = [ce for ce in now if ce.gid not in {1, 2} and not ce.prevent_recursion]
        assert entries == want
        assert lines == ["sub" if ce.gid == 4 else ce.content for ce in want]
        assert "C11" in lines and "c5" in lines     # a property read through it, and a slot


JSON_CHARS = st.characters(codec=None) | st.sampled_from(list('"\\\n\r\t\b\f\x00\x1f\x7f~ aé€😀') + ["\ud800", "\udfff"])


@settings(max_examples=500, deadline=None)
@given(st.text(JSON_CHARS, max_size=60) | st.text(st.sampled_from(list('ab "\\\n\x7f\x01~')), max_size=80))
def test_json_string_gives_the_standard_librarys_ascii_escapes(text) -> None:
    import json

    assert native.json_string(text) == json.encoder.encode_basestring_ascii(text)


def test_json_string_of_a_long_text_and_of_what_is_not_a_string() -> None:
    import json

    text = ("A line with \"quotes\", a back\\slash and a tab\t.\n" * 2000) + "\x7f"
    assert native.json_string(text) == json.encoder.encode_basestring_ascii(text)
    assert native.json_string("x" * 4096) == '"' + "x" * 4096 + '"'
    with pytest.raises(TypeError, match="json_string: a str, not int"):
        native.json_string(5)


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(JSON_CHARS, max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(JSON_CHARS, max_size=6) | st.integers(), inner, max_size=4),
    max_leaves=30)


_PLAIN_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=2**62, max_value=2**200)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(JSON_CHARS, max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple)
    | st.dictionaries(st.text(JSON_CHARS, max_size=6), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(_PLAIN_JSON)
def test_json_dump_gives_json_dumps_compact_ascii_bytes(value) -> None:
    """Plain JSON values (tuples as lists, ints past 64 bits, every float repr, lone surrogates)
    are written exactly as ``json.dumps(separators=(",", ":"), allow_nan=False)`` writes them."""
    import json

    assert native.json_dump(value) == json.dumps(value, separators=(",", ":"), allow_nan=False).encode("ascii")


def test_json_dump_leaves_everything_else_to_jsons_encoder() -> None:
    """What ``json_dump`` does not write exactly as json's encoder would gives None, and the
    service's ``json_bytes`` then gives the standard encoder's bytes (or its error)."""
    import enum
    import json

    from lorescan._service.service import json_bytes

    class Key(str):
        pass

    class Level(enum.IntEnum):
        HIGH = 3

    nested: list[object] = []
    for _ in range(300):
        nested = [nested]
    others = [float("nan"), [1, float("inf")], {1: "int key"}, {Key("k"): 1}, Key("text"), Level.HIGH,
              {"big": 10**5000}, nested, {"a": {1, 2}}, b"bytes"]
    for value in others:
        assert native.json_dump(value) is None, value
    assert json_bytes({"nan": float("nan"), "k": {1: Level.HIGH}}) == b'{"nan":null,"k":{"1":3}}'
    assert json_bytes(nested) == json.dumps(nested, separators=(",", ":")).encode()
    with pytest.raises(TypeError, match="set is not JSON serializable"):
        json_bytes({"a": {1, 2}})
    long_text = "entry text \"quoted\"\n" * 5000 + "\u00e9\U0001f600"
    assert native.json_dump({"before": long_text, "keys": ["a"] * 3000}) == \
        json.dumps({"before": long_text, "keys": ["a"] * 3000}, separators=(",", ":")).encode()


_PART_VALUES = st.none() | st.integers() | st.floats() | st.text(max_size=5) | st.lists(st.text(max_size=3), max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), _PART_VALUES, _PART_VALUES, _PART_VALUES), max_size=6))
def test_model_dicts_dump_a_results_parts_as_dumped_does(parts) -> None:
    """``model_dicts`` gives ``_results._dumped`` of each example or at-depth entry: its fields in
    order, lists copied, infinities and NaN as None, anything else as it is."""
    import math

    from lorescan._construct import construct
    from lorescan._model import DepthGroup, ExampleEntry
    from lorescan._results import _dumped

    models = [construct(DepthGroup, {"depth": a, "role": b, "entries": c}) if group
              else construct(ExampleEntry, {"position": a, "content": b}) for group, a, b, c in parts]
    got = native.model_dicts(models)
    want = [_dumped(m) for m in models]
    assert [list(d.items()) for d in got] == [list(d.items()) for d in want]
    for d, m in zip(got, models):
        assert list(d) == list(m.__dict__)
        for name, value in m.__dict__.items():
            if type(value) is list:
                assert d[name] == value and d[name] is not value       # a copy: the result stays as it is
            elif type(value) is float and not math.isfinite(value):
                assert d[name] is None
            else:
                assert d[name] is value


def test_model_dicts_of_what_is_not_a_list_of_models() -> None:
    with pytest.raises(TypeError, match="model_dicts"):
        native.model_dicts((1, 2))
    with pytest.raises((TypeError, AttributeError)):
        native.model_dicts([5])
    assert native.model_dicts([]) == []


def _escaped_surrogates(text: str) -> str:
    import re

    return re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)


@settings(max_examples=500, deadline=None)
@given(value=_JSON_VALUES, indent=st.sampled_from([-1, 0, 1, 2, 4]))
def test_json_layout_gives_json_dumps_indented_text(value, indent) -> None:
    """The C encoder's compact text laid out by ``json_layout`` is ``json.dumps(indent=...)``'s text
    (compact for a negative indent), lone surrogates escaped as ``dump_json`` escapes them."""
    import json

    compact = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    want = json.dumps(value, ensure_ascii=False, indent=indent) if indent >= 0 else compact
    assert native.json_layout(compact, indent) == _escaped_surrogates(want)


def test_json_layout_of_nested_empties_strings_and_bad_arguments() -> None:
    import json

    doc = {"a": [], "b": {}, "c": [[], {}, [1]], "d": {"e": {}}, "s": 'x,:{}[]"\\\n', "t": "\U0001f600 ok, \u00e9"}
    compact = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    assert native.json_layout(compact, 4) == json.dumps(doc, ensure_ascii=False, indent=4)
    assert native.json_layout(compact, 2) == json.dumps(doc, ensure_ascii=False, indent=2)
    assert native.json_layout(compact, -1) == compact      # compact, no surrogate to escape
    latin = '{"a":[1,{}],"\u00e9":""}'
    assert native.json_layout(latin, -1) is latin          # one byte a character: not even read
    # the only characters beyond Latin-1 are surrogates: the result is an ASCII string, equal to one
    lone = native.json_layout(json.dumps(["\udc80", "\ud800x"], ensure_ascii=False, separators=(",", ":")), -1)
    assert lone == '["\\udc80","\\ud800x"]' and lone.isascii()
    with pytest.raises(TypeError, match="json_layout"):
        native.json_layout(b"[]", 4)
    with pytest.raises(ValueError, match="indent over 1000"):
        native.json_layout("[]", 5000)


def test_shaped_fields_and_model_as_build_directly_makes_them() -> None:
    """``shaped_fields`` copies the defaults and puts the given values in place (a new name last),
    the extra keys' values in a dict of their own, reading the dict by its layout; ``shaped_model``
    sets the four pydantic attributes."""
    from lorescan._model import ChatMessage

    base = {"a": 1, "b": [], "c": None}
    given = {"c": "x", "a": 5, "z": 9, "d": 4}
    fields, extra = native.shaped_fields(base, ("c", "a", None, "d"), given)
    assert list(fields.items()) == [("a", 5), ("b", []), ("c", "x"), ("d", 4)] and extra == {"z": 9}
    assert fields["b"] is base["b"] and base == {"a": 1, "b": [], "c": None}     # base itself unchanged
    with pytest.raises(TypeError, match="an item of layout per key of given"):
        native.shaped_fields(base, ("c", "a", None), given)
    with pytest.raises(TypeError, match="shaped_fields"):
        native.shaped_fields(base, ["c", "a", None, "d"], given)
    fields_set = {"name", "mes"}
    m = native.shaped_model(ChatMessage, {"name": "Ann", "mes": "hi"}, fields_set, {"x": 1}, None)
    assert type(m) is ChatMessage and m.name == "Ann" and m.mes == "hi"
    assert m.__pydantic_fields_set__ is fields_set and m.model_extra == {"x": 1} and m.__pydantic_private__ is None
    with pytest.raises(TypeError, match="shaped_model"):
        native.shaped_model(ChatMessage, [], fields_set, None, None)
    d = {"b": 1, "a": "x", "c": None, 3: [1]}
    assert native.shape_key(d) == (tuple(d), tuple(map(type, d.values()))) == (("b", "a", "c", 3), (int, str, type(None), list))
    assert native.shape_key({}) == ((), ())
    with pytest.raises(TypeError, match="shape_key"):
        native.shape_key([])


_WORDS = st.sampled_from(["dragon", "Dragon", "  the sea ", "", "   ", "{{user}} waves", "\u00a0fire\u3000", "ash\nember"])
_MESSAGES = st.builds(lambda name, mes, user, system: {"name": name, "mes": mes, "is_user": user, "is_system": system},
                      st.sampled_from(["Ann", "Bob", "", "Bo", "Al"]), _WORDS, st.booleans(), st.integers(0, 4).map(lambda n: n == 0))


@settings(max_examples=300, deadline=None)
@given(chat=st.lists(_MESSAGES, max_size=12), include_names=st.booleans(), swipe=st.booleans(),
       first=st.integers(0, 14), depth=st.integers(0, 14), seeded=st.booleans())
def test_the_c_window_agrees_with_the_python_window(chat, include_names, swipe, first, depth, seeded) -> None:
    """``scan_window`` gives the same trimmed messages, hits, formatted messages and memo as
    ``ScanBuffer.ensure_scanned``'s Python steps, scanned in two steps (system messages, a swipe,
    names on and off, the first message's macros, a memo holding another speaker's text)."""
    import lorescan
    from lorescan._macros import MacroEnv
    from lorescan._model import ChatMessage, Settings
    from lorescan._scan import ScanBuffer, ScanMessages

    book = lorescan.Lorebook.from_entries("b", [{"uid": 0, "key": ["dragon", "ann"]}, {"uid": 1, "key": ["fire"]}])
    lore = lorescan.compile([book])
    messages = [ChatMessage.model_validate(m) for m in chat]
    env = MacroEnv(user="Ann", char="Bob")
    memo = {"dragon": "Bo: dragon", "  the sea ": "Ann:   the sea "} if seeded else {}
    got = []
    saved = _index.native
    try:
        for engine in (native, None):
            _index.native = engine
            index = lore._index(env, Settings())
            index.hits_memo.clear()
            scan = ScanMessages(messages, "swipe" if swipe else "normal", include_names, env, dict(memo))
            buffer = ScanBuffer(scan, [], {}, index, depth, False)
            buffer.ensure_scanned(first)
            buffer.ensure_scanned(depth)
            got.append((buffer._trimmed, [sorted(h) for h in buffer._message_hits], scan._cache, scan.named))
    finally:
        _index.native = saved
    assert got[0] == got[1]


def test_scan_window_refuses_what_is_not_a_scan_window() -> None:
    with pytest.raises(TypeError):
        native.scan_window({}, [], 0, [], None, True, len, [], " ", 0, 0, [], (), {})
    with pytest.raises(TypeError):
        native.scan_window([], [], 0, [], None, True, len, [], " ", 0, 0, [], (), {}, len)
    trimmed: list = []
    with pytest.raises(TypeError, match="not a str"):   # what the fallback gives must be a message
        native.scan_window({}, [1], 1, [None, None], None, True, lambda k: 5, trimmed, " ", 0, 1, [], (), {}, len)


class _Odd:
    """A message-like object that is not a ChatMessage: read through getattr."""

    def __init__(self, system: object) -> None:
        self.is_system = system


@settings(max_examples=400, deadline=None)
@given(kinds=st.lists(st.sampled_from(["user", "system", "odd-0", "odd-1", "odd-text", "msg-1", "msg-0"]), max_size=20),
       start=st.integers(0, 22), stop=st.none() | st.integers(-3, 24), only=st.booleans())
def test_the_c_kept_indexes_agree_with_the_python_ones(kinds, start, stop, only) -> None:
    from lorescan import _scan
    from lorescan._model import ChatMessage

    made = {"user": lambda: ChatMessage(name="u", mes="m"), "system": lambda: ChatMessage(mes="s", is_system=True),
            "odd-0": lambda: _Odd(0), "odd-1": lambda: _Odd(1), "odd-text": lambda: _Odd(""),
            # a ChatMessage whose is_system is not a bool: read through getattr, as Python reads it
            "msg-1": lambda: ChatMessage.model_construct(is_system=1), "msg-0": lambda: ChatMessage.model_construct(
                is_system="")}
    chat = [made[k]() for k in kinds]
    saved = _index.native
    try:
        _index.native = None
        want = _scan.kept_indexes(chat, start, stop)
        _index.native = native
        got = _scan.kept_indexes(chat, start, stop)
    finally:
        _index.native = saved
    end = len(chat) if stop is None else min(stop, len(chat))
    assert list(got) == want == [i for i in range(start, end) if not chat[i].is_system]
    # a range exactly when every message read is a plain, non-system ChatMessage (no int made)
    assert isinstance(got, range) == all(kinds[i] == "user" for i in range(start, end))
    if only:    # None when a message of the range is not exactly a ChatMessage
        strict = native.kept_indexes(chat, start, end if stop is not None else len(chat), ChatMessage, True)
        assert strict is None if any(kinds[i].startswith("odd") for i in range(start, end)) else list(strict) == want


def test_known_chat_reads_a_list_of_messages_once() -> None:
    from lorescan._model import ChatMessage
    from lorescan._scan import KnownChat, known_chat

    chat = [ChatMessage(name="u", mes="a"), ChatMessage(mes="s", is_system=True), ChatMessage(name="c", mes="b")]
    got = known_chat(chat)
    assert type(got) is KnownChat and got == chat and got is not chat and list(got.kept) == [0, 2]
    plain = chat[::2]
    assert known_chat(plain).kept == range(0, 2)
    given = [chat[0], {"name": "c", "mes": "b"}]    # a dict: validated by the request, as before
    assert known_chat(given) is given
    assert known_chat(tuple(chat)) == tuple(chat) and known_chat(got) is got


def test_an_evaluation_of_a_list_equals_one_of_a_request_and_the_python_steps() -> None:
    """Lore.activate(list) reads the kept messages in C once (known_chat); a request built by hand and
    the Python steps read them in ScanMessages: the same results, system messages anywhere."""
    from lorescan import ActivationRequest, ChatMessage, Lorebook, Settings
    from lorescan import compile as compile_lore

    lore = compile_lore([Lorebook.from_entries("w", [
        {"uid": 0, "key": ["dragon"], "content": "Dragons fly."},
        {"uid": 1, "key": ["hidden"], "content": "Only in a system message."},
        {"uid": 2, "key": ["last"], "content": "The newest kept message.", "scanDepth": 1}])], tokenizer="words")
    chat = [ChatMessage(name="u", mes="a dragon"), ChatMessage(name="s", mes="hidden", is_system=True),
            ChatMessage(name="c", mes="last one"), ChatMessage(name="s", mes="dragon", is_system=True)]
    settings = Settings(world_info_depth=2)
    results = [lore.activate(chat, settings=settings).activated_keys(),
               lore.activate(ActivationRequest(chat=chat, settings=settings)).activated_keys()]
    saved = _index.native
    try:
        _index.native = None
        results.append(lore.activate(chat, settings=settings).activated_keys())
    finally:
        _index.native = saved
    assert results == [["w.0", "w.2"]] * 3


def test_kept_indexes_raise_as_python_does() -> None:
    with pytest.raises(AttributeError):
        native.kept_indexes([object()], 0, 1, type)
    with pytest.raises(ValueError):
        native.kept_indexes([], -1, 1, type)
    with pytest.raises(TypeError):
        native.kept_indexes((), 0, 1, type)


# -- chat messages from plain dicts (messages.c) -------------------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\ud800", "\udfff", "é", "😀"]), max_size=6)
_VALUES = st.one_of(st.text(max_size=4), st.booleans(), st.integers(-2, 2), st.none(), st.floats(allow_nan=False),
                    st.lists(st.text(max_size=2), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
_MESSAGE_KEYS = st.sampled_from(["name", "is_user", "is_system", "mes", "swipes", "send_date", "extra"]) | _TEXT


def _message_dicts() -> st.SearchStrategy[dict]:
    plain = st.fixed_dictionaries({}, optional={"name": st.text(max_size=4), "is_user": st.booleans(),
                                                "is_system": st.booleans(), "mes": st.text(max_size=8),
                                                "swipes": st.lists(st.text(max_size=3), max_size=2)})
    return plain | st.dictionaries(_MESSAGE_KEYS, _VALUES, max_size=5)


def _state(m: object) -> tuple:
    return (type(m), m.__dict__, list(m.__dict__), m.__pydantic_extra__, list(m.__pydantic_extra__ or {}),
            m.__pydantic_fields_set__, m.__pydantic_private__)


@settings(max_examples=400, deadline=None)
@given(st.lists(_message_dicts(), max_size=6))
def test_messages_from_plain_dicts_are_what_validation_gives(dicts) -> None:
    """Made in C or validated by pydantic, a message has the same fields, field order, extra values
    (the same objects), set fields and private state; a dict pydantic refuses raises its error."""
    from pydantic import ValidationError

    from lorescan._construct import validator
    from lorescan._model import ChatMessage
    from lorescan._request import chat_messages

    validate = validator(ChatMessage)
    try:
        want = [validate(d) for d in dicts]
    except ValidationError as exc:
        with pytest.raises(ValidationError) as got:
            chat_messages(dicts)
        assert got.value.errors() == exc.errors()
        return
    got = chat_messages(dicts)
    assert [_state(m) for m in got] == [_state(m) for m in want]
    for g, w in zip(got, want):
        assert all(a is b for a, b in zip(g.__pydantic_extra__.values(), w.__pydantic_extra__.values()))


def test_messages_that_are_not_plain_go_to_the_validator() -> None:
    """Only exact types are taken as they are: an int for a bool, a str subclass, a dict subclass,
    a key with a lone surrogate and a model object each take pydantic's path (coerced, copied,
    refused, or kept)."""
    from pydantic import ValidationError

    from lorescan._model import ChatMessage
    from lorescan._request import chat_messages

    class Text(str):
        pass

    class Message(dict):
        pass

    kept = ChatMessage(mes="kept")
    got = chat_messages([{"is_user": 1}, {"mes": Text("t")}, Message(mes="m"), kept])
    assert got[0].is_user is True
    assert type(got[1].mes) is str and got[1].mes == "t"
    assert type(got[2]) is ChatMessage and got[2].mes == "m"
    assert got[3] is kept
    with pytest.raises(ValidationError, match="unicode"):
        chat_messages([{"mes": "x", "a\ud800": 1}])
    assert chat_messages([{"mes": "a\ud800"}])[0].mes == "a\ud800"     # a value may hold one


def test_a_message_class_with_more_than_plain_fields_has_no_plain_plan() -> None:
    """plain_plan refuses a class whose validation may change a value (here a constraint, an
    alias, a validator), so the extension never makes it directly."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    from lorescan._construct import plain_plan
    from lorescan._model import ChatMessage

    class Short(BaseModel):
        model_config = ConfigDict(extra="allow")
        mes: str = Field("", max_length=3)

    class Aliased(BaseModel):
        model_config = ConfigDict(extra="allow")
        mes: str = Field("", alias="text")

    class Checked(BaseModel):
        model_config = ConfigDict(extra="allow")
        mes: str = ""

        @field_validator("mes")
        @classmethod
        def _upper(cls, v: str) -> str:
            return v.upper()

    class Stripped(BaseModel):
        model_config = ConfigDict(extra="allow", str_strip_whitespace=True)
        mes: str = ""

    assert [plain_plan(c) for c in (Short, Aliased, Checked, Stripped)] == [None, None, None, None]
    assert plain_plan(ChatMessage) == (("name", "is_user", "is_system", "mes"), b"sbbs", ("", False, False, ""))


# -- each needle's entries (key_lists, index_keys) -----------------------------------------------------------

_RAW_KEYS = st.sampled_from(["sword", "Sword", "old oak", "/dr[a-z]gon/i", "/x|y/", "/^\\s*$/", " ", "", "\x01",
                             "{{user}}", "<BOT>'s", "ash", "Ash tree", "/ash/", "k" * 1_200])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(_RAW_KEYS, max_size=4), st.lists(_RAW_KEYS, max_size=3),
                          st.none() | st.booleans(), st.none() | st.booleans()), min_size=1, max_size=12))
def test_the_c_listing_agrees_with_the_python_listing(drawn) -> None:
    """Every needle's entries and the entries searched on every pass, built in C and in Python,
    with entries of their own case and word modes (a group per mode)."""
    from lorescan._compile import compile_books
    from lorescan._model import Lorebook

    book = Lorebook.from_entries("b", [{"uid": i, "key": k, "keysecondary": s, "caseSensitive": cs,
                                        "matchWholeWords": ww, "content": "c"}
                                       for i, (k, s, cs, ww) in enumerate(drawn)])
    entries = compile_books([book])[0][1]

    def listed() -> tuple:
        index = _index.KeyIndex(entries, False, True)
        def item(k: object) -> object:     # a Key by what it is (Keys compare by identity)
            return k if type(k) is int else (k.kind, k.raw, k.text, k.nids)  # type: ignore[attr-defined]

        return (index.needles.entries, index.always,
                [(m[0].gid, [*map(item, m[1])], [*map(item, m[2])]) for m in index.macro],
                index.primary.skip, index.secondary.skip, index.card_macros)

    in_c = listed()
    with pytest.MonkeyPatch.context() as m:
        m.setattr(_index, "native", None)
        assert listed() == in_c


def test_key_lists_reads_each_entrys_keys_and_every_key_in_the_key_indexs_order() -> None:
    """``key_lists``: the key lists and gids as read, and every key (primary ones first, so the set
    is the one KeyIndex builds); None for an unhashable key."""

    class Rec:
        __slots__ = ("keys", "keys_secondary", "gid")

        def __init__(self, gid: int, keys: object, secondary: object) -> None:
            self.gid, self.keys, self.keys_secondary = gid, keys, secondary

    recs = [Rec(0, ["a", "b"], None), Rec(1, [], ["c", "a"]), Rec(2, None, ("d",)), Rec(3, ["e"], [])]
    klists, slists, gids, distinct = native.key_lists(Rec, recs)
    assert klists == [["a", "b"], [], None, ["e"]] and slists == [None, ["c", "a"], ("d",), []]
    assert klists[0] is recs[0].keys and gids == [0, 1, 2, 3]
    expected = set(chain.from_iterable(filter(None, klists)))
    expected.update(chain.from_iterable(filter(None, slists)))
    assert list(distinct) == list(expected) and distinct == {"a", "b", "c", "d", "e"}
    assert native.key_lists(Rec, [*recs, Rec(4, [["unhashable"]], None)]) is None
    assert native.key_lists(Rec, [Rec(4, ["x"], [{}])]) is None
    with pytest.raises(TypeError, match="not a slot"):
        native.key_lists(int, recs)
    with pytest.raises(TypeError, match="key_lists"):
        native.key_lists(Rec, tuple(recs))


def test_index_keys_lists_by_lookup_and_leaves_odd_keys_and_macros_to_the_caller() -> None:
    """``index_keys`` lists each entry's looked-up keys; keys the cache lacks (or a value that is not
    a list) go to ``prepare``; a macro item is not listed and names its entry's place; empty lists and None
    are skipped."""
    from lorescan._keys import MACRO, SKIP, Key

    cache = {"a": 0, "b": 1, "m": MACRO, "r": Key(3, "/r/", nids=(2,))}
    asked: list[object] = []

    def prepare(keys: object) -> tuple:
        asked.append(keys)
        return (1,)

    lists: list[list[int]] = [[], [], []]
    always: list[int] = []
    got = native.index_keys([["a", "b"], None, [], ["m", "a"], ["a", "zz"], ("b",), ["r", "b"], [["x"]]],
                            [10, 11, 12, 13, 14, 15, 16, 17], cache, lists, always, SKIP, MACRO, prepare)
    assert got == [3]
    assert asked == [["a", "zz"], ("b",), [["x"]]]
    assert lists == [[10, 13], [10, 14, 15, 16, 17], [16]] and always == []
    with pytest.raises(TypeError, match="index_keys"):
        native.index_keys([["a"]], [], cache, lists, always, SKIP, MACRO, prepare)
    with pytest.raises(IndexError):
        native.index_keys([["a"]], [1], {"a": 9}, lists, always, SKIP, MACRO, prepare)
    with pytest.raises(TypeError, match="must be a list"):
        native.index_keys([["a"]], [1], {"a": 0}, [()], always, SKIP, MACRO, prepare)
    # a key with no needle is searched on every pass (its entry once in a row), unless it is SKIP
    slow = {"s": Key(3, "/x/"), "t": Key(3, "/y/"), "n": Key(SKIP, "")}
    always = []
    native.index_keys([["s", "t"], ["n"], ["t"], ["s"]], [7, 8, 9, 9], slow, [[]], always, SKIP, MACRO, prepare)
    assert always == [7, 9]


_ODD = st.sampled_from([None, True, False, 0, 1, -3, 2**53, 2**53 + 1, -(2**60), 1.5, 0.0, float("nan"), float("inf"),
                        "", "0", "2", "x"])
_ENTRY_FIELDS = st.fixed_dictionaries({
    "uid": st.integers(0, 40),
    "content": st.sampled_from(["", "plain text", "@@activate\nhello", "@@dont_activate", "@@@x\n@@activate\nbody",
                                "@", "@@", None]),
    "order": _ODD, "constant": _ODD, "delayUntilRecursion": _ODD, "scanDepth": _ODD, "delay": _ODD,
    "key": st.sampled_from([["a"], [], None]),
    "keysecondary": st.sampled_from([["b"], [], None]),
    "caseSensitive": st.sampled_from([None, True, False, 1]),
    "matchWholeWords": st.sampled_from([None, True, False, "yes"]),
})


def _same(a: object, b: object) -> bool:
    """One value, or equal values of one type (NaN included)."""
    return a is b or (type(a) is type(b) and (a == b or repr(a) == repr(b)))


@settings(max_examples=200, deadline=None)
@given(fields=st.lists(_ENTRY_FIELDS, max_size=12), start_book=st.booleans())
def test_compiled_entries_and_plan_facts_agree_with_the_python_steps(fields, start_book) -> None:
    """Books compiled with ``compiled_entries`` and planned with ``plan_facts`` equal the same done by
    ``CompiledEntry.__init__`` and ``Plan``'s Python loop, slot by slot (the usual entries are made in
    C, the rest by the class; NaN, huge and odd values included)."""
    from unittest import mock

    from lorescan import _construct, _engine
    from lorescan._compile import CompiledEntry, compile_books
    from lorescan._model import Lorebook
    from lorescan._plan import plan_books

    books = [Lorebook.from_entries("first", [{**f, "uid": i} for i, f in enumerate(fields)])]
    if start_book:
        books.insert(0, Lorebook.from_entries("zero", [{"uid": 0, "content": "z", "order": 7}]))
    mode = _engine.mode_for("1.18", True)

    def build() -> tuple[list, object]:
        compiled = compile_books(books)
        total = sum(len(es) for _, es in compiled)
        return compiled, plan_books(compiled, total, mode, 1, True, None, None)

    c_books, c_plan = build()
    with mock.patch.object(_construct, "native", None):
        p_books, p_plan = build()
    for (_, c_entries), (_, p_entries) in zip(c_books, p_books, strict=True):
        for c, p in zip(c_entries, p_entries, strict=True):
            assert type(c) is type(p)
            for name in CompiledEntry.__slots__:
                if name != "_hash":
                    assert _same(getattr(c, name), getattr(p, name)), name
    assert c_plan.pos == p_plan.pos and c_plan.constants == p_plan.constants
    assert c_plan.levels == p_plan.levels and _same(c_plan.max_scan_depth, p_plan.max_scan_depth)
    assert [ce.gid for ce in c_plan.delayed] == [ce.gid for ce in p_plan.delayed]
    assert c_plan.nan_orders is p_plan.nan_orders


def test_compiled_entries_and_plan_facts_on_known_entries() -> None:
    """The usual entry is made in C with the slots set; an entry with a decorator, a float order or
    a true delayUntilRecursion goes to ``make``; the plan's facts are read off the slots."""
    from lorescan import _js
    from lorescan._compile import CompiledEntry, _UnfilledEntry
    from lorescan._model import Entry

    entries = [Entry.from_json(d) for d in (
        {"uid": 0, "content": "text", "order": 5, "constant": True, "key": ["a"], "scanDepth": 3},
        {"uid": 1, "content": "@@activate\nx", "order": 2},
        {"uid": 2, "content": "y", "order": 1.5, "delay": 2},
        {"uid": 3, "content": "z", "order": 1, "delayUntilRecursion": 2, "scanDepth": 7.5},
    )]
    made: list[int] = []

    def make(gid: int, book: str, entry: Entry) -> CompiledEntry:
        made.append(gid)
        return _UnfilledEntry(gid, book, entry)

    out = native.compiled_entries(_UnfilledEntry, 10, "b", entries, [], make)
    assert made == [11, 12, 13] and [ce.gid for ce in out] == [10, 11, 12, 13]
    first = out[0]
    assert (first.content, first.order_num, first.constant, first.keys, first.decorators, first.dur_level) == \
        ("text", 5, True, ["a"], [], 0.0)
    assert first.delay_until_recursion is False and first.entry is entries[0] and first.book == "b"
    assert out[1].decorators == ["@@activate"] and out[1].content == "x"
    pos, constants, levels, delayed = [-1] * 14, [], {}, []
    depth, nan = native.plan_facts(CompiledEntry, out, pos, constants, levels, delayed, _js.truthy, _js.to_number)
    assert pos[10:] == [0, 1, 2, 3] and pos[:10] == [-1] * 10
    assert constants == [10, 11] and levels == {2: None} and [ce.gid for ce in delayed] == [12]
    assert (depth, nan) == (7.5, False)
    with pytest.raises(IndexError, match="a gid outside"):
        native.plan_facts(CompiledEntry, out, [-1] * 5, [], {}, [], _js.truthy, _js.to_number)
    with pytest.raises(TypeError, match="compiled_entries"):
        native.compiled_entries(_UnfilledEntry, 0, "b", tuple(entries), [], make)
    with pytest.raises(TypeError, match="not a slot"):
        native.compiled_entries(Entry, 0, "b", entries, [], make)


def _corpus_books() -> list[object]:
    from .test_formats_corpora import CORPORA, EXPECTED

    if not CORPORA.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason="../shared/corpora is not there"))]
    return [pytest.param(path, id=path) for path, (_, entries, _) in EXPECTED.items() if entries]


@pytest.mark.parametrize("path", _corpus_books())
def test_every_corpus_book_compiles_alike_with_and_without_the_c_steps(path) -> None:
    """Each real lorebook or card book of the corpora, compiled with the C steps and with the Python
    ones: the same compiled entries slot by slot, the same plan, and the same key index (needles'
    entries, entries searched on every pass, macro entries), under SillyTavern's settings and with
    case sensitivity and whole words on."""
    from unittest import mock

    from lorescan import _construct, _engine, load
    from lorescan._compile import CompiledEntry

    from .test_formats_corpora import CORPORA

    books = load(CORPORA / path).books

    def build() -> tuple:
        lore = _engine.Lore(books)
        plan = lore._plan(1, True, None, None)
        indexes = [_index.KeyIndex(lore._all, cs, ww) for cs, ww in ((False, False), (True, True))]
        slots = [tuple(repr(getattr(ce, name)) for name in CompiledEntry.__slots__ if name not in ("_hash", "entry"))
                 for ce in lore._all]
        return (slots, plan.pos, plan.constants, plan.levels, plan.max_scan_depth, plan.nan_orders,
                [ce.gid for ce in plan.delayed],
                [(ix.needles.entries, ix.always, [m[0].gid for m in ix.macro], ix.card_macros) for ix in indexes])

    in_c = build()
    with mock.patch.object(_construct, "native", None), mock.patch.object(_index, "native", None):
        in_python = build()
    assert in_c == in_python
    assert len(in_c[0]) == sum(len(b.entries) for b in books) > 0


class _Ordered:
    __slots__ = ("order_num",)

    def __init__(self, order: object) -> None:
        self.order_num = order


_ORDERS = st.one_of(st.integers(-3, 3), st.sampled_from([2**53, -(2**53), 0.5, -0.0, 0.0, 1.0, float("inf")]),
                    st.floats(allow_nan=False, min_value=-4, max_value=4))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ORDERS, max_size=40))
def test_entries_come_by_order_as_sorted_gives_them(orders: list[object]) -> None:
    entries = [_Ordered(o) for o in orders]
    got = native.by_order(entries)
    want = sorted(entries, key=lambda e: e.order_num, reverse=True)   # stable: equal orders keep their order
    assert got is not None and [id(e) for e in got] == [id(e) for e in want]


def test_by_order_leaves_what_a_double_cannot_compare_to_the_caller() -> None:
    # NaN, an int a double does not hold exactly, a bool and a string: the caller's sort
    for odd in (float("nan"), 2**53 + 1, True, "1"):
        assert native.by_order([_Ordered(1), _Ordered(odd)]) is None
    assert native.by_order([]) == []
    with pytest.raises(TypeError):
        native.by_order((_Ordered(1),))


_PROBABILITIES = st.one_of(st.none(), st.integers(-5, 105), st.floats(allow_nan=True, allow_infinity=True),
                           st.sampled_from([10**400, -(10**400), True, "50", 50.0]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_PROBABILITIES, st.booleans()), max_size=8),
       st.lists(st.sampled_from([0, 0.0, 0.25, 0.5, 0.999, 1, 1.0, "0.3"]), min_size=8, max_size=8))
def test_the_rolls_made_in_c_are_the_rolls_the_engine_makes(entries, randoms) -> None:
    """``spend_lines`` given (roll, sticky, random, draws) rolls as ``_Evaluation._roll`` does:
    a sticky entry passes without a draw, any other draws ``float(random()) * 100`` and passes at
    most its probability (None: 0; an int past a double: an infinity); a probability of another
    type goes to ``roll``. The same draws in the same order either way."""
    from lorescan._js import to_number

    now = [_Entry(i, "alpha", rolls=True, probability=p) for i, (p, _) in enumerate(entries)]
    sticky = {i for i, (_, s) in enumerate(entries) if s}

    def reference():
        drawn = iter(randoms)
        failed, count = set(), 0
        for ce in now:
            if ce.gid in sticky:
                continue
            count += 1
            roll = float(next(drawn)) * 100
            if not roll <= (to_number(ce.probability) if ce.probability is not None else 0.0):
                failed.add(ce.gid)
        return failed, count

    drawn = iter(randoms)
    asked: list[int] = []

    def python_roll(ce) -> bool:      # the fallback: the same rule, noted
        asked.append(ce.gid)
        counted[0] += 1
        return float(next(drawn)) * 100 <= to_number(ce.probability)

    counted, draws, failed = [0], [0], set()
    state = [False, 0, 0, 0, None, 0]
    native.spend_lines(now, 0, {"alpha": 1}, state, 10**6, 0, True, True, 1, {}, {}, set(), {}, set(), set(),
                       (python_roll, sticky, lambda: next(drawn), draws), lambda ce: ce.content, failed, None)
    assert (failed, draws[0] + counted[0]) == reference()
    assert asked == [ce.gid for ce in now if ce.gid not in sticky and type(ce.probability) not in (int, float)
                     and ce.probability is not None]


_ROLE_ITEMS = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool", 3]),
                           "content": st.sampled_from(["hi", "there", "", None, ["parts"]])},
                          optional={"name": st.sampled_from([None, "Ann", "", 5]), "mes": st.just("x")}),
    st.sampled_from(["not a message", 7]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_ROLE_ITEMS, max_size=10), st.lists(st.integers(0, 9), max_size=6), st.integers(0, 3))
def test_the_c_role_messages_take_what_the_memo_holds_in_order(items, remembered, start) -> None:
    """``role_messages`` appends, from ``start``, the items ``_messages`` finds in its memo under
    (role, content, name, user, char), and stops at the first it would not."""
    memo = {}
    for k in remembered:
        item = items[k] if k < len(items) else None
        if isinstance(item, dict) and isinstance(item.get("role"), str) and isinstance(item.get("content"), str):
            memo[(item["role"], item["content"], item.get("name"), "U", "C")] = ("read", k)
    out: list[object] = []
    stop = native.role_messages(items, start, memo, "U", "C", out)
    expected: list[object] = []
    i = start
    for i in range(start, len(items) + 1):
        if i == len(items):
            break
        item = items[i]
        if not (type(item) is dict and "role" in item and "mes" not in item and item["role"] in ("user", "assistant")
                and type(item.get("content")) is str and (item.get("name") is None or type(item.get("name")) is str)):
            break
        got = memo.get((item["role"], item["content"], item.get("name"), "U", "C"))
        if got is None:
            break
        expected.append(got)
    assert (stop, out) == (max(i, start), expected)


def test_by_order_holds_the_entries_while_their_orders_run_code() -> None:
    entries: list[object] = []

    class Clearing:
        @property
        def order_num(self) -> int:
            entries.clear()         # the list shrinks under the loop
            return 1

    first, second = Clearing(), _Ordered(5)
    entries += [second, first, _Ordered(7)]
    got = native.by_order(entries)
    assert got is not None and [id(e) for e in got] == [id(second), id(first)]   # what was read, by order
