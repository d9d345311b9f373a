"""The public API: exported names are pinned, and the documented flow works end to end."""

from __future__ import annotations

import json
import random

import pytest
from pydantic import ValidationError

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._construct import BULK

from .gc_helpers import collector_passes

EXPORTED = [
    "Activation", "ActivationRequest", "ActivationResult", "Character", "CharacterFilter", "ChatMessage",
    "DepthGroup", "DepthPrompt", "Detector", "Entry", "ExampleEntry", "ForcedActivation", "Format", "FormatError",
    "Generation", "Lore", "Lorebook", "LorescanError", "Mode", "Position", "RandomSource", "ReadContext",
    "Reading", "Role", "ScenarioError", "SelectiveLogic", "Session", "Settings", "TimedEffect", "TimedState",
    "TokenCounter", "__version__", "activate", "compile", "get_counter", "load",
    "mode_for", "replay", "run_scenario",
]


def test_exported_names_are_pinned() -> None:
    assert sorted(lorescan.__all__) == sorted(EXPORTED)
    for name in EXPORTED:
        assert hasattr(lorescan, name), name


def test_core_imports_without_cli_dependencies() -> None:
    import subprocess
    import sys

    code = ("import sys; import lorescan, lorescan._engine, lorescan._replay, lorescan._explain; "
            "print(sorted(m for m in sys.modules if m.startswith(('rich', 'lorescan._cli', 'yaml'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_compile_once_activate_many_and_carry_timed_state() -> None:
    book = Lorebook.from_entries("world", [
        {"uid": 0, "key": ["dragon"], "content": "Dragons breathe fire.", "sticky": 3},
        {"uid": 1, "constant": True, "content": "{{char}} guards {{user}}.", "position": 1},
    ])
    lore = lorescan.compile([book], tokenizer="chars4")
    chat = [ChatMessage(name="Bob", is_user=True, mes="Tell me about the dragon.")]
    first = lorescan.activate(lore, chat=chat, user_name="Bob", char_name="Alice", rng=random.Random(1))
    assert first.activated_keys() == ["world.0", "world.1"]
    assert first.before == "Dragons breathe fire." and first.after == "Alice guards Bob."
    assert first.timed.to_json() == {"sticky": {"world.0": {"start": 1, "end": 4, "protected": False}},
                                     "cooldown": {}}
    chat += [ChatMessage(name="Alice", mes="..."), ChatMessage(name="Bob", is_user=True, mes="and then?")]
    second = lore.activate(chat, user_name="Bob", char_name="Alice", timed=first.timed)
    assert second.activated_keys() == ["world.0", "world.1"]       # sticky keeps entry 0 in
    third = lore.activate(chat + [ChatMessage(name="Alice", mes="x"), ChatMessage(name="Bob", mes="y")],
                          user_name="Bob", char_name="Alice", timed=second.timed)
    assert third.activated_keys() == ["world.1"]


def test_default_tokenizer_is_cl100k_and_budget_counts_real_tokens() -> None:
    book = Lorebook.from_entries("w", [{"uid": 0, "constant": True, "content": "word " * 30}])
    lore = lorescan.compile([book])
    assert lore.counter.name == "cl100k"
    r = lore.activate([], settings=Settings(max_context=100))     # budget 25 tokens < 31
    assert r.activated_keys() == [] and r.overflowed and r.budget == 25
    r = lore.activate([], settings=Settings(max_context=200))     # budget 50 tokens
    assert r.activated_keys() == ["w.0"] and r.budget_used == 31


def test_trace_explains_each_gate() -> None:
    book = Lorebook.from_entries("w", [
        {"uid": 0, "key": ["elf"], "content": "Elves."},
        {"uid": 1, "key": ["orc"], "content": "Orcs.", "disable": True},
    ])
    lore = lorescan.compile([book], tokenizer="words")
    r = lore.activate([ChatMessage(name="U", mes="an elf and an orc")], trace=True)
    events = {(ev["event"], ev.get("entry")): ev for ev in r.trace}
    assert events[("candidate", "w.0")]["why"] == "primary key 'elf' matched"
    assert events[("skipped", "w.1")]["why"] == "disabled"
    assert lore.activate([ChatMessage(name="U", mes="elf")]).trace is None


def test_compile_cache_reuses_books_loaded_from_the_same_content(tmp_path) -> None:
    import json

    from lorescan._load import load

    path = tmp_path / "w.json"
    path.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": ["a"], "content": "A"}}}))
    first = lorescan.compile(load(str(path)).books, cache=True)
    assert lorescan.compile(load(str(path)).books, cache=True) is first
    assert lorescan.compile(load(str(path)).books) is not first            # no cache asked for
    path.write_text(json.dumps({"entries": {"0": {"uid": 0, "key": ["b"], "content": "B"}}}))
    second = lorescan.compile(load(str(path)).books, cache=True)
    assert second is not first
    assert second.activate([ChatMessage(name="U", mes="b")]).activated_keys() == ["w.0"]
    built = Lorebook.from_entries("w", [{"uid": 0, "key": ["a"]}])
    assert built.content_hash is None and lorescan.compile([built], cache=True) is not first
    import hashlib

    digest = hashlib.blake2b(path.read_bytes(), digest_size=32).hexdigest()
    assert load(str(path)).books[0].content_hash == f"{digest}:0:0"     # the file's hash, book 0, no v3 decorators


def test_emitted_activations_equal_pydantic_construction() -> None:
    """emit builds Activation without model_construct's field loop; the objects must be the same."""
    from lorescan._model import Activation

    lore = lorescan.compile([Lorebook.from_entries("b", [{"uid": 7, "key": ["a"], "content": "text", "position": 4},
                                                         {"uid": "x", "key": ["a"], "content": ""}])])
    fast = lore.activate([ChatMessage(name="U", mes="a")]).activated
    assert [a.key for a in fast] == ["b.7", "b.x"]
    for a in fast:
        slow = Activation.model_construct(**a.__dict__)
        assert a == slow
        assert a.model_fields_set == slow.model_fields_set == set(Activation.model_fields)
        assert a.model_dump() == slow.model_dump()
        assert a.__pydantic_extra__ is slow.__pydantic_extra__
        assert a.__pydantic_private__ is slow.__pydantic_private__
    assert fast[0].model_dump() == {"book": "b", "uid": 7, "key": "b.7", "position": 4, "order": 100,
                                    "content": "text", "pass_index": 1}
    # immutable (evaluations share them), and one fields set is shared by all of them
    with pytest.raises(ValidationError):
        fast[0].content = "changed"
    copied = fast[0].model_copy(update={"content": "copied"})
    assert copied.content == "copied" and fast[0].content == "text" and fast[1].content == ""
    assert copied.model_fields_set is not fast[0].model_fields_set
    assert fast[1].model_fields_set == set(Activation.model_fields)
    assert fast[1].model_dump(exclude_unset=True) == fast[1].model_dump()


@pytest.mark.parametrize("in_c", [True, False], ids=["c-records", "python-records"])
def test_evaluations_share_unchanged_activations(monkeypatch, in_c: bool) -> None:
    """An entry activated again with the same content in the same pass gives the same (immutable)
    activation object; a changed content or pass gives a new one; a caller's own object (a forced
    activation with fields of its own) is never shared."""
    from lorescan import _index

    if in_c and _index.native is None:
        pytest.skip("the C extension is not built")
    if not in_c:
        monkeypatch.setattr(_index, "native", None)
    lore = lorescan.compile([Lorebook.from_entries("b", [
        {"uid": 0, "key": ["a"], "content": "A mentions b"}, {"uid": 1, "key": ["b"], "content": "{{user}}"}])])
    s = Settings(world_info_recursive=True)

    def run(mes: str, user: str = "U") -> list:
        return lore.activate([ChatMessage(name="U", mes=mes)], settings=s, user_name=user).activated

    first, again = run("a"), run("a")
    assert [x.key for x in first] == ["b.0", "b.1"] and [x.pass_index for x in first] == [1, 2]
    assert again[0] is first[0] and again[1] is first[1]
    direct = run("a b")                       # b.1 now in the first pass
    assert direct[0] is first[0] and direct[1] is not first[1] and direct[1].pass_index == 1
    other = run("a", user="V")                # another content for b.1
    assert other[1].content == "V" and other[1] is not first[1] and first[1].content == "U"
    direct_other = run("a b", user="V")       # another content for b.1 in the first pass
    assert direct_other[1].content == "V" and direct_other[1].pass_index == 1 and direct[1].content == "U"
    assert run("a b")[1] is not direct[1] and run("a b")[1].content == "U"     # kept again, the new one
    forced = [{"world": "b", "uid": 0, "content": "forced, and b"}]      # a field of its own
    twice = [lore.activate([ChatMessage(name="U", mes="z")], settings=s, user_name="U",
                           force_activate=forced).activated for _ in range(2)]
    assert [x.key for x in twice[0]] == [x.key for x in twice[1]] == ["b.0", "b.1"]
    assert twice[0][0].content == "forced, and b"
    assert twice[0][0] is not twice[1][0] and twice[0][0] == twice[1][0]   # the caller's object: never shared
    assert twice[0][1] is twice[1][1]


def test_emitted_results_equal_pydantic_construction() -> None:
    """The result, its depth groups and example entries are built like ``model_construct`` too."""
    from lorescan._construct import construct as _construct
    from lorescan._model import ActivationResult, DepthGroup, ExampleEntry

    entries = [{"uid": 0, "key": ["a"], "content": "d", "position": 4, "depth": 2, "role": 1},
               {"uid": 1, "key": ["a"], "content": "e", "position": 5}]
    result = lorescan.compile([Lorebook.from_entries("b", entries)]).activate([ChatMessage(name="U", mes="a")])
    assert [g.model_dump() for g in result.depth] == [{"depth": 2, "role": 1, "entries": ["d"]}]
    assert [x.model_dump() for x in result.em] == [{"position": "before", "content": "e"}]
    for model in [result, *result.depth, *result.em]:
        cls = type(model)
        assert cls.model_config.get("extra") in (None, "ignore")    # what _construct assumes
        assert list(model.__dict__) == list(cls.model_fields)       # every field, in order
        slow = cls.model_construct(**model.__dict__)
        assert model == slow
        assert model.model_fields_set == slow.model_fields_set
        assert model.__pydantic_extra__ is slow.__pydantic_extra__
        assert model.__pydantic_private__ is slow.__pydantic_private__
    assert {ActivationResult, DepthGroup, ExampleEntry} == {type(m) for m in [result, *result.depth, *result.em]}
    assert _construct(DepthGroup, {"depth": 1, "role": 0, "entries": []}) == \
        DepthGroup.model_construct(depth=1, role=0, entries=[])


def test_timed_state_made_by_the_engine_equals_pydantic_construction() -> None:
    """The evaluation's timed state and its records are made without validation, as
    ``TimedState(sticky=..., cooldown=...)`` and ``TimedEffect(...)`` make them."""
    from lorescan._model import TimedEffect, TimedState

    entries = [{"uid": 0, "key": ["a"], "content": "d", "sticky": 2, "cooldown": 3}]
    result = lorescan.compile([Lorebook.from_entries("b", entries)]).activate([ChatMessage(name="U", mes="a")])
    state = result.timed
    assert type(state) is TimedState
    assert state == TimedState(sticky=dict(state.sticky), cooldown=dict(state.cooldown))
    assert state.model_fields_set == {"sticky", "cooldown"}
    (sticky,), (cooldown,) = state.sticky.values(), state.cooldown.values()
    for record, end in ((sticky, 3), (cooldown, 4)):
        want = TimedEffect(start=1, end=end, protected=False, hash=record.hash)
        assert record == want and record.model_fields_set == want.model_fields_set
        assert type(record.start) is int and type(record.end) is int and type(record.hash) is int
    assert list(state.sticky) == ["b.0"]


def _warm_up(book: Lorebook) -> None:
    """A first compile and activation in the process, in a frame of its own: the first build of a
    deferred model reads its caller's locals (pydantic's namespace), and the frame keeps that
    snapshot of them, a ``Lore`` included, after the name is deleted."""
    lorescan.compile([book]).activate([ChatMessage(name="U", mes="a dragon")], char_name="Ann")


def test_a_dropped_book_is_freed_without_the_garbage_collector() -> None:
    """No reference cycles inside a compiled book: a 100k-entry book dropped by a frontend is freed
    at once by reference counting, not on Python's next full collection."""
    import gc
    import weakref

    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["dragon", "{{char}}'s hoard"], "content": "x"},
                                       {"uid": 1, "key": ["/drag(on|oness)/i"], "content": "y"}])
    _warm_up(book)
    was = gc.isenabled()
    gc.disable()
    try:
        lore = lorescan.compile([book])
        lore.activate([ChatMessage(name="U", mes="a dragon")], char_name="Ann")
        refs = [weakref.ref(lore), *map(weakref.ref, lore._indexes.values()), *map(weakref.ref, lore._bound.values())]
        del lore
        assert [r() for r in refs] == [None] * len(refs)
    finally:
        if was:
            gc.enable()


