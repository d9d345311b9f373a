"""The HTML replay report: embedded data, the page itself, and (when Chromium is installed) a real render."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import random
import re
import shutil
import struct
import subprocess
import tomllib
import zlib
from importlib import resources
from pathlib import Path
from string import Template

import pytest

import lorescan
from lorescan import ChatMessage, Lorebook, Settings
from lorescan._cli.main import main
from lorescan._replay import replay
from lorescan._report import _asset, describe_event, render_page, render_report

ENTRIES = [
    {"uid": 0, "key": ["dragon"], "content": "Dragons hoard gold.", "group": "beast", "groupOverride": True,
     "order": 200, "comment": "Dragon lore"},
    {"uid": 1, "key": ["dragon"], "content": "Dragons fly.", "group": "beast", "comment": "Dragon alt"},
    {"uid": 2, "key": ["gold"], "content": "Gold is scarce.", "probability": 0, "comment": "Gold"},
    {"uid": 3, "key": ["tea"], "content": "x" * 60, "comment": "Tea house"},
    {"uid": 4, "key": ["tea"], "content": "y" * 60, "comment": "Tea ceremony"},
    {"uid": 5, "key": ["never"], "content": "Never.", "comment": "Unused"},
    {"uid": 6, "key": ["castle"], "content": "</script><!-- the castle", "comment": "Castle </script> & <b>co</b>"},
]
CHAT = [("C", "Hello."), ("U", "A dragon with gold."), ("C", "Indeed."), ("U", "Some tea?"), ("C", "Yes."),
        ("U", "To the castle </script>!"), ("C", "Onward.")]
WANT_STATES = {"w.0": "ANN", "w.1": "GNN", "w.2": "PNN", "w.3": "NAN", "w.4": "NBN", "w.6": "NNA"}


def _messages() -> list[ChatMessage]:
    return [ChatMessage(name=n, is_user=n == "U", mes=m) for n, m in CHAT]


def _page(trace: bool = True) -> tuple[str, list]:
    book = Lorebook.from_entries("w", ENTRIES)
    lore = lorescan.compile([book], tokenizer="chars4")
    gens = list(replay(lore, _messages(), settings=Settings(max_context=120), rng=random.Random(3), trace=trace))
    return render_report(gens, [book], title="Test <report>", messages=_messages()), gens


def _data(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="lorescan-data">(.*?)</script>', page, re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_report_embeds_the_replay() -> None:
    page, gens = _page()
    assert [g.result.activated_keys() for g in gens] == [["w.0"], ["w.3"], ["w.6"]]
    data = _data(page)
    assert data["title"] == "Test <report>" and data["traced"] is True
    assert [g["activated"] for g in data["generations"]] == [["w.0"], ["w.3"], ["w.6"]]
    assert [g["message"] for g in data["generations"]] == [3, 5, 7]   # numbered from #1, as explain and replay
    assert [(g["budget"], g["overflowed"]) for g in data["generations"]] == [(30, False), (30, True), (30, False)]
    assert data["generations"][1]["used"] == 16
    assert data["generations"][2]["last_message"] == "U: To the castle </script>!"
    assert {r["key"]: r["states"] for r in data["rows"]} == WANT_STATES
    assert [r["key"] for r in data["rows"]] == ["w.0", "w.1", "w.2", "w.3", "w.4", "w.6"]
    rows = {r["key"]: r for r in data["rows"]}
    assert rows["w.6"]["comment"] == "Castle </script> & <b>co</b>" and rows["w.0"]["count"] == 1
    texts = data["texts"]
    assert texts[rows["w.2"]["cells"][0]][-1].startswith("pass 1 (initial): probability roll")
    assert texts[rows["w.2"]["cells"][0]][-1].endswith("against 0%: failed, so it is out for this generation")
    assert "lost group 'beast' to w.0" in texts[rows["w.1"]["cells"][0]][-1]
    assert "budget overflow" in texts[rows["w.4"]["cells"][1]][-1]
    assert texts[rows["w.0"]["cells"][0]] == [
        "pass 1 (initial): candidate: primary key 'dragon' matched",
        "pass 1 (initial): fits the budget (5 of 30 tokens used with it)", "pass 1 (initial): activated"]
    assert texts[rows["w.0"]["cells"][1]] == ["pass 1 (initial): not a candidate: no primary key matched"]


def test_report_page_is_self_contained_and_escaped() -> None:
    page, _ = _page()
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("</script>") == 2               # the data's own "</script>" texts are escaped
    assert "<\\/script>" in page and "<!--" not in page.split('id="lorescan-data">', 1)[1].split("</script>")[0]
    assert "<title>Test &lt;report&gt;</title>" in page
    for network in ("http://", "https://", "src=", "href=", "@import", "url("):
        assert network not in page
    assert "Dragon lore" in page and "w.4" in page
    assert 'data-rendered="0"' in page                # the script sets it to 1 when it has drawn


def test_report_without_traces_shows_activations_only() -> None:
    page, _ = _page(trace=False)
    data = _data(page)
    assert data["traced"] is False and "No traces were recorded" in page
    assert {r["key"]: r["states"] for r in data["rows"]} == {"w.0": "ANN", "w.3": "NAN", "w.6": "NNA"}


def test_describe_event_in_plain_words() -> None:
    assert describe_event({"event": "probability", "entry": "w.1", "roll": 42.123, "probability": 30,
                           "passed": False}) == "probability roll 42.12 against 30%: failed, so it is out for this generation"
    assert describe_event({"event": "budget", "entry": "w.1", "outcome": "fits", "budget": 100, "before": 10,
                           "pass_tokens": 20}) == "fits the budget (30 of 100 tokens used with it)"
    assert describe_event({"event": "pass", "state": "initial"}) is None


def test_cli_report_writes_and_refuses_to_overwrite_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = Path(__file__).resolve().parent.parent / "corpora"
    book, chat = str(root / "saltmere.json"), str(root / "saltmere-chat.jsonl")
    out = tmp_path / "report.html"
    assert main(["report", "--book", book, "--chat", chat, "-o", str(out), "--tokenizer", "chars4"]) == 0
    assert "wrote" in capsys.readouterr().out
    data = _data(out.read_text(encoding="utf-8"))
    assert len(data["generations"]) == 6 and data["traced"] is True
    assert all(g["activated"] for g in data["generations"])
    copy = tmp_path / "book.json"
    copy.write_bytes(Path(book).read_bytes())
    before = copy.read_bytes()
    assert main(["report", "--book", str(copy), "--chat", chat, "-o", str(copy)]) == 2
    err = capsys.readouterr().err
    assert "refusing to overwrite" in err and len(err.strip().splitlines()) == 1
    assert copy.read_bytes() == before


# -- the templates (package data) ----------------------------------------------------------------

TEMPLATES = ("report.html", "report.css", "report.js")
GOLDEN_DATA = {
    "title": 'Golden <page> & "quotes"', "traced": True, "states": {"A": "activated", "N": "not matched"},
    "generations": [{"n": 1, "message": 2, "budget": 30, "used": 5, "overflowed": False, "activated": ["w.0"],
                     "new": ["w.0"], "gone": [], "passes": 1, "last_message": "U: </script><!-- \u00e9"}],
    "rows": [{"key": "w.0", "book": "w", "uid": 0, "comment": "Lore </script>", "keys": ["dragon"],
              "position": "before", "constant": False, "states": "A", "count": 1, "cells": [0]}],
    "texts": [["pass 1 (initial): activated"]], "books": ["w"], "entry_count": 1}
# sha256 of render_page(GOLDEN_DATA) as rendered when the templates were still strings in the module;
# a deliberate change to report.html/.css/.js (or to render_page) changes it: update it on purpose.
GOLDEN_SHA256 = "87d6fdbea2afb179a23ffe0b51a530916e8b14439916c6a62d9fee8d9dac29ba"


def test_report_page_is_byte_identical_to_the_golden_rendering() -> None:
    page = render_page(GOLDEN_DATA)
    assert len(page) == 10685
    assert hashlib.sha256(page.encode("utf-8")).hexdigest() == GOLDEN_SHA256


def test_report_templates_are_package_data_read_once() -> None:
    root = resources.files("lorescan") / "data"
    for name in TEMPLATES:
        assert (root / name).is_file(), name
        assert _asset(name) == (root / name).read_text(encoding="utf-8") and _asset(name) is _asset(name)
    page = Template(_asset("report.html"))
    assert page.is_valid()
    assert set(page.get_identifiers()) == {"title", "summary", "legend", "note", "css", "js", "data"}
    assert _asset("report.html").startswith("<!DOCTYPE html>") and _asset("report.html").endswith("</html>\n")
    assert ".s-A{background:#2e9e5b}" in _asset("report.css")
    assert _asset("report.js").startswith("(function () {") and 'getElementById("lorescan-data")' in _asset("report.js")


def test_report_inlines_stylesheet_and_script_once() -> None:
    page = render_page(GOLDEN_DATA)
    assert page.count("<style>\n" + _asset("report.css") + "</style>") == 1
    assert page.count("<script>\n" + _asset("report.js") + "</script>") == 1
    assert "${" not in page.replace(_asset("report.js"), "")
    assert page.count("<title>Golden &lt;page&gt; &amp; &quot;quotes&quot;</title>") == 1
    assert page.count("<h1>Golden &lt;page&gt; &amp; &quot;quotes&quot;</h1>") == 1


def test_report_substitution_is_not_confused_by_data_content() -> None:
    # The page used to be filled by chained str.replace: a title holding "%CSS%" got the stylesheet.
    title = "%CSS% ${css} $js $$ %DATA% ${data}"
    data = dict(GOLDEN_DATA, title=title, traced=False,
                rows=[dict(GOLDEN_DATA["rows"][0], comment="${title} %TITLE% $note")])
    page = render_page(data)
    assert page.count(":root{") == 1 and page.count('"use strict"') == 1
    assert page.count('id="lorescan-data"') == 1 and page.count("</script>") == 2
    assert f"<title>{title}</title>" in page and f"<h1>{title}</h1>" in page
    assert _data(page)["title"] == title and _data(page)["rows"][0]["comment"] == "${title} %TITLE% $note"
    assert "No traces were recorded" in page


def test_package_data_globs_cover_every_template() -> None:
    repo = Path(__file__).resolve().parent.parent
    globs = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["lorescan"]
    files = sorted(p.relative_to(repo / "lorescan").as_posix() for p in (repo / "lorescan" / "data").rglob("*")
                   if p.is_file())
    assert {f"data/{name}" for name in TEMPLATES} <= set(files)
    for rel in files:
        assert any(fnmatch.fnmatch(rel, g) for g in globs), f"{rel} is not in a wheel: add it to package-data"


# -- a real browser ------------------------------------------------------------------------------

def _chromium() -> str | None:
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """A minimal PNG decoder (8-bit RGB/RGBA, non-interlaced): width, height, rows of pixel bytes."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype in (2, 6) and interlace == 0
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for k, v in enumerate(line) if k % 4 != 3))
        prev = line
    return width, height, rows


