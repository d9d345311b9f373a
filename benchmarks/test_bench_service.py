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


def test_sessions_may_carry_user_names_of_their_own() -> None:
    """``--user-names N``: session s posts as user ``"<name> s % N"`` (users with personas of their
    own); by default every session posts the generator's one name."""
    import json

    user = load_service.generate.USER_NAME
    entries = load_service.generate.make_entries(20, seed=1)
    chats = load_service.Chats(entries, 4, 12, 10, 0, user_names=3)
    bodies = [json.loads(chats.body("t", s, 1)) for s in range(4)]
    assert [b["user_name"] for b in bodies] == [f"{user} 0", f"{user} 1", f"{user} 2", f"{user} 0"]
    assert [b["session"] for b in bodies] == ["t-0", "t-1", "t-2", "t-3"] and len(bodies[0]["chat"]) == 11
    one = load_service.Chats(entries, 2, 12, 10, 0)
    assert [json.loads(one.body("t", s, 1))["user_name"] for s in range(2)] == [user, user]
