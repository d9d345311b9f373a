"""The one JSON shape of a result (``lorescan._results``)."""

from __future__ import annotations

import pytest

from lorescan._model import DepthGroup, ExampleEntry, construct
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
