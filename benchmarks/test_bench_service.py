"""The service load benchmark in quick mode: it runs, every request is answered, and the service's
answer equals the library's (``python benchmarks/load_service.py`` runs the full benchmark)."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")
if not sys.platform.startswith("linux"):
    pytest.skip("the load benchmark reads /proc", allow_module_level=True)

import load_service  # noqa: E402


def test_load_service_quick_mode() -> None:
    figures = load_service.main(["--quick"])
    assert figures["agrees_with_library"] is True
    assert figures["stored_entries"] == 1000 and figures["warm_errors"] == 0
    [rate] = figures["rates"]
    assert rate["rate"] == 50 and rate["requests"] == 100 and rate["errors"] == 0
    assert 0 < rate["p50_ms"] <= rate["p95_ms"] <= rate["p99_ms"] <= rate["max_ms"]
    assert rate["peak_rss_mb"] >= figures["idle_rss_mb"] > 0
