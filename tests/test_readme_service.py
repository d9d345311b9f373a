"""The README's Service section works as pasted: its curl session against a running server prints
what the README shows (``…`` stands for text left out), and its JavaScript example runs in Node."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from .serve_helpers import ROOT, Server, serving

SECTION = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Service\n", 1)[1].split("\n## ", 1)[0]
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", SECTION, flags=re.S | re.M)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    yield from serving(tmp_path_factory, "readme")


def commands(block: str) -> list[tuple[str, list[str]]]:
    """(command, the README's comment lines after it) for each ``curl`` command of a block."""
    out: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("curl "):
            out.append((line, []))
        elif line.startswith("#") and out:
            out[-1][1].append(line[1:].strip())
        elif out and line.strip():
            out[-1] = (out[-1][0] + "\n" + line, out[-1][1])
    return out


def shown(comments: list[str]) -> list[str]:
    """The pieces of output the README shows, in order (an aside after four spaces is not output)."""
    text = "".join(c.split("    ", 1)[0] for c in comments)
    return [piece for piece in text.split("…") if piece]


def test_the_curl_session_prints_what_the_readme_shows(server: Server) -> None:
    session = next(body for lang, body in BLOCKS if lang == "sh" and "curl" in body)
    steps = commands(session)
    assert len(steps) == 6
    for command, comments in steps:
        out = subprocess.run(["bash", "-c", command.replace("http://127.0.0.1:8765", server.url)], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, (command, out.stderr)
        at = 0
        for piece in shown(comments):
            found = out.stdout.find(piece, at)
            assert found >= 0, f"{command}\nexpected {piece!r} in\n{out.stdout[:600]}"
            at = found + len(piece)
        if "format=kobold" in command:
            assert '"entries"' in out.stdout and '"keyanti"' in out.stdout


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_the_javascript_example_runs(server: Server, tmp_path: Path) -> None:
    code = next(body for lang, body in BLOCKS if lang == "js")
    assert 12 <= len(code.strip().splitlines()) <= 18
    with server.client() as c:
        assert c.put("/v1/books/saltmere", content=(ROOT / "corpora" / "saltmere.json").read_bytes()).is_success
        c.delete("/v1/sessions/chat-1")
    script = tmp_path / "example.mjs"
    script.write_text(code.replace("http://127.0.0.1:8765", server.url), encoding="utf-8")
    out = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("[ 'saltmere.0', 'saltmere.3' ] The tide-bell hangs under the harbour.")