def test_names_past_the_kept_indexes_push_out_the_least_recently_used() -> None:
    """A service's chats name many users and characters: a ``Lore`` keeps the key index bound to
    each pair of names for the most recently used pairs (as many as its size allows), so a chat
    that keeps coming back keeps its own while others come and go, and each pair's activations stay
    exact. A book with no macro key binds once for every pair."""
    from lorescan._engine import bound_kept

    # as many pairs as fit in 96 MB at 72 bytes an entry each, from 16 to 256
    assert (bound_kept(10), bound_kept(1_000), bound_kept(20_000), bound_kept(100_000)) == (256, 256, 69, 16)
    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["{{char}}'s hoard"], "content": "x"}])
    lore = lorescan.compile([book])
    assert lore._bound_kept == 256
    lore._bound_kept = BOUND_KEPT = 16      # as a 100k-entry book's

    def fired(name: str) -> list[str]:
        return lore.activate([ChatMessage(name="U", mes=f"{name}'s hoard")], char_name=name).activated_keys()

    assert fired("Hot") == ["b.0"]
    (hot,) = lore._bound.values()
    for i in range(3 * BOUND_KEPT):
        assert fired(f"C{i}") == ["b.0"]
        assert fired("Hot") == ["b.0"]
        assert any(b is hot for b in lore._bound.values()) and len(lore._bound) <= BOUND_KEPT
    assert lore.activate([ChatMessage(name="U", mes="C0's hoard")], char_name="Hot").activated_keys() == []
    assert len(lore._bound) == BOUND_KEPT
    # no key names a macro: every pair of names shares one bound index (and its memos)
    plain = lorescan.compile([Lorebook.from_entries("p", [{"uid": 0, "key": ["hoard"], "content": "x"}])])
    for i in range(3 * BOUND_KEPT):
        got = plain.activate([ChatMessage(name="U", mes="the hoard")], char_name=f"C{i}", user_name=f"U{i}")
        assert got.activated_keys() == ["p.0"]
    assert len(plain._bound) == 1


