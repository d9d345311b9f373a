"""The workbench latency benchmark in quick mode: it runs and every kind of request is answered
(``python benchmarks/workbench_latency.py`` measures the 20,000-entry figures)."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")
if not sys.platform.startswith("linux"):
    pytest.skip("the server helper of the load benchmark reads /proc", allow_module_level=True)

import workbench_latency  # noqa: E402


def test_workbench_latency_quick_mode() -> None:
    figures = workbench_latency.main(["--entries", "300", "--requests", "3", "--no-browser"])
    assert figures["entries"] == 300 and figures["requests"] == 3
    http = figures["http"]
    assert set(http) == {"untraced", "page (trace, focused)", "full trace"}
    for kind in http.values():
        assert 0 < kind["p50_ms"] <= kind["p95_ms"]
    # a focused trace is smaller than a full one, and larger than no trace
    assert http["untraced"]["reply_kb"] < http["page (trace, focused)"]["reply_kb"] < http["full trace"]["reply_kb"]
