"""Models made without pydantic's validators (``lorescan._construct``) equal what validation makes.

Every model the readers and the engine build this way is checked against ``model_validate`` on
generated JSON-like values, a model instance here and there: the same field values of the same
types, extra values, set fields and private defaults, and lists and dicts copied the same way; a
value validation would change or reject goes to validation itself. ``dump`` is checked against
``model_dump(exclude_unset=True)`` the same way.
"""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import typing
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from lorescan import _construct, _model
from lorescan._construct import build, build_directly, check_for, dump, make
from lorescan._formats.cards import CardInfo
from lorescan._formats.chats import Chat
from lorescan._load import Loaded

MODELS: list[type[BaseModel]] = [
    _model.Entry, _model.CharacterFilter, _model.Lorebook, _model.Settings, _model.ChatMessage,
    _model.DepthPrompt, _model.Character, _model.TimedEffect, _model.TimedState, Chat, Loaded, CardInfo,
]

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.integers(), st.floats(),
                    st.sampled_from(["", "a", "global", "chat", "system", "ccv2", "st-chat"]))
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "names", "tags"]), inner, max_size=3)),
    max_leaves=6)


_INSTANCES: list[BaseModel] = [
    _model.Entry.from_json({"key": ["a"]}), _model.CharacterFilter(names=["x"]),
    _model.TimedEffect(start=1, end=2), _model.ChatMessage(mes="hi"), _model.Lorebook(name="b"),
    _model.DepthPrompt(prompt="p"), _model.TimedState(), Chat(format="st-chat"),
    CardInfo(name="c", format="ccv2"),
]


def _instances() -> st.SearchStrategy[Any]:
    return st.sampled_from(_INSTANCES)


