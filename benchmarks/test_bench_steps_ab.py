"""The in-situ step timing on a small book, this tree against itself: every named step is timed in
every generation and both runs activate the same entries (``python benchmarks/steps_ab.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import steps_ab

from lorescan import _index

ROOT = Path(__file__).resolve().parent.parent
SMALL = ["--entries", "300", "--chats", "4", "--warmup", "8", "--generations", "12"]


def test_steps_ab_times_c_and_python_steps_in_both_orders() -> None:
    steps = ["lorescan._emit:emit", "lorescan._request:ActivationRequest.build", "lorescan._engine:_Evaluation.run"]
    if _index.native is not None:
        steps.append("activation_records")
    out = steps_ab.main([str(ROOT), str(ROOT), "--steps", ",".join(steps), *SMALL, "--runs", "2"])
    assert out["same_activations"] is True
    assert len(out["runs"]) == 2 and all(len(run) == 2 for run in out["runs"])
    for run in out["runs"]:
        for side in run:
            assert side["tree"] == str(ROOT) and set(side["steps_us"]) == set(steps)
            assert all(v > 0 for v in side["steps_us"].values())     # each called in every generation
            # the evaluation holds emit and the records step: a part is below its whole
            assert side["steps_us"]["lorescan._emit:emit"] < side["steps_us"]["lorescan._engine:_Evaluation.run"] \
                < side["generation_us"]


@pytest.mark.parametrize("step", ["no_such_function", "lorescan._emit:no_such", "lorescan._emit:_EXACT"])
def test_steps_ab_refuses_what_is_not_a_step(step: str) -> None:
    if ":" not in step and _index.native is None:
        pytest.skip("the C extension is not built")
    saved = _index.native
    with pytest.raises(SystemExit):
        steps_ab._wrap([step], {step: 0.0})
    assert _index.native is saved       # refused before anything is replaced