@pytest.mark.parametrize("engine", ["legacy", "new"])
@pytest.mark.parametrize("key,shared_legacy,shared_new", [
    ("{{char}}'s hoard", True, True),          # names only the character: every user of it shares one
    ("<BOT>'s hoard", True, True),
    ("{{user}}'s hoard", False, False),
    ("<USER>'s hoard", False, False),
    ("{{us{{noop}}er}}'s hoard", False, True),   # the legacy engine makes {{user}} as it substitutes
    ("{{<BOT>}}'s hoard", False, True),        # with a character named "user", the same; the new
])                                             # engine never evaluates what a macro gave again
def test_users_of_one_character_share_a_bound_index_when_no_key_names_them(key: str, shared_legacy: bool,
                                                                            shared_new: bool, engine: str) -> None:
    """A key index is bound per pair of names, but kept without the user's name when every macro
    key substitutes to the same text without it: each user of a character then shares one. Every
    user's activations stay what a fresh compile gives."""
    book = Lorebook.from_entries("b", [{"uid": 0, "key": [key], "content": "x"},
                                       {"uid": 1, "key": ["dragon"], "content": "y"}])
    lore = lorescan.compile([book], macro_engine=engine)
    users = ["Ann", "Bo", "user", "Cy"]
    for char in ("user", "Zed"):
        for user in users:
            chat = [ChatMessage(name="U", mes=f"{user}'s hoard, {char}'s hoard, user's hoard, a dragon")]
            got = lore.activate(chat, user_name=user, char_name=char).activated_keys()
            fresh = lorescan.compile([book], macro_engine=engine)
            assert got == fresh.activate(chat, user_name=user, char_name=char).activated_keys()
            assert "b.1" in got
    if shared_new if engine == "new" else shared_legacy:
        assert len(lore._bound) == 2      # one per character
    else:
        assert len(lore._bound) > 2


