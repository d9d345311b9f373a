"""``lorescan scenario``: one JSON line per file, errors as lines, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lorescan._cli.main import main

from .conftest import CONFORMANCE


def _lines(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_prints_the_result_in_the_expected_shape(capsys) -> None:
    files = [CONFORMANCE / "st-1.12" / "hand-00-smoke.json", CONFORMANCE / "st-1.18" / "hand-new-01-outlets.json"]
    assert main(["scenario", *map(str, files)]) == 0
    lines = _lines(capsys)
    assert [line["name"] for line in lines] == ["hand-00-smoke", "hand-new-01-outlets"]
    for line, path in zip(lines, files):
        assert line["result"] == json.loads(path.read_text())["expected"]
    assert "outlets" not in lines[0]["result"] and "outlets" in lines[1]["result"]


def test_version_flag_overrides_the_file(capsys) -> None:
    path = CONFORMANCE / "st-1.18" / "gen-0014.json"
    assert main(["scenario", str(path), "--check"]) == 0
    assert _lines(capsys)[0]["pass"] is True
    assert main(["scenario", str(path), "--check", "--st-version", "1.12"]) == 1
    line = _lines(capsys)[0]
    assert line["pass"] is False and "outlets" not in line["result"]


def test_bad_files_give_error_lines(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"name": "w", "entries": [{"uid": 0, "key": "dragon"}]}))
    assert main(["scenario", str(bad), str(tmp_path / "missing.json"), str(wrong)]) == 2
    lines = _lines(capsys)
    assert lines[0]["name"] == "bad" and "invalid JSON" in lines[0]["error"] and "bad.json" in lines[0]["error"]
    assert lines[1]["name"] == "missing" and "no such file" in lines[1]["error"]
    assert lines[2]["name"] == "w" and "key" in lines[2]["error"]
    assert bad.read_text() == "{not json"


def test_module_entry_point_runs() -> None:
    path = CONFORMANCE / "st-1.12" / "hand-00-smoke.json"
    out = subprocess.run([sys.executable, "-m", "lorescan", "scenario", str(path)], capture_output=True,
                         text=True, check=True)
    assert json.loads(out.stdout)["result"]["activated"] == ["global.0", "global.2"]
