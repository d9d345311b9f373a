"""The proxy latency benchmark in quick mode: it runs, every request is answered, and the proxy's
activations are the service's (``python benchmarks/proxy_latency.py`` runs the full benchmark)."""

from __future__ import annotations

import sys

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("prometheus_client")

import proxy_latency  # noqa: E402


def test_proxy_latency_quick_mode() -> None:
    figures = proxy_latency.main(["--quick"])
    assert (figures["entries"], figures["generations"], figures["recursion"]) == (1000, 40, "on")
    assert figures["first_activation"] and figures["mean_activated"] > 0
    for side in ("direct", "proxy", "passthrough", "direct_ttfc", "proxy_ttfc"):
        assert 0 < figures[side]["p50_ms"] <= figures[side]["p99_ms"]
    assert set(figures["added_proxy"]) == {"p50_ms", "p99_ms"}
    if sys.platform.startswith("linux"):
        assert set(figures["server_cpu"]) == {"proxy_cpu_ms", "passthrough_cpu_ms", "activate_cpu_ms"}
