"""The side-by-side engine benchmark on a small book, this tree against itself: both processes
replay the same generations and activate the same entries (``python benchmarks/engine_ab.py``)."""

from __future__ import annotations

from pathlib import Path

import engine_ab

ROOT = Path(__file__).resolve().parent.parent


def test_engine_ab_runs_every_tree_in_both_orders() -> None:
    out = engine_ab.main([str(ROOT), str(ROOT), "--entries", "300", "--chats", "4", "--warmup", "8",
                          "--generations", "12", "--runs", "2"])
    assert out["same_activations"] is True and out["activated"] > 0
    assert len(out["runs"]) == 2 and all(len(run) == 2 for run in out["runs"])
    for run in out["runs"]:
        for side in run:
            assert side["tree"] == str(ROOT) and 0 < side["median_ms"] and len(side["digest"]) == 16
