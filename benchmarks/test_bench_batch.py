"""Quick mode of ``batch_bench.py``: a tiny corpus through 1 process, 2 processes and a 2-worker Dask
``LocalCluster``; the aggregates must be identical (no timings are asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import benchdata  # noqa: F401  (puts benchmarks/ on sys.path)
import pytest

pytest.importorskip("distributed")

import batch_bench  # noqa: E402
import batch_corpus  # noqa: E402


def test_batch_bench_quick_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "figures.json"
    assert batch_bench.main(["--quick", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert set(result["sizes"]) == {"8", "16"}
    for size in result["sizes"].values():
        assert size["identical_aggregates"]
        assert set(size["modes"]) == set(batch_bench.MODES)
        assert all(r["generations"] == size["generations"] > 0 for m in size["modes"].values() for r in m["runs"])
        assert all(len(m["runs"][0]["peak_rss_mb"]) >= 1 for m in size["modes"].values())
    assert "| 16 | " in capsys.readouterr().out


def test_corpus_is_reproducible(tmp_path: Path) -> None:
    a = batch_corpus.write_corpus(tmp_path / "a", chats=3, messages=6, entries=50)
    b = batch_corpus.write_corpus(tmp_path / "b", chats=3, messages=6, entries=50)
    assert a == b
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert [str(f) for f in files] == ["book.json", "chats/0000/chat-000000.jsonl", "chats/0000/chat-000001.jsonl",
                                       "chats/0000/chat-000002.jsonl", "corpus.json", "settings.json"]
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    lines = (tmp_path / "a" / "chats/0000/chat-000001.jsonl").read_text().splitlines()
    assert len(lines) == 7 and json.loads(lines[0])["character_name"]
