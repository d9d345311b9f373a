"""The one JSON shape of a result (``lorescan._results``)."""

from __future__ import annotations

import pytest

from lorescan._construct import construct
from lorescan._model import ActivationResult, DepthGroup, ExampleEntry
from lorescan._results import _dumped


@pytest.mark.parametrize("model", [
    DepthGroup(depth=4, role=0, entries=["a", "b"]),
    DepthGroup(depth=2.5, role="1", entries=[]),
    DepthGroup(depth=None, role=None, entries=["x"]),
    construct(DepthGroup, {"depth": 0, "role": 2, "entries": ["made directly"]}),
    ExampleEntry(position="before", content="<START>\nhi"),
    construct(ExampleEntry, {"position": "after", "content": ""}),
])
def test_a_result_part_is_dumped_as_pydantic_dumps_it(model) -> None:
    dumped = _dumped(model)
    assert dumped == model.model_dump()
    assert list(dumped) == list(model.model_dump())
    if isinstance(model, DepthGroup):       # a copy: changing the JSON leaves the result alone
        dumped["entries"].append("more")
        assert "more" not in model.entries


def test_a_depth_or_role_that_is_not_finite_is_written_as_json_stringify_writes_it() -> None:
    """An integer literal beyond the largest double is Infinity in JavaScript; SillyTavern's group
    keeps it, and its JSON (the ``expected`` shape) holds null. What Node printed for this scenario
    under SillyTavern 1.12.6's own code."""
    from lorescan import run_scenario

    huge = 10**400
    entries = [{"uid": 0, "key": ["alpha"], "content": "a", "position": 4, "depth": huge, "role": -huge},
               {"uid": 1, "key": ["alpha"], "content": "b", "position": 4, "depth": huge, "role": -huge}]
    got = run_scenario({"entries": entries, "chat": [{"name": "U", "is_user": True, "mes": "alpha"}]}, version="1.12")
    assert got["depth"] == [{"depth": None, "role": None, "entries": ["b", "a"]}]
    assert _dumped(DepthGroup(depth=float("inf"), role=float("nan"), entries=[])) == \
        {"depth": None, "role": None, "entries": []}


def _result() -> ActivationResult:
    from lorescan import Lorebook, compile

    book = Lorebook.from_entries("w", [{"uid": u, "key": [k], "content": f"about {k}", "order": u}
                                       for u, k in enumerate(["harbor", "lamp", "keeper", "fog"])])
    return compile([book]).activate([{"name": "U", "is_user": True, "mes": "the keeper lit the lamp by the harbor"}],
                                    user_name="U", char_name="C")


def test_a_results_keys_are_its_records_keys_while_its_list_is_unchanged() -> None:
    """The engine hands the entries' keys to the result; once the list changes, its records say."""
    import copy
    import pickle

    from lorescan._model import ActivationList

    result = _result()
    acts = result.activated
    assert type(acts) is ActivationList
    assert result.activated_keys() == [a.key for a in acts] == ["w.2", "w.1", "w.0"]
    keys = result.activated_keys()
    keys.append("mine")                       # a copy each time
    assert result.activated_keys() == ["w.2", "w.1", "w.0"]
    plain = result.model_copy(update={"activated": list(acts)})
    assert plain == result and plain.model_dump_json() == result.model_dump_json()
    for again in (pickle.loads(pickle.dumps(result)), copy.deepcopy(result),
                  ActivationResult.model_validate(result.model_dump())):
        assert again == result and again.activated_keys() == ["w.2", "w.1", "w.0"]
    acts[1] = acts[1].model_copy(update={"key": "w.other"})      # an equal length, another record
    assert result.activated_keys() == ["w.2", "w.other", "w.0"]
    acts.reverse()
    assert result.activated_keys() == ["w.0", "w.other", "w.2"]
    acts.append(acts[0])
    assert result.activated_keys() == ["w.0", "w.other", "w.2", "w.0"]
    del acts[:]
    assert result.activated_keys() == []
    bare = ActivationList(plain.activated)      # not made by the engine: read from its records
    assert result.model_copy(update={"activated": bare}).activated_keys() == ["w.2", "w.1", "w.0"]
