"""Every conformance scenario, run and compared field by field with SillyTavern's own result."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lorescan import run_scenario

from .conftest import CONFORMANCE, SHARED

FILES = sorted(CONFORMANCE.glob("st-*/*.json"))
#: scenarios differential runs against SillyTavern's own code turned up (lorescan differed on all
#: but the first message), each with a description and SillyTavern's result
DIFFERENTIAL = sorted((CONFORMANCE.parent / "fixtures" / "differential").glob("*.json"))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _diff(got: object, want: object, where: str = "") -> str:
    if isinstance(got, dict) and isinstance(want, dict):
        for k in sorted(set(got) | set(want)):
            if got.get(k, "<missing>") != want.get(k, "<missing>"):
                return _diff(got.get(k, "<missing>"), want.get(k, "<missing>"), f"{where}.{k}")
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                return _diff(g, w, f"{where}[{i}]")
    return f"{where or 'result'}: got {got!r}, expected {want!r}"


@pytest.mark.parametrize("path", FILES + DIFFERENTIAL, ids=_id)
def test_scenario(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    result = run_scenario(scenario)
    assert result == scenario["expected"], _diff(result, scenario["expected"])


@pytest.mark.parametrize("path", DIFFERENTIAL, ids=lambda p: p.stem)
def test_differential_scenarios_say_what_they_show(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert scenario["description"] and scenario["st_version"] in ("1.12.6", "1.18.0")


def test_every_version_folder_is_present() -> None:
    assert len(list((CONFORMANCE / "st-1.12").glob("*.json"))) >= 530
    assert len(list((CONFORMANCE / "st-1.18").glob("*.json"))) >= 849


def test_copies_match_shared() -> None:
    shared = SHARED / "conformance"
    if not shared.is_dir():
        pytest.skip("../shared is not present")
    for folder in shared.glob("st-*"):
        ours = {p.name for p in (CONFORMANCE / folder.name).glob("*.json")}
        theirs = {p.name for p in folder.glob("*.json")}
        assert theirs <= ours, f"copy these into tests/conformance/{folder.name}: {sorted(theirs - ours)[:5]}"


def _strip_outlets(result: dict) -> dict:
    if "turns" in result:
        return {"turns": [_strip_outlets(t) for t in result["turns"]]}
    return {k: v for k, v in result.items() if k != "outlets"}


def test_118_scenarios_differ_from_112_exactly_where_tagged() -> None:
    """Run the shared scenarios under 1.12: only the ones tagged changed_since_1.12 may differ."""
    changed, unexpected = [], []
    for path in sorted((CONFORMANCE / "st-1.18").glob("*.json")):
        sc = json.loads(path.read_text(encoding="utf-8"))
        if sc["name"].startswith(("gen18-", "hand-new-")):
            continue
        differs = _strip_outlets(run_scenario(sc, version="1.12")) != _strip_outlets(sc["expected"])
        tagged = "changed_since_1.12" in sc.get("tags", [])
        if differs != tagged:
            unexpected.append(sc["name"])
        if differs:
            changed.append(sc["name"])
    assert unexpected == []
    assert len(changed) == 9


def test_every_scenario_with_the_gates_in_python(monkeypatch) -> None:
    """The engine gates simple entries in C when the extension is built; the Python steps it falls
    back to must give SillyTavern's results too (CI machines without a compiler run them)."""
    from lorescan import _index

    monkeypatch.setattr(_index, "native", None)
    wrong = [_id(path) for path in FILES
             if run_scenario(sc := json.loads(path.read_text(encoding="utf-8"))) != sc["expected"]]
    assert wrong == []
