"""The side-by-side benchmark on a tiny book, this tree against itself: both servers answer every
generation, and each side's figures are reported (``python benchmarks/service_ab.py`` runs it)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")
if not sys.platform.startswith("linux"):
    pytest.skip("reads /proc", allow_module_level=True)

import service_ab  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("kind", ["proxy", "activate"])
def test_service_ab_runs_both_sides(kind: str) -> None:
    out = service_ab.main([str(ROOT), str(ROOT), "--kind", kind, "--generations", "12", "--warmup", "2",
                           "--entries", "300"])
    assert set(out) == {"A", "B"}
    for side in out.values():
        assert set(side) == {"p50_ms", "p99_ms", "cpu_ms"}
        assert 0 < side["p50_ms"] <= side["p99_ms"] and side["cpu_ms"] >= 0
