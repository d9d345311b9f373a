"""The batch replay's HTML report (``replay --chats ... --html FILE``): the page embeds the report,
is self-contained and escaped, and draws its charts in headless Chromium (as the single-chat
report's test does)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lorescan._cli.main import main

from .batch_helpers import ENTRIES, cli_args, write_set
from .test_report import _chromium, _png_pixels, _run_chromium


def _page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    paths = write_set(tmp_path)
    edited = [dict(e) for e in ENTRIES]
    edited[0]["key"] = ["wyvern"]
    edited[0]["comment"] = "Dragon </script><b>alt</b>"
    other = tmp_path / "lore-v2.json"
    other.write_text(json.dumps({"entries": {str(e["uid"]): e for e in edited}}), encoding="utf-8")
    out = tmp_path / "batch.html"
    assert main(cli_args(paths, "--json", "--jobs", "1", "--diff", str(other), "--html", str(out))) == 0
    report = json.loads(capsys.readouterr().out)
    return out.read_text(encoding="utf-8"), report


def test_batch_page_embeds_the_report_and_is_self_contained(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    page, report = _page(tmp_path, capsys)
    m = re.search(r'<script type="application/json" id="lorescan-data">(.*?)</script>', page, re.S)
    assert m is not None
    data = json.loads(m.group(1))
    assert data["entries"] == report["entries"] and data["diff"] == report["diff"]
    assert data["edited"] == "lore-v2.json" and data["max_bars"] == 100
    assert "<b>alt</b>" not in page and "</script><b>" not in page          # the comment stays data
    assert not re.search(r'(src|href)="(https?:)?//', page)                 # nothing fetched
    assert "5 chats · 20 generations · 8 entries, 5 never fired" in page


def test_batch_page_renders_in_headless_chromium(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (Debian package `chromium`)")
    page, report = _page(tmp_path, capsys)
    html_path = tmp_path / "page.html"
    html_path.write_text(page, encoding="utf-8")
    dom = _run_chromium(exe, tmp_path, html_path.as_uri(), "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert "Uncaught" not in dom.stderr and ":CONSOLE" not in dom.stderr, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body is not None
    attrs = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', body.group(0)))
    assert attrs == {"data-rendered": "1", "data-fire-bars": "3", "data-bins": "21", "data-consumer-bars": "3",
                     "data-diff-rows": "1"}
    assert dom.stdout.count('class="bar-fire"') == 3 and dom.stdout.count('class="bar-hist') == 21
    assert dom.stdout.count('class="diff-row"') == 1 and dom.stdout.count('class="failure"') == 1
    assert "Against lore-v2.json: 5 of 20 generations change" in dom.stdout
    assert "lore.0 — Dragon &lt;/script&gt;&lt;b&gt;alt&lt;/b&gt;" in dom.stdout
    # a screenshot that shows the charts' colours
    png = tmp_path / "shot.png"
    shot = _run_chromium(exe, tmp_path, html_path.as_uri(), f"--screenshot={png}", "--window-size=1200,1400")
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    _, _, rows = _png_pixels(png)
    colours = {row[i:i + 3] for row in rows[::2] for i in range(0, len(row), 6)}

    def near(hex_colour: str) -> bool:
        want = bytes.fromhex(hex_colour)
        return any(all(abs(a - b) <= 6 for a, b in zip(c, want)) for c in colours)

    assert near("2e9e5b") and near("4a7fd4") and near("d9473f") and near("8a6d3b")
