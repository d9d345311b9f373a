"""``lorescan bench``: the table and JSON it prints, and its refusal outside a source checkout."""

from __future__ import annotations

import json

from lorescan import _index
from lorescan._cli import cmd_bench
from lorescan._cli.main import main


def test_bench_json_figures(capsys) -> None:
    code = main(["bench", "--entries", "100", "--messages", "30", "--rounds", "2", "--depth", "10",
                 "--replay-generations", "3", "--json"])
    figures = json.loads(capsys.readouterr().out)
    assert code == 0
    [f] = figures
    assert f["entries"] == 100 and f["agrees"] is True
    for key in ("compile", "activate_flat", "activate_recursive", "replay_generation", "baseline_recursive"):
        assert f[key]["rounds"] == 2 and f[key]["median"] > 0 and f[key]["iqr"] >= 0
    assert f["replay_generation"]["generations"] == 3
    assert f["activate_recursive"]["activated"] >= f["activate_flat"]["activated"] > 0
    assert f["ratio"] == f["baseline_recursive"]["median"] / f["activate_recursive"]["median"]
    assert 0 < f["memory"]["retained_mb"] <= f["memory"]["peak_mb"]
    assert f["c_extension"] is (_index.native is not None)


def test_bench_table(capsys) -> None:
    assert main(["bench", "--entries", "100", "--messages", "20", "--rounds", "1", "--depth", "6",
                 "--replay-generations", "2", "--baseline-rounds", "1"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["entries", "measure", "median"]
    labels = [line[5:].strip() for line in out[2:]]
    assert any(line.startswith("compile") for line in labels)
    assert any("ratio baseline / lorescan" in line for line in out)
    assert any("same result" in line for line in out)
    assert out[-1] == ("engine: Python and its C extension" if _index.native is not None else
                       "engine: Python only (the C extension is not built, or LORESCAN_NATIVE=0)")


def test_bench_needs_a_source_checkout(capsys, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(cmd_bench, "_benchmarks_dir", lambda: tmp_path / "benchmarks")
    assert main(["bench", "--entries", "100"]) == 2
    err = capsys.readouterr().err
    assert "needs a source checkout" in err and err.count("\n") == 1