@functools.cache
def _typed(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of a field's own type (the case the direct path takes), nested models as instances
    or as dicts."""
    if annotation is Any:
        return json_values
    if annotation is None or annotation is type(None):
        return st.none()
    simple = {str: st.sampled_from(["", "a", "global", "ccv2"]), int: st.integers(), bool: st.booleans(),
              float: st.floats(), bytes: st.binary(max_size=3)}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        made = [i for i in _INSTANCES if isinstance(i, annotation)]
        nested = st.fixed_dictionaries({}, optional={n: _typed(f.annotation) for n, f in annotation.model_fields.items()
                                                     if not f.is_required()})
        return st.one_of(st.sampled_from(made), nested) if made else nested
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return st.sampled_from(args)
    if origin is list:
        return st.lists(_typed(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.sampled_from(["k1", "k2"]), _typed(args[1]), max_size=2)
    return st.one_of([_typed(a) for a in args])


@functools.cache
def _data(cls: type[BaseModel]) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly values of each field's type, now and then any JSON value or an instance (what
    validation coerces or rejects), and extra names; required fields mostly present. (Strategies
    are made once per type: made afresh in every draw, they were most of the test's time.)"""
    anything = st.one_of(json_values, _instances(), st.lists(_instances(), max_size=2),
                         st.dictionaries(st.sampled_from(["k1", "k2"]), _instances(), max_size=2))

    def value(annotation: Any) -> st.SearchStrategy[Any]:
        typed = _typed(annotation)
        return st.integers(0, 14).flatmap(lambda i: anything if i == 0 else typed)

    required = {n: value(f.annotation) for n, f in cls.model_fields.items() if f.is_required()}
    optional = {n: value(f.annotation) for n, f in cls.model_fields.items() if not f.is_required()}
    optional |= {"extra_field": anything, "world": anything}
    return st.one_of(st.fixed_dictionaries(required, optional=optional),
                     st.fixed_dictionaries({}, optional=required | optional))


def shape(value: Any) -> Any:
    """A value with every type spelled out (``1 == True == 1.0`` in Python), models included."""
    if isinstance(value, BaseModel):
        return ("model", type(value).__name__, shape(value.__dict__), sorted(value.model_fields_set),
                shape(value.__pydantic_extra__), shape(value.__pydantic_private__))
    if isinstance(value, list):
        return ("list", [shape(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(k, shape(v)) for k, v in value.items()])
    if isinstance(value, float):
        return ("float", "nan" if math.isnan(value) else repr(value))
    return (type(value).__name__, value)


def same(a: BaseModel, b: BaseModel) -> None:
    assert type(a) is type(b)
    assert list(a.__dict__) == list(b.__dict__)
    for name in a.__dict__:
        va, vb = a.__dict__[name], b.__dict__[name]
        if isinstance(va, BaseModel) and isinstance(vb, BaseModel) and va is not vb:
            same(va, vb)
        else:
            assert shape(va) == shape(vb), name
    assert shape(a.__pydantic_extra__) == shape(b.__pydantic_extra__)
    assert a.model_fields_set == b.model_fields_set
    assert shape(a.__pydantic_private__) == shape(b.__pydantic_private__)


def _outcome(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ValidationError as exc:
        return ("error", [(e["type"], e["loc"]) for e in exc.errors()])


@pytest.mark.parametrize("steps", ["c", "python"])
@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_build_equals_validation(cls: type[BaseModel], steps: str, data: st.DataObject) -> None:
    """``build_directly`` gives what validation gives, with the C extension's steps for a known
    shape (``shaped_fields``, ``shaped_model``) and with the Python steps they stand in for."""
    if steps == "c" and _construct.native is None:
        pytest.skip("the C extension is not built")
    raw = data.draw(_data(cls))
    with mock.patch.object(_construct, "native", _construct.native if steps == "c" else None):
        got = _outcome(build_directly, cls, raw)
    want = _outcome(cls.model_validate, raw)
    if isinstance(want, tuple):
        assert got == want
        return
    same(got, want)
    for name, value in raw.items():      # lists and dicts copied (or kept) as validation does
        if name in got.__dict__ and isinstance(value, (list, dict)):
            assert (got.__dict__[name] is value) == (want.__dict__[name] is value), name


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_dump_equals_model_dump(cls: type[BaseModel], data: st.DataObject) -> None:
    raw = data.draw(_data(cls))
    try:
        model = cls.model_validate(raw)
    except ValidationError:
        return
    got = dump(model)
    want = model.model_dump(mode="python", exclude_unset=True)
    if got is not None:
        assert shape(got) == shape(want)


def test_common_values_take_the_direct_path() -> None:
    """The values the readers give are built without validation: the fast path is really taken."""
    entry = build(_model.Entry, {"uid": 1, "key": ["a"], "content": "x", "characterFilter": {"names": ["n"]},
                                 "extensions": {"depth": 2}})
    assert entry.key == ["a"]
    assert entry.characterFilter is not None and entry.characterFilter.names == ["n"]
    assert entry.model_fields_set == {"uid", "key", "content", "characterFilter", "extensions"}
    assert dump(entry) == {"uid": 1, "key": ["a"], "content": "x", "characterFilter": {"names": ["n"]},
                           "extensions": {"depth": 2}}
    assert make(_model.Settings).world_info_budget == 25
    with pytest.raises(ValidationError, match="world_info_budgett"):
        build(_model.Settings, {"world_info_budgett": 3})
    with pytest.raises(ValidationError, match="name"):
        make(_model.Lorebook, entries=[])            # a required field missing: validation says so


def test_checks_of_field_types() -> None:
    check = check_for(list[str] | None)
    assert check is not None
    assert check(["a"]) and check(None) and not check(["a", 1]) and not check(("a",))
    scalar = check_for(_model.Scalar)
    assert scalar is not None and scalar(True) and scalar(1.5) and not scalar([])
    assert check_for(set[str]) is None       # a shape not checked here: validation does it


def test_replay_builds_no_validator_and_skips_metadata() -> None:
    """``lorescan replay`` on the bundled sample builds no pydantic validator, and so never imports
    ``importlib.metadata`` (about a third of its start-up beyond the dependencies, before); nor
    ``zipfile`` (CHARX archives) or ``tempfile`` (writing the tokenizer's cache), which it does not use."""
    code = (
        "import sys, contextlib, os\n"
        "from lorescan._cli.main import main\n"
        "sys.argv = ['lorescan', 'replay', '--book', 'corpora/saltmere.json', '--chat', 'corpora/saltmere-chat.jsonl']\n"
        "with open(os.devnull, 'w') as dn, contextlib.redirect_stdout(dn):\n"
        "    try:\n        main()\n    except SystemExit as e:\n        assert not e.code, e.code\n"
        "from lorescan import _model\n"
        "print(int('importlib.metadata' in sys.modules), int(_model.Entry.__pydantic_complete__),\n"
        "      int('zipfile' in sys.modules), int('tempfile' in sys.modules))\n"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0", "0", "0"]     # nor the archive and temporary-file modules


def test_a_class_made_often_switches_to_its_compiled_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    from pydantic import ConfigDict

    from lorescan import _construct

    class Note(BaseModel):
        model_config = ConfigDict(defer_build=True, extra="allow")
        text: str = ""
        n: int | None = None

    monkeypatch.setattr(_construct, "SWITCH_AFTER", 3)
    made = [build(Note, {"text": "a", "n": i, "x": [i]}) for i in range(3)]
    assert not Note.__pydantic_complete__                  # three made directly
    assert build(Note, {"text": "b", "n": 9}).n == 9         # the fourth builds the validator ...
    assert Note.__pydantic_complete__
    assert build(Note, {"text": "c"}).model_fields_set == {"text"}    # ... and uses it from then on
    with pytest.raises(ValidationError):
        build(Note, {"n": "nine"})
    assert [m.n for m in made] == [0, 1, 2] and made[2].model_extra == {"x": [2]}


def test_a_shape_seen_before_still_checks_its_containers() -> None:
    """Dicts of one shape (keys and value types) share how they are made, but each one's lists and
    nested objects are checked again: a bad item in a list of a known shape goes to validation."""
    first = {"uid": 1, "key": ["a"], "characterFilter": {"names": ["n"]}, "displayIndex": 1}
    same(build_directly(_model.Entry, first), _model.Entry.model_validate(first))
    for raw in ({"uid": 2, "key": ["a", 1], "characterFilter": {"names": ["n"]}, "displayIndex": 2},
                {"uid": 3, "key": ["b"], "characterFilter": {"names": [None]}, "displayIndex": 3},
                {"uid": 4, "key": ["c"], "characterFilter": {"names": ["m"]}, "displayIndex": [4]}):
        got, want = _outcome(build_directly, _model.Entry, raw), _outcome(_model.Entry.model_validate, raw)
        if isinstance(want, tuple):
            assert got == want
        else:
            same(got, want)
    kept = build_directly(_model.Entry, {"uid": 5, "key": ["d"], "characterFilter": {"names": ["o"]}, "displayIndex": 5})
    assert kept.key == ["d"] and kept.characterFilter is not None and kept.characterFilter.names == ["o"]
    assert kept.model_extra == {"displayIndex": 5}


def test_a_big_book_builds_no_entry_validator(tmp_path: Any) -> None:
    """Entries are always made directly (more fields than ``DIRECT_FIELDS``): reading a book of
    3,000 entries builds no pydantic validator for them, and gives what validation gives."""
    import json

    raw = {str(i): {"uid": i, "key": [f"k{i}", "shared"], "keysecondary": [], "content": f"text {i}",
                    "constant": i % 7 == 0, "order": i % 100, "position": i % 5, "probability": 100,
                    "depth": 4, "group": "", "scanDepth": None, "displayIndex": i}
           for i in range(3000)}
    raw["17"]["disable"] = 1                                    # kept as read (JavaScript truthiness)
    raw["18"]["characterFilter"] = {"isExclude": True, "names": ["x"], "tags": [3]}
    raw["19"]["order"] = "7"
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"entries": raw}), encoding="utf-8")
    code = ("import sys, json, lorescan\nfrom lorescan import _model\n"
            f"book = lorescan.load({str(path)!r}).books[0]\n"
            "print(int(_model.Entry.__pydantic_complete__))\n"
            "print(json.dumps([e.to_json() for e in book.entries]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    complete, dumped = out.split("\n", 1)
    assert complete == "0"
    assert json.loads(dumped) == [_model.Entry.model_validate(v).model_dump(exclude_unset=True) for v in raw.values()]


def test_a_callers_shared_fields_set_is_taken_only_when_equal() -> None:
    """``build_directly`` gives an instance the caller's shared fields set when it equals the one
    the dict gives (checked once per shape, then known by identity), else a set of its own."""
    data = {"uid": 1, "key": ["a"], "comment": "x", "zz_extra": 1}
    shared = {"uid", "key", "comment", "zz_extra"}
    first = build_directly(_model.Entry, data, shared)
    again = build_directly(_model.Entry, {**data, "uid": 2}, shared)
    assert first.__pydantic_fields_set__ is shared and again.__pydantic_fields_set__ is shared
    other = {"uid", "key"}
    own = build_directly(_model.Entry, {**data, "uid": 3}, other)
    assert own.__pydantic_fields_set__ == shared and own.__pydantic_fields_set__ is not shared
    assert own.__pydantic_fields_set__ is not other and other == {"uid", "key"}
    alone = build_directly(_model.Entry, {**data, "uid": 4})
    assert alone.__pydantic_fields_set__ == shared and alone.__pydantic_fields_set__ is not shared


def test_entries_read_alike_share_their_field_set_until_one_changes() -> None:
    """Entries read with one key order share one set of given fields and one key order (a huge
    book would hold 100,000 copies); assigning to one entry gives it a set of its own first."""
    a = _model.Entry.from_json({"uid": 1, "key": ["a"], "comment": "x", "displayIndex": 1})
    b = _model.Entry.from_json({"uid": 2, "key": ["b"], "comment": "y", "displayIndex": 2})
    c = _model.Entry.from_json({"key": ["c"], "uid": 3, "comment": "z", "displayIndex": 3})   # another order
    assert a.__pydantic_fields_set__ is b.__pydantic_fields_set__
    assert a._order is b._order and a._order == ("uid", "key", "comment", "displayIndex")
    assert c._order == ("key", "uid", "comment", "displayIndex")
    a.sticky = 2
    assert a.model_fields_set == {"uid", "key", "comment", "displayIndex", "sticky"}
    assert b.model_fields_set == {"uid", "key", "comment", "displayIndex"}
    b.comment = "w"
    assert b.model_fields_set == {"uid", "key", "comment", "displayIndex"}
    assert a.to_json() == {"uid": 1, "key": ["a"], "comment": "x", "displayIndex": 1, "sticky": 2}
    assert list(b.to_json()) == ["uid", "key", "comment", "displayIndex"] and b.to_json()["comment"] == "w"
    d = _model.Entry.from_json({"uid": 4, "key": ["d"], "comment": "v", "displayIndex": 4})
    assert d.model_fields_set == {"uid", "key", "comment", "displayIndex"}     # the shared set is unchanged
    e = _model.Entry.from_json({"uid": 5, "key": ["e"], "comment": "u", "displayIndex": 5})
    assert e.__pydantic_private__ is d.__pydantic_private__     # one private dict too ...
    e._order = ("key",)
    assert e._order == ("key",) and d._order == ("uid", "key", "comment", "displayIndex")   # ... until one changes
    del e._order
    assert d._order == ("uid", "key", "comment", "displayIndex")
    f = _model.Entry.from_json({"uid": 6, "key": ["f"], "comment": "t", "displayIndex": 6})
    del f._order        # a deletion copies the shared dict first as well
    assert d._order == ("uid", "key", "comment", "displayIndex") and "_order" not in f.__pydantic_private__
