"""The one JSON shape of an activation result.

It is the shape of a conformance scenario's ``expected`` field (see the conformance README), so a
result from the scenario runner, ``replay --json`` or the HTTP service can be compared with
SillyTavern's own output field by field. A traced result adds its events under ``trace``.
"""

from __future__ import annotations

import math
from typing import Any

from . import _index
from ._model import ActivationResult, DepthGroup, ExampleEntry


def result_json(result: ActivationResult, *, outlets: bool = True, trace: bool = False) -> dict[str, Any]:
    """``result`` in the ``expected`` shape; ``outlets`` is a 1.18 field (1.12.6 has none), and
    ``trace`` adds the recorded events when the evaluation was traced."""
    out: dict[str, Any] = {
        "activated": result.activated_keys(),
        "before": result.before,
        "after": result.after,
        "an_top": result.an_top,
        "an_bottom": result.an_bottom,
        "em": _dumped_all(result.em),
        "depth": _dumped_all(result.depth),
        "timed": result.timed.to_json(),
        "rolls": result.rolls,
    }
    if outlets:
        out["outlets"] = result.outlets
    if trace and result.trace is not None:
        out["trace"] = result.trace
    return out


def _dumped(model: ExampleEntry | DepthGroup) -> dict[str, Any]:
    """``model.model_dump()`` for an example entry or a depth group, whose fields hold only scalars
    and a list of strings: the fields in order, the list copied (a test pins the two equal); a
    depth or role that is not a finite number (an integer literal beyond the largest double is
    Infinity in JavaScript) as ``JSON.stringify`` writes it: null."""
    return {name: list(value) if type(value) is list else None if type(value) is float and not math.isfinite(value)
            else value for name, value in model.__dict__.items()}


def _dumped_all(models: list[ExampleEntry] | list[DepthGroup]) -> list[dict[str, Any]]:
    """:func:`_dumped` for each model; in C (``model_dicts``) when the extension is built."""
    if _index.native is not None and type(models) is list:
        return _index.native.model_dicts(models)
    return [_dumped(m) for m in models]


def turns_json(results: list[ActivationResult], *, outlets: bool = True) -> dict[str, Any]:
    """A multi-turn scenario's results: ``{"turns": [...]}`` in order."""
    return {"turns": [result_json(r, outlets=outlets) for r in results]}