def test_pairs_of_names_share_what_does_not_depend_on_them() -> None:
    """Each pair of names binds the macro keys anew, but takes the records of the entries without
    one, and the hits of the other needles, from the pairs before it: the same objects, and the
    same activations as a fresh compile gives."""
    book = Lorebook.from_entries("b", [{"uid": 0, "key": ["{{char}}'s hoard"], "content": "x"},
                                       {"uid": 1, "key": ["dragon"], "content": "y"},
                                       {"uid": 2, "key": ["/gold(en)?/i"], "content": "z"}])
    chat = [ChatMessage(name="U", mes="Bo's hoard: a dragon, golden")]
    lore = lorescan.compile([book])
    assert lore.activate(chat, char_name="Bo").activated_keys() == ["b.0", "b.1", "b.2"]
    assert lore.activate(chat, char_name="Al").activated_keys() == ["b.1", "b.2"]
    assert lorescan.compile([book]).activate(chat, char_name="Al").activated_keys() == ["b.1", "b.2"]
    bo, al = (next(b for b in lore._bound.values() if b.env.char == name) for name in ("Bo", "Al"))
    assert bo is not al and bo.main is al.main
    assert al.plain_records[1] is bo.plain_records[1] is not None
    assert al.plain_records[2] is bo.plain_records[2] is not None
    assert al.plain_records[0] is not bo.plain_records[0]       # a macro key: its own per pair
    text = next(t for t in bo.hits_memo if "dragon" in t)
    assert bo.hits_memo[text] != al.hits_memo[text]       # Bo's own needle is found in it, Al's is not
    assert text not in bo.main.main_hits       # messages: each pair's own (another pair, another chat)
    # contents (recursion text): the main needles' hits shared
    s = Settings(world_info_recursive=True)
    recursed = [ChatMessage(name="U", mes="Bo's hoard")]
    book2 = Lorebook.from_entries("c", [{"uid": 0, "key": ["{{char}}'s hoard"], "content": "a dragon, golden"},
                                        {"uid": 1, "key": ["dragon"], "content": "y"},
                                        {"uid": 2, "key": ["/gold(en)?/i"], "content": "z"}])
    lore = lorescan.compile([book2])
    assert lore.activate(recursed, char_name="Bo", settings=s).activated_keys() == ["c.0", "c.1", "c.2"]
    bo = next(iter(lore._bound.values()))
    shared = bo.main.main_content_hits["a dragon, golden"]
    assert len(shared) == 3 and bo.content_memo["a dragon, golden"] is shared     # dragon, gold, the regex
    assert lore.activate([ChatMessage(name="U", mes="Al's hoard")], char_name="Al",
                         settings=s).activated_keys() == ["c.0", "c.1", "c.2"]
    al = next(b for b in lore._bound.values() if b.env.char == "Al")
    assert al.content_memo["a dragon, golden"] is shared


