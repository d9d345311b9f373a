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