def _run_chromium(exe: str, tmp: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile{len(list(tmp.iterdir()))}"
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--force-color-profile=srgb",
           f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *args, url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    exe = _chromium()
    if exe is None:
        pytest.skip("chromium is not installed (Debian package `chromium`)")
    page, _ = _page()
    html_path = tmp_path / "report.html"
    html_path.write_text(page, encoding="utf-8")
    url = html_path.as_uri()
    # the DOM after the script ran, with a cell selected through the URL (#cell=<row>,<generation>)
    dom = _run_chromium(exe, tmp_path, url + "#cell=4,1", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body is not None and 'data-rendered="1"' in body.group(0)
    assert 'data-cells="18"' in body.group(0)          # 6 rows x 3 generations
    assert dom.stdout.count('class="c s-') == 18 and dom.stdout.count('class="c s-A') == 3
    panel = re.search(r'<aside id="panel">(.*?)</aside>', dom.stdout, re.S)
    assert panel is not None and "w.4 — Tea ceremony" in panel.group(1)
    assert "candidate, dropped by the token budget" in panel.group(1) and "budget overflow" in panel.group(1)
    for run in (dom,):
        assert "Uncaught" not in run.stderr and ":CONSOLE" not in run.stderr, run.stderr[-2000:]
    # a screenshot that is not blank and shows the activated colour of the heat map
    png = tmp_path / "shot.png"
    shot = _run_chromium(exe, tmp_path, url, f"--screenshot={png}", "--window-size=1200,900")
    assert shot.returncode == 0 and png.exists(), shot.stderr[-2000:]
    assert "Uncaught" not in shot.stderr and ":CONSOLE" not in shot.stderr, shot.stderr[-2000:]
    width, height, rows = _png_pixels(png)
    assert width >= 1000 and height >= 700
    colours = {row[i:i + 3] for row in rows[::3] for i in range(0, len(row), 9)}
    assert len(colours) > 10

    def near(hex_colour: str) -> bool:
        want = bytes.fromhex(hex_colour)
        return any(all(abs(a - b) <= 6 for a, b in zip(c, want)) for c in colours)

    assert near("2e9e5b")                              # activated cells
    assert near("f0a030")                              # the group loser's cell
    assert near("9b59b6") and near("d9473f")           # probability and budget drops