def _generation(obj: object) -> int | None:
    import gc
    return next((g for g in range(3) if any(o is obj for o in gc.get_objects(generation=g))), None)


def test_compiled_objects_go_straight_to_the_collectors_oldest_generation() -> None:
    """A compiled book is long-lived: its objects skip the young passes (no ~100 ms walk of a 100k
    book's objects right after compiling), the collector is on again, and nothing frozen by the
    caller is released; with the collector off, nothing is moved."""
    import gc

    from lorescan import _construct

    book = Lorebook.from_entries("b", [{"uid": i, "key": [f"dragon{i}"], "content": "x"} for i in range(BULK)])
    gc.collect()
    assert gc.isenabled()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_construct, "_frozen_here", False)     # as in a process lorescan has frozen nothing in
        lore = lorescan.compile([book])
    assert gc.isenabled() and _generation(lore._all[0]) == 2
    keep: list[list[int]] = [[]]
    gc.freeze()
    try:
        assert _generation(keep[0]) is None     # frozen: in no generation
        lore = lorescan.compile([book])
        assert _generation(keep[0]) is None and _generation(lore._all[0]) is not None
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        lore = lorescan.compile([book])
        assert not gc.isenabled() and _generation(lore._all[0]) == 0
    finally:
        gc.enable()
    del keep


def test_frozen_objects_are_counted_only_when_lorescan_froze_none(monkeypatch) -> None:
    """Python counts frozen objects by walking them all (20 ms with a 20,000-entry book frozen): a
    small book's compile and activations never pause the collector, so never ask; a big book's
    compile asks once, unless lorescan froze objects itself (the service, a command)."""
    import gc

    from lorescan import _construct

    counted: list[int] = []
    count = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: counted.append(1) or count())
    monkeypatch.setattr(_construct, "_frozen_here", False)
    small = Lorebook.from_entries("s", [{"uid": 0, "key": ["dragon", "{{char}}"], "content": "x"}])
    lore = lorescan.compile([small], settings=Settings())
    lore.activate([ChatMessage(name="U", mes="a dragon")], char_name="Ann")
    lore.activate([ChatMessage(name="U", mes="a dragon")], char_name="Bo")
    assert counted == []
    big = Lorebook.from_entries("b", [{"uid": i, "key": [f"dragon{i}"], "content": "x"} for i in range(BULK)])
    counted.clear()     # reading the entries paused too
    lore = lorescan.compile([big], settings=Settings())
    assert (counted, _generation(lore._all[0])) == ([1], 2)
    counted.clear()
    try:
        _construct.freeze_long_lived()
        assert _generation(lore._all[0]) is None
        lore = lorescan.compile([big], settings=Settings())
        assert (counted, gc.isenabled()) == ([], True)
    finally:
        gc.unfreeze()


def test_reading_a_file_runs_no_collection_and_leaves_its_objects_in_the_oldest_generation(tmp_path) -> None:
    """Reading a book builds long-lived objects (its entries, the parsed file): no young pass walks
    them while it reads (a fifth of reading a 100k-entry file went to such passes), they go
    straight to the oldest generation, and the collector is on again, also after a bad file."""
    import gc

    from lorescan._construct import BULK_BYTES
    from lorescan._errors import FormatError

    path = tmp_path / "big.json"
    path.write_text(json.dumps({"entries": {str(i): {"uid": i, "key": [f"k{i}"], "content": f"c{i} " + "x" * 400}
                                            for i in range(3000)}}))
    assert path.stat().st_size >= BULK_BYTES   # a big file (a small one keeps the young passes)
    (tmp_path / "small.json").write_text('{"entries": {}}')
    lorescan.load(tmp_path / "small.json")      # the readers imported (run alone, the test imported them here)
    with collector_passes() as passes:
        loaded = lorescan.load(path)
    assert passes == [] and gc.isenabled()
    assert len(loaded.books[0].entries) == 3000 and _generation(loaded.books[0].entries[0]) == 2
    (tmp_path / "bad.json").write_text('{"entries": ' + " " * BULK_BYTES)    # big, and cut short
    with pytest.raises(FormatError):
        lorescan.load(tmp_path / "bad.json")
    assert gc.isenabled()


def test_writing_a_big_book_runs_no_collection(tmp_path) -> None:
    """Writing an edited book of thousands of entries back (a document per entry): no pass of the
    collector meanwhile, the edit written, the collector on after."""
    import gc

    from lorescan._construct import BULK
    from lorescan._load import render

    path = tmp_path / "book.json"
    path.write_text(json.dumps({"entries": {str(i): {"uid": i, "key": [f"k{i}"], "content": f"c{i}"}
                                            for i in range(2 * BULK)}}))
    loaded = lorescan.load(path)
    loaded.books[0].entries[5].content = "edited"
    with collector_passes() as passes:
        data, notes = render(loaded)
    assert passes == [] and gc.isenabled() and notes == []
    written = json.loads(data)["entries"]
    assert written["5"]["content"] == "edited" and written["6"]["content"] == "c6" and len(written) == 2 * BULK


def test_a_big_book_built_from_dicts_runs_no_collection() -> None:
    """``Lorebook.from_entries`` with thousands of entries: no young pass walks them (nor the
    caller's dicts: at 50,000 entries such passes were a third of the time), collector on after."""
    import gc

    from lorescan._construct import BULK

    dicts = [{"uid": i, "key": [f"k{i}"], "content": f"c{i}"} for i in range(2 * BULK)]
    with collector_passes() as passes:
        book = Lorebook.from_entries("b", dicts)
    assert passes == [] and gc.isenabled() and [e.uid for e in book.entries] == list(range(2 * BULK))


def test_substituted_contents_are_remembered_per_names_and_card() -> None:
    """Contents with macros are substituted once per (names, card fields) and reused after."""
    from lorescan import Character

    lore = lorescan.compile([Lorebook.from_entries("b", [
        {"uid": 0, "key": ["a"], "content": "{{user}} meets {{char}}: {{description}}"},
        {"uid": 1, "key": ["a"], "content": "<USER> again"}])])
    chat = [ChatMessage(name="U", mes="a")]

    def run(user: str, char: str, description: str) -> list[str]:
        card = Character(name=char, description=description)
        return [a.content for a in lore.activate(chat, user_name=user, char_name=char, character=card).activated]

    assert run("Ann", "Bo", "tall") == ["Ann meets Bo: tall", "Ann again"]
    assert run("Cy", "Bo", "tall") == ["Cy meets Bo: tall", "Cy again"]
    assert run("Ann", "Bo", "short") == ["Ann meets Bo: short", "Ann again"]
    assert run("Ann", "Bo", "tall") == ["Ann meets Bo: tall", "Ann again"]
